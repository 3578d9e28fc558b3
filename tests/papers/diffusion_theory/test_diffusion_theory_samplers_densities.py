"""Single Gaussian target: both samplers keep Gaussians, so their outputs follow closed-form
mean/variance recursions; the grid densities and TVs are checked against them."""

import numpy as np
import pytest
from scipy.stats import norm

from iclr24.papers.diffusion_theory import (
    GaussianMixture,
    alpha_bars,
    gaussian_kl,
    li_schedule,
    propagate_density_1d,
    pushforward_density_1d,
    sample_ddpm,
    sample_ode,
    tv_1d,
)

MU, S2 = 1.3, 0.4


def _recursion(betas, kind):
    """(a, b, noise variance) per step for the Gaussian target N(MU, S2), then (mean, var) of
    Y_1 from Y_T ~ N(0, 1)."""
    abar = alpha_bars(betas)
    m, V = 0.0, 1.0
    A, B = 1.0, 0.0  # Y_1 = A Y_T + B for the ODE
    for t in range(betas.size, 1, -1):
        beta, ab = betas[t - 1], abar[t - 1]
        v = ab * S2 + 1 - ab
        c = 0.5 if kind == "ode" else 1.0
        a = (1 - c * beta / v) / np.sqrt(1 - beta)
        b = c * beta * np.sqrt(ab) * MU / (v * np.sqrt(1 - beta))
        noise = {"ode": 0.0, "inside": beta / (1 - beta), "outside": beta}[kind]
        m, V = a * m + b, a * a * V + noise
        A, B = a * A, a * B + b
    return m, V, A, B


@pytest.fixture
def gauss():
    return GaussianMixture([1.0], [MU], [S2])


def test_ode_sampler_is_the_closed_form_affine_map(gauss):
    betas = li_schedule(50)
    _, _, A, B = _recursion(betas, "ode")
    yT = np.linspace(-3, 3, 7)[:, None]
    y1 = sample_ode(gauss.score, betas, 7, 1, np.random.default_rng(0), y_T=yT)
    np.testing.assert_allclose(y1, A * yT + B, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("noise", ["inside", "outside"])
def test_ddpm_sampler_moments_match_recursion(gauss, noise):
    betas = li_schedule(25)
    m, V, _, _ = _recursion(betas, noise)
    n = 200_000
    y = sample_ddpm(gauss.score, betas, n, 1, np.random.default_rng(1), noise=noise)[:, 0]
    assert y.mean() == pytest.approx(m, abs=5 * np.sqrt(V / n))
    assert y.var() == pytest.approx(V, rel=5 * np.sqrt(2 / n))


def test_noise_placements_differ_at_coarse_T():
    betas = li_schedule(25)
    assert _recursion(betas, "inside")[1] != pytest.approx(_recursion(betas, "outside")[1],
                                                           rel=1e-4)


def test_pushforward_density_is_the_closed_form_gaussian(gauss):
    betas = li_schedule(100)
    m, V, _, _ = _recursion(betas, "ode")
    y, p = pushforward_density_1d(gauss.score, betas, n_grid=20_000)
    np.testing.assert_allclose(p, norm.pdf(y, m, np.sqrt(V)), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("noise", ["inside", "outside", None])
def test_propagated_density_matches_closed_form(gauss, noise):
    betas = li_schedule(100)
    m, V, _, _ = _recursion(betas, "ode" if noise is None else noise)
    grid = np.linspace(-10, 10, 2048)
    p = propagate_density_1d(gauss.score, betas, grid, noise=noise)
    assert tv_1d(p, norm.pdf(grid, m, np.sqrt(V)), grid) < 1e-5


def test_grid_propagation_cross_checks_pushforward_on_a_mixture():
    gm = GaussianMixture([0.3, 0.7], [-2.0, 1.5], [0.0625, 0.25])
    betas = li_schedule(100)
    y, p = pushforward_density_1d(gm.score, betas, n_grid=50_000)
    grid = np.linspace(-12, 12, 4096)
    pe = propagate_density_1d(gm.score, betas, grid, noise=None)
    q1 = gm.noised(alpha_bars(betas)[0])
    assert tv_1d(p, q1.pdf(y), y) == pytest.approx(tv_1d(pe, q1.pdf(grid), grid), rel=1e-3)
    assert tv_1d(p, q1.pdf(y), y) > 0.1  # a real discretisation error, not a floor


def test_non_monotone_ode_map_is_reported_not_sorted():
    betas = li_schedule(25)
    with pytest.raises(ValueError, match="not increasing"):
        pushforward_density_1d(lambda x, ab: 100 * np.sin(20 * x), betas, n_grid=1000)


def test_mass_leaving_the_grid_is_reported(gauss):
    with pytest.raises(ValueError, match="mass left the grid"):
        propagate_density_1d(gauss.score, li_schedule(25), np.linspace(-1, 1, 200))


def test_tv_and_kl_known_answers():
    x = np.linspace(-12, 12, 40001)
    assert tv_1d(norm.pdf(x), norm.pdf(x, 1.0), x) == pytest.approx(2 * norm.cdf(0.5) - 1,
                                                                      abs=1e-8)
    assert gaussian_kl(0.0, 1.0, 1.0, 2.0) == pytest.approx(
        0.5 * (1 / 2 + 1 / 2 - 1 + np.log(2)))
    c = np.array([[2.0, 0.3], [0.3, 1.0]])
    assert gaussian_kl([1, 2], c, [1, 2], c) == pytest.approx(0.0, abs=1e-12)


def test_sampler_and_density_errors(gauss):
    betas = li_schedule(25)
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="noise"):
        sample_ddpm(gauss.score, betas, 3, 1, rng, noise="middle")
    with pytest.raises(ValueError, match="betas must be < 1"):
        sample_ode(gauss.score, np.array([0.5, 1.2]), 3, 1, rng)
    with pytest.raises(ValueError, match="alpha_bar_T"):
        sample_ode(gauss.score, np.full(5, 0.1), 3, 1, rng)
    with pytest.raises(TypeError, match="rng"):
        sample_ode(gauss.score, betas, 3, 1, 0)
    with pytest.raises(ValueError, match="shape"):
        sample_ode(lambda x, ab: x[:, :1] * 0, betas, 3, 2, rng)
    with pytest.raises(ValueError, match="uniform"):
        propagate_density_1d(gauss.score, betas, np.geomspace(1, 10, 50))
    with pytest.raises(ValueError, match="equal length"):
        tv_1d(np.ones(3), np.ones(4), np.arange(3.0))
    with pytest.raises(ValueError, match="cov2"):
        gaussian_kl(0.0, 1.0, 0.0, -1.0)


def _nan_score(x, ab):
    s = GaussianMixture([1.0], [0.0], [1.0]).score(x, ab)
    s[0] = np.nan
    return s


@pytest.mark.parametrize("run", [
    lambda: sample_ode(_nan_score, li_schedule(50), 4, 1, np.random.default_rng(0)),
    lambda: sample_ddpm(_nan_score, li_schedule(50), 4, 1, np.random.default_rng(0)),
    lambda: pushforward_density_1d(_nan_score, li_schedule(50), 100),
    lambda: propagate_density_1d(_nan_score, li_schedule(50), np.linspace(-8, 8, 256)),
    lambda: propagate_density_1d(lambda x, ab: np.full(x.shape, np.inf), li_schedule(50),
                                 np.linspace(-8, 8, 256), noise=None),
])
def test_non_finite_score_is_refused_not_propagated(run):
    with pytest.raises(ValueError, match="score_fn returned a non-finite score"):
        run()
