"""Smoke runs of the FAN claims, each with its null arm substituted for the method (the verdict
must not be `holds`), and the rules/controls fed hand-made numbers."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.fair_abstain.claims import (
    abstention_vs_confidence_baseline,
    feasibility_frontier,
    ip_correctness,
)


def _est(xs):
    return Estimate.mean_of(xs)


def test_ip_correctness_smoke_and_base_classifier_null(check_smoke_claim):
    m = check_smoke_claim(ip_correctness, {"dp_violation", "harm_violation",
                                           "abstention_violation", "solver_gap",
                                           "null_dp_violation"}).metrics
    assert m["null_dp_violation"] > 0  # eps = 0.02 binds: the base is not already fair
    # the null arm (w = 1, h = yhat) passed off as the program's solution
    null = {**m, "dp_violation": m["null_dp_violation"]}
    assert ip_correctness.verdict(null, Scale.SMOKE) == "fails"
    # a test bed where the base already meets eps cannot tell
    assert ip_correctness.verdict({**m, "null_dp_violation": 0.0}, Scale.SMALL) == "inconclusive"


def test_abstention_smoke_and_random_abstention_null(check_smoke_claim):
    m = check_smoke_claim(abstention_vs_confidence_baseline,
                          {"disparity_ratio", "min_acc_gain", "null_disparity_ratio",
                           "null_min_acc_gain", "mean_abstain_auc_train"}).metrics
    # the input-ignoring random abstainer (same rates, base labels) passed off as FAN
    null = {**m, "disparity_ratio": m["null_disparity_ratio"],
            "min_acc_gain": m["null_min_acc_gain"]}
    assert abstention_vs_confidence_baseline.verdict(null, Scale.SMOKE) != "holds"
    # the surrogate learns the program's abstentions (the old early stopping left AUC ~0.5)
    assert m["mean_abstain_auc_train"] > 0.7


def test_abstention_rule_and_control():
    good_null = {"null_disparity_ratio": _est([0.9, 0.95, 1.0]),
                 "null_min_acc_gain": _est([0.0, 0.005, 0.0])}
    win = {**good_null, "disparity_ratio": _est([0.3, 0.35, 0.4]),
           "min_acc_gain": _est([0.0, 0.01, 0.005])}
    assert abstention_vs_confidence_baseline.verdict(win, Scale.SMALL) == "holds"
    # the confidence baseline passed as FAN: ratio exactly 1 on every seed
    assert abstention_vs_confidence_baseline.verdict(
        {**win, "disparity_ratio": _est([1.0, 1.0, 1.0])}, Scale.SMALL) == "fails"
    # harm: accuracy drops 3 points
    assert abstention_vs_confidence_baseline.verdict(
        {**win, "min_acc_gain": _est([-0.03, -0.035, -0.04])}, Scale.SMALL) == "fails"
    # a random abstainer that passes the rule: the test bed cannot tell
    passing_null = {"null_disparity_ratio": _est([0.3, 0.35, 0.4]),
                    "null_min_acc_gain": _est([0.0, 0.01, 0.005])}
    assert abstention_vs_confidence_baseline.verdict({**win, **passing_null},
                                                     Scale.SMALL) == "inconclusive"
    assert abstention_vs_confidence_baseline.verdict(
        {**win, "disparity_ratio": _est([0.3, 0.9, 0.5])}, Scale.SMALL) == "inconclusive"


def test_feasibility_smoke_and_no_harm_off_null(check_smoke_claim):
    m = check_smoke_claim(feasibility_frontier, {"mismatches", "null_mismatches",
                                                 "points_checked"}).metrics
    assert m["null_mismatches"] > 0  # the no-harm term binds somewhere in the test bed
    # the null characterisation (no-harm term off) passed off as the closed form
    null = {**m, "mismatches": m["null_mismatches"]}
    assert feasibility_frontier.verdict(null, Scale.SMOKE) == "fails"


def test_feasibility_rule_and_control():
    ok = {"mismatches": 0.0, "null_mismatches": 5.0, "points_checked": 60.0}
    assert feasibility_frontier.verdict(ok, Scale.SMALL) == "holds"
    assert feasibility_frontier.verdict({**ok, "mismatches": 1.0}, Scale.SMALL) == "fails"
    # a test bed where no harm never binds, or too few points in range: cannot tell
    assert feasibility_frontier.verdict({**ok, "null_mismatches": 0.0},
                                        Scale.SMALL) == "inconclusive"
    assert feasibility_frontier.verdict({**ok, "points_checked": 5.0},
                                        Scale.SMALL) == "inconclusive"


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_non_finite_never_decides(value):
    m = {"mismatches": value, "null_mismatches": 5.0, "points_checked": 60.0}
    assert feasibility_frontier.verdict(m, Scale.SMALL) == "inconclusive"
