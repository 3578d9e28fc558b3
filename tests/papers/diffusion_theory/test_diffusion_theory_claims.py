import numpy as np
import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE
from iclr24.kits.rates import fit_rate
from iclr24.papers.diffusion_theory import GaussianMixture, density_tv_sweep, ode_tv_sweep
from iclr24.papers.diffusion_theory.claims import ddpm_rate, ode_rate, score_error_floor

VERDICTS = {HOLDS, FAILS, INCONCLUSIVE}
GM = GaussianMixture([0.3, 0.7], [-2.0, 1.5], [0.25 ** 2, 0.5 ** 2])


@pytest.mark.parametrize("c, keys", [
    (ode_rate, {"slope", "raw_slope"}),
    (ddpm_rate, {"slope_ddpm", "bound_ratio", "slope_ode"}),
    (score_error_floor, {"eps_slope_ode", "eps_slope_ddpm"}),
])
def test_smoke_claims_run_and_give_a_verdict(c, keys):
    m = c("smoke", 0)
    assert keys <= set(m.metrics)
    assert c.verdict(m.metrics, "smoke") in VERDICTS


def _biased(x, ab):
    # a score with a constant error: the TV stalls at a floor instead of decaying
    return GM.score(x, ab) + 0.3


def test_negative_control_ode_rate_with_a_wrong_score():
    Ts = np.array([100, 200])
    tv = ode_tv_sweep(GM, Ts, n_grid=5000, score_fn=_biased)
    slope = fit_rate(Ts, tv / np.log(Ts) ** 2).slope
    assert ode_rate.verdict({"slope": slope, "raw_slope": 0.0, "tv_at_max_T": tv[-1],
                             "window_low": 100, "window_high": 200}, "smoke") != HOLDS


def test_negative_control_ddpm_rate_with_a_wrong_score():
    Ts = [25, 50, 100, 200]
    grid = np.linspace(-12, 12, 1024)
    tv = density_tv_sweep(GM, Ts, grid, score_fn=_biased)
    slope = fit_rate(Ts, tv, window=(100, 200)).slope
    bound = tv * np.sqrt(Ts) / (tv[0] * np.sqrt(Ts[0]))
    assert ddpm_rate.verdict({"slope_ddpm": slope, "bound_ratio": bound.max()},
                             "smoke") != HOLDS


def test_negative_control_score_error_read_against_q1_only():
    # the naive measurement TV(q_1, p^eps) at moderate T is dominated by discretisation:
    # it does not show the linear eps-term and must not pass the rule
    from iclr24.papers.diffusion_theory import perturbed_score

    grid = np.linspace(-12, 12, 1024)
    eps = [1e-3, 1e-2, 1e-1]
    slopes = {}
    for name, noise in (("ode", None), ("ddpm", "inside")):
        tv = [density_tv_sweep(GM, [200], grid, noise=noise, score_fn=perturbed_score(GM, e))[0]
              for e in eps]
        slopes[f"eps_slope_{name}"] = fit_rate(eps, tv).slope
    assert score_error_floor.verdict(slopes, "smoke") != HOLDS
