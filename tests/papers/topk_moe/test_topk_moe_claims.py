import numpy as np
import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Estimate
from iclr24.kits.rates import fit_rate
from iclr24.papers.topk_moe import exact_truth, near_truth_init, over_truth, voronoi_loss_exact
from iclr24.papers.topk_moe.claims import exact_spec_rate, over_spec_slowdown

VERDICTS = {HOLDS, FAILS, INCONCLUSIVE}


@pytest.mark.parametrize("c, keys", [
    (exact_spec_rate, {"slope_d1", "slope_hellinger"}),
    (over_spec_slowdown, {"slope_ratio", "slope_db_over", "slope_db_exact",
                          "sparse_slope_hellinger", "sparse_weight_half_small"}),
])
def test_smoke_claims_run_and_give_a_verdict(c, keys):
    m = c("smoke", 0)
    assert keys <= set(m.metrics)
    assert c.verdict(m.metrics, "smoke") in VERDICTS


def _slope(fit):
    return Estimate(fit.slope, fit.low, fit.high, fit.n_reps, 0.95, "bootstrap")


def test_negative_control_exact_rate_without_em():
    # the null method: report the near-truth initialisation itself (no EM); its error decays
    # like the perturbation scale n^{-0.083}, not at the parametric rate
    ns = [1000, 4000, 16000]
    true = exact_truth()
    d1 = [[voronoi_loss_exact(near_truth_init(true, n, np.random.default_rng(s)), true)
           for s in range(8)] for n in ns]
    slope = _slope(fit_rate(ns, d1))
    assert exact_spec_rate.verdict({"slope_d1": slope, "slope_hellinger": slope},
                                   "small") != HOLDS


def test_negative_control_over_spec_with_the_exact_fit_passed_as_method():
    # baseline as method: the 'over-specified' |db| is the exact fit's, so the ratio is 1
    rng = np.random.default_rng(0)
    ns = np.array([1000, 2000, 5000])
    db = np.abs(rng.standard_normal((3, 6))) * ns[:, None] ** -0.5
    logn = np.log(ns)

    def ratio(idx):
        med = np.median(db[:, np.asarray(idx, int)], axis=1)
        s = np.polyfit(logn, np.log(med), 1)[0]
        return float(s / s)

    est = Estimate.bootstrap(np.arange(6, dtype=float), ratio, seed=0)
    assert over_spec_slowdown.verdict({"slope_ratio": est, "slope_db_exact": -0.5},
                                      "small") != HOLDS
    assert over_truth().n_experts == 2


def test_negative_control_over_spec_with_a_non_decaying_exact_fit():
    # a broken exact fit whose |db| grows with n flips the ratio's sign: must not hold
    metrics = {"slope_ratio": Estimate(-2.0, -3.0, -1.0, 6, 0.95, "bootstrap"),
               "slope_db_exact": Estimate(0.1, 0.05, 0.2, 6, 0.95, "bootstrap")}
    assert over_spec_slowdown.verdict(metrics, "small") != HOLDS
