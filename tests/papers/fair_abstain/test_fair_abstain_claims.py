"""Smoke runs of the FAN claims and negative controls of their rules."""


import numpy as np
import pytest

from iclr24.claims import Estimate
from iclr24.papers.fair_abstain import disparity_full_group, make_fairness_data
from iclr24.papers.fair_abstain.claims import (
    abstention_vs_confidence_baseline,
    feasibility_frontier,
    ip_correctness,
)


@pytest.mark.parametrize("claim_obj,keys", [
    (ip_correctness, {"dp_violation", "harm_violation", "abstention_violation", "solver_gap"}),
    (abstention_vs_confidence_baseline, {"disparity_ratio", "min_acc_gain"}),
    (feasibility_frontier, {"violations_eps", "violations_eta", "delta_at_base_disparity",
                            "delta_at_eps0"}),
], ids=lambda c: getattr(c, "name", ""))
def test_smoke_claim_runs(claim_obj, keys, check_smoke_claim):
    check_smoke_claim(claim_obj, keys)


def test_negative_control_base_classifier_as_the_ip_solution():
    # "abstain on nothing, keep the base labels" passed as the method's solution
    X, y, z = make_fairness_data(1000, 0)
    yhat = (X @ np.ones(6) > 0).astype(int)
    dp = disparity_full_group(y, yhat, z, "dp")
    m = {"dp_violation": max(0.0, dp - 0.02), "harm_violation": 0.0,
         "abstention_violation": 0.0, "solver_gap": 0.0}
    assert dp > 0.02
    assert ip_correctness.verdict(m, "small") == "fails"


def test_negative_control_baseline_as_fan():
    # the confidence baseline passed as FAN: ratio exactly 1 on every seed
    m = {"disparity_ratio": Estimate.mean_of([1.0, 1.0, 1.0]),
         "min_acc_gain": Estimate.mean_of([0.0, 0.01, 0.0])}
    assert abstention_vs_confidence_baseline.verdict(m, "small") == "fails"
    m = {"disparity_ratio": Estimate.mean_of([0.3, 0.9, 0.5]),
         "min_acc_gain": Estimate.mean_of([0.0, 0.01, 0.0])}
    assert abstention_vs_confidence_baseline.verdict(m, "small") != "holds"


def test_negative_control_frontier_of_a_wrong_program():
    # a "frontier" that ignores eps (constant positive delta) violates the zero at base
    m = {"violations_eps": 0.0, "violations_eta": 0.0, "delta_at_base_disparity": 0.3,
         "delta_at_eps0": 0.3}
    assert feasibility_frontier.verdict(m, "small") == "fails"
    m = {"violations_eps": 3.0, "violations_eta": 0.0, "delta_at_base_disparity": 0.0,
         "delta_at_eps0": 0.5}
    assert feasibility_frontier.verdict(m, "small") == "fails"
