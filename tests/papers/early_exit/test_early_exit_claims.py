"""Smoke runs of the JEI-DNN claims and negative controls of their rules."""


import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.early_exit.claims import (
    _config,
    accuracy_cost_tradeoff,
    calibration_bias,
    conformal_coverage,
)
from iclr24.papers.early_exit.digits_experiment import (
    calibration_summary,
    conformal_summary,
    run_digits_experiment,
    tradeoff_gain,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.mark.parametrize("claim_obj,keys", [
    (accuracy_cost_tradeoff, {"acc_gain", "jei_acc", "baseline_acc_at_cost", "jei_cost"}),
    (calibration_bias, {"baseline_bias_early", "ece_ratio", "ece_jei", "ece_baseline",
                        "ece_random_route", "random_route_ece_ratio"}),
    (conformal_coverage, {"coverage_gap_5", "coverage_gap_1", "set_size_5",
                          "set_size_5_baseline", "set_size_reduction_5",
                          "random_route_set_size_reduction_5", "coverage_gap_5_baseline",
                          "set_size_5_random_route"}),
], ids=lambda c: getattr(c, "name", ""))
def test_smoke_claim_runs(claim_obj, keys, check_smoke_claim):
    check_smoke_claim(claim_obj, keys)


def _smoke_result():
    return run_digits_experiment(_config(Scale.SMOKE), 0)


def _baseline_as_jei(result):
    """The threshold baseline passed as the method: its own cost-matched rows as "JEI-DNN"
    (each keeps a null-arm row so the summaries run)."""
    null = result["jei"][0]["random_route"]
    rows = [{**r, "random_route": null} for r in result["baseline"]
            if 0 < r["threshold"] < float("inf")][:3]
    return {**result, "jei": rows}


def _est(values):
    return Estimate.mean_of(values)


def test_negative_control_baseline_as_the_method_tradeoff():
    fake = _baseline_as_jei(_smoke_result())
    gain = tradeoff_gain(fake)
    assert gain == pytest.approx(0.0, abs=1e-9)   # on its own curve: no gain
    m = {"acc_gain": Estimate.mean_of([gain, gain, gain])}
    assert accuracy_cost_tradeoff.verdict(m, "small") != "holds"
    m = {"acc_gain": Estimate.mean_of([0.4, -0.6, 0.1])}   # noise around zero
    assert accuracy_cost_tradeoff.verdict(m, "small") != "holds"


def test_calibration_smoke_premise_control_and_baseline_as_method():
    m = calibration_bias(Scale.SMOKE, 0).metrics
    # this test bed's threshold exits are under-confident: the premise control is false,
    # whatever the ECE ratio says
    assert m["baseline_bias_early"] < 0
    j = calibration_bias.judge(m, Scale.SMOKE)
    assert j.verdict == "inconclusive" and "cannot tell" in j.reason
    # the baseline passed as the method: ratio exactly 1, not holds even with the premise met
    s = calibration_summary(_baseline_as_jei(_smoke_result()))
    assert s["ece_ratio"] == pytest.approx(1.0)
    assert calibration_bias.verdict({**m, "ece_ratio": s["ece_ratio"],
                                     "baseline_bias_early": 0.05}, Scale.SMOKE) == "fails"
    # the random-route null arm's ECE is measured on the same test samples
    assert 0 <= m["ece_random_route"] <= 1
    assert m["random_route_ece_ratio"] == pytest.approx(m["ece_random_route"] / m["ece_baseline"])


def test_calibration_rule_and_control():
    premise = {"baseline_bias_early": _est([0.02, 0.03, 0.025])}
    assert calibration_bias.verdict({**premise, "ece_ratio": _est([0.6, 0.7, 0.65])},
                                    "small") == "holds"
    assert calibration_bias.verdict({**premise, "ece_ratio": _est([1.1, 1.2, 1.15])},
                                    "small") == "fails"
    # no over-confidence bias in the baseline: the test bed cannot show the mechanism
    under = {"baseline_bias_early": _est([-0.02, -0.025, -0.03])}
    assert calibration_bias.verdict({**under, "ece_ratio": _est([0.6, 0.7, 0.65])},
                                    "small") == "inconclusive"


def test_conformal_smoke_random_route_null_in_the_methods_place():
    m = conformal_coverage(Scale.SMOKE, 0).metrics
    assert m["set_size_reduction_5"] == pytest.approx(m["set_size_5_baseline"] - m["set_size_5"])
    assert m["random_route_set_size_reduction_5"] == pytest.approx(
        m["set_size_5_baseline"] - m["set_size_5_random_route"])
    null = {**m, "set_size_reduction_5": m["random_route_set_size_reduction_5"],
            "coverage_gap_5": m["coverage_gap_5_random_route"],
            "coverage_gap_1": m["coverage_gap_1_random_route"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert conformal_coverage.verdict(null, scale) != "holds"


def test_conformal_rule_and_control():
    ok = {"coverage_gap_5": _est([0.0, -0.002, 0.001]),
          "coverage_gap_1": _est([0.0, -0.002, 0.001]),
          "coverage_gap_5_baseline": _est([0.0, 0.002, 0.001]),
          "random_route_set_size_reduction_5": _est([-1.0, -0.8, -1.2])}
    assert conformal_coverage.verdict({**ok, "set_size_reduction_5": _est([0.5, 0.7, 0.6])},
                                      "small") == "holds"
    # larger sets than the baseline at the same coverage: fails
    assert conformal_coverage.verdict({**ok, "set_size_reduction_5": _est([-0.5, -0.7, -0.6])},
                                      "small") == "fails"
    # the baseline itself as the method: reduction exactly 0
    zero = Estimate(0.0, 0.0, 0.0, 3, 0.95, "paired-t")
    assert conformal_coverage.verdict({**ok, "set_size_reduction_5": zero}, "small") == "fails"
    good = {**ok, "set_size_reduction_5": _est([0.5, 0.7, 0.6])}
    # input-ignoring routing already beats the baseline: a straw baseline, cannot tell
    straw = {**good, "random_route_set_size_reduction_5": _est([0.5, 0.6, 0.7])}
    assert conformal_coverage.verdict(straw, "small") == "inconclusive"
    # the baseline misses the target coverage: set sizes are not comparable
    under = {**good, "coverage_gap_5_baseline": _est([-0.05, -0.06, -0.055])}
    assert conformal_coverage.verdict(under, "small") == "inconclusive"


def test_negative_control_top1_sets_and_full_sets_fail_coverage():
    res = _smoke_result()
    acc = sum(r["acc"] for r in res["jei"]) / len(res["jei"])
    ctl = {"coverage_gap_5_baseline": 0.0, "random_route_set_size_reduction_5": -1.0}
    # top-1 sets (size 1, smaller than anything) cover exactly the accuracy (about 80% here)
    m = {**ctl, "coverage_gap_5": acc - 0.95, "coverage_gap_1": acc - 0.99,
         "set_size_reduction_5": 3.0}
    assert acc < 0.93 and conformal_coverage.verdict(m, "smoke") == "fails"
    # all-class sets cover everything: 5 points over the alpha = 0.05 target, and are larger
    m = {**ctl, "coverage_gap_5": _est([0.05] * 3), "coverage_gap_1": _est([0.01] * 3),
         "set_size_reduction_5": _est([-4.0, -5.0, -4.5])}
    assert conformal_coverage.verdict(m, "small") == "fails"
    s = conformal_summary(res, (0.05, 0.01))
    assert 0 <= s["set_size_5"] <= 10 and -0.95 <= s["coverage_gap_5"] <= 0.05
