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
    (calibration_bias, {"baseline_bias_early", "ece_ratio", "ece_jei", "ece_baseline"}),
    (conformal_coverage, {"coverage_gap_5", "coverage_gap_1", "set_size_5",
                          "set_size_5_baseline"}),
], ids=lambda c: getattr(c, "name", ""))
def test_smoke_claim_runs(claim_obj, keys, check_smoke_claim):
    check_smoke_claim(claim_obj, keys)


def _smoke_result():
    return run_digits_experiment(_config(Scale.SMOKE), 0)


def _baseline_as_jei(result):
    """The threshold baseline passed as the method: its own cost-matched rows as "JEI-DNN"."""
    rows = [r for r in result["baseline"] if 0 < r["threshold"] < float("inf")][:3]
    return {**result, "jei": rows}


def test_negative_control_baseline_as_the_method_tradeoff():
    fake = _baseline_as_jei(_smoke_result())
    gain = tradeoff_gain(fake)
    assert gain == pytest.approx(0.0, abs=1e-9)   # on its own curve: no gain
    m = {"acc_gain": Estimate.mean_of([gain, gain, gain])}
    assert accuracy_cost_tradeoff.verdict(m, "small") != "holds"
    m = {"acc_gain": Estimate.mean_of([0.4, -0.6, 0.1])}   # noise around zero
    assert accuracy_cost_tradeoff.verdict(m, "small") != "holds"


def test_negative_control_baseline_as_the_method_calibration():
    s = calibration_summary(_baseline_as_jei(_smoke_result()))
    assert s["ece_ratio"] == pytest.approx(1.0)
    m = {"baseline_bias_early": Estimate.mean_of([0.02, 0.03, 0.025]),
         "ece_ratio": Estimate.mean_of([s["ece_ratio"]] * 3)}
    assert calibration_bias.verdict(m, "small") != "holds"
    # no over-confidence bias in the baseline: the first half of the claim fails
    m = {"baseline_bias_early": Estimate.mean_of([-0.02, -0.025, -0.03]),
         "ece_ratio": Estimate.mean_of([0.6, 0.7, 0.65])}
    assert calibration_bias.verdict(m, "small") == "fails"


def test_negative_control_top1_sets_and_full_sets_fail_coverage():
    res = _smoke_result()
    acc = sum(r["acc"] for r in res["jei"]) / len(res["jei"])
    # top-1 sets cover exactly the accuracy (about 80% here)
    m = {"coverage_gap_5": acc - 0.95, "coverage_gap_1": acc - 0.99}
    assert acc < 0.93 and conformal_coverage.verdict(m, "smoke") == "fails"
    # all-class sets cover everything: 5 points over the alpha = 0.05 target
    m = {"coverage_gap_5": Estimate.mean_of([0.05] * 3), "coverage_gap_1": Estimate.mean_of([0.01] * 3)}
    assert conformal_coverage.verdict(m, "small") == "fails"
    s = conformal_summary(res, (0.05, 0.01))
    assert 0 <= s["set_size_5"] <= 10 and -0.95 <= s["coverage_gap_5"] <= 0.05
