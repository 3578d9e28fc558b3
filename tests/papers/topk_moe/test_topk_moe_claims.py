"""Smoke runs of the two topk_moe claims with their null arms (measured in the same run) put in
the method's place, and the rules and controls fed hand-made numbers."""

import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Estimate, Scale
from iclr24.papers.topk_moe.claims import exact_spec_rate, over_spec_slowdown


def _e(value, low, high):
    return Estimate(value, low, high, 6, 0.95, "bootstrap")


def test_exact_spec_rate_smoke_and_no_em_null(check_smoke_claim):
    m = check_smoke_claim(exact_spec_rate, [
        "slope_d1", "slope_hellinger", "null_slope_d1", "null_slope_hellinger",
        "slope_d1_width", "beats_truth_rate", "median_restart_gain"])
    rows = m.tables["replications"]
    assert {"null_d1", "null_hellinger", "beats_truth", "restart_gain"} <= set(rows[0])
    assert 0.0 <= m.metrics["beats_truth_rate"] <= 1.0
    assert all(r["restart_gain"] >= 0.0 for r in rows)
    # the null arm (the near-truth start without EM, this run) in the method's place
    null = {**m.metrics, "slope_d1": m.metrics["null_slope_d1"],
            "slope_hellinger": m.metrics["null_slope_hellinger"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert exact_spec_rate.verdict(null, scale) != HOLDS


def test_exact_spec_rate_rule_and_control():
    good = {"slope_d1": _e(-0.5, -0.6, -0.45), "slope_hellinger": _e(-0.5, -0.55, -0.45),
            "null_slope_d1": _e(-0.08, -0.1, -0.06), "null_slope_hellinger": _e(-0.08, -0.1, -0.06),
            "slope_d1_width": 0.15}
    assert exact_spec_rate.verdict(good, Scale.SMALL) == HOLDS
    flat = {**good, "slope_d1": _e(-0.05, -0.15, 0.05)}
    assert exact_spec_rate.verdict(flat, Scale.SMALL) == FAILS
    # a null that reaches the band, or a D_1 interval too wide to tell -1/2 from 0: cannot tell
    assert exact_spec_rate.verdict({**good, "null_slope_d1": _e(-0.5, -0.6, -0.45)},
                                   Scale.SMALL) == INCONCLUSIVE
    assert exact_spec_rate.verdict({**good, "slope_d1_width": 0.8},
                                   Scale.SMALL) == INCONCLUSIVE


def test_over_spec_slowdown_smoke_and_no_em_null(check_smoke_claim):
    m = check_smoke_claim(over_spec_slowdown, [
        "slope_ratio", "null_slope_ratio", "null_slope_db_over", "null_slope_hellinger_over",
        "slope_db_over", "slope_db_exact", "slope_hellinger_over", "sparse_slope_hellinger",
        "sparse_weight_half_small"])
    # the over-specified arm never fitted (its near-truth start, this run) in the method's place
    null = {**m.metrics, "slope_ratio": m.metrics["null_slope_ratio"],
            "slope_db_over": m.metrics["null_slope_db_over"],
            "slope_hellinger_over": m.metrics["null_slope_hellinger_over"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert over_spec_slowdown.verdict(null, scale) != HOLDS


def test_over_spec_slowdown_rule_and_control():
    good = {"slope_ratio": _e(0.25, 0.1, 0.4), "slope_db_exact": _e(-0.5, -0.6, -0.4),
            "slope_hellinger_over": _e(-0.5, -0.6, -0.4),
            "null_slope_hellinger_over": _e(-0.08, -0.1, -0.06)}
    assert over_spec_slowdown.verdict(good, Scale.SMALL) == HOLDS
    # no slow-down (ratio 1) fails; a non-decaying exact fit (sign flip) must not hold
    assert over_spec_slowdown.verdict({**good, "slope_ratio": _e(1.0, 0.9, 1.1)},
                                      Scale.SMALL) == FAILS
    flipped = {**good, "slope_ratio": _e(-2.0, -3.0, -1.0),
               "slope_db_exact": _e(0.1, 0.05, 0.2)}
    assert over_spec_slowdown.verdict(flipped, Scale.SMALL) != HOLDS
    # the sceptic's null: the over-specified fit does not learn (ratio ~0.17 passes the rule,
    # its density does not converge): the control makes it inconclusive
    not_learning = {**good, "slope_ratio": _e(0.17, 0.1, 0.25),
                    "slope_hellinger_over": _e(-0.08, -0.1, -0.06)}
    assert over_spec_slowdown.verdict(not_learning, Scale.SMALL) == INCONCLUSIVE


@pytest.mark.parametrize("bad", [0, -1, True, 1.5])
def test_exact_replication_rejects_bad_n_starts(bad):
    import numpy as np

    from iclr24.papers.topk_moe.simulation import exact_replication

    with pytest.raises(ValueError, match="n_starts"):
        exact_replication(np.random.default_rng(0), 100, n_mc=10, max_iter=1, n_starts=bad)
