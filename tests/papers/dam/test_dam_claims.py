"""Smoke runs of the DAM claims, their null arms in the method's place (must not give holds),
and the rules and controls on hand-made numbers (holds / fails / the test bed cannot tell)."""

from iclr24.claims import Estimate, Scale
from iclr24.papers.dam.claims import hsr_vs_window, irregular_robustness, zero_shot_real

TARGETS = ("co2", "sunspots")
BASES = ("snaive", "ets")


def _est(xs):
    return Estimate.mean_of(xs)


def _as_method(metrics, arm):
    """zero_shot_real's metrics with ``arm``'s ratios in DAM's place."""
    return {**metrics, **{f"dam_vs_{b}_{t}": metrics[f"{arm}_vs_{b}_{t}"]
                          for b in BASES for t in TARGETS}}


def test_hsr_vs_window_smoke_and_its_null_arm(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(hsr_vs_window, ["mse_ratio", "hsr_over_mean", "window_over_mean",
                                          "mean_over_window", "mse_hsr", "mse_window",
                                          "mse_context_mean"])
    assert m.figure is not None
    # the null arm (the look-back mean, measured in this run) in HSR's place
    null = {**m.metrics, "mse_ratio": m.metrics["mean_over_window"], "hsr_over_mean": 1.0}
    assert hsr_vs_window.verdict(null, Scale.SMALL) != "holds"
    assert hsr_vs_window.verdict(null, Scale.SMOKE) != "holds"


def test_irregular_robustness_smoke_and_its_null_arm(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(irregular_robustness, [
        "degradation_gap", "dam_over_trivial", "dlinear_over_trivial", "null_degradation_gap",
        "null_over_trivial", "ratio_dam", "ratio_dlinear", "ratio_mean", "mse_dam_complete",
        "mse_dlinear_complete", "mse_mean_complete", "mse_snaive_complete"])
    # the trivial reference is the better of the two trivial arms, so the mean is >= it
    assert m.metrics["null_over_trivial"] >= 1.0
    # the history-mean null arm (this run) in DAM's place: not holds
    null = {**m.metrics, "degradation_gap": m.metrics["null_degradation_gap"],
            "dam_over_trivial": m.metrics["null_over_trivial"]}
    assert irregular_robustness.verdict(null, Scale.SMALL) != "holds"
    assert irregular_robustness.verdict(null, Scale.SMOKE) != "holds"


def test_zero_shot_real_smoke_and_its_null_arms(check_smoke_claim, one_torch_thread):
    keys = [f"{a}_vs_{b}_{t}" for a in ("dam", "mean", "untrained") for b in BASES
            for t in TARGETS]
    keys += [f"mase_{a}_{t}" for a in ("dam", "untrained", "snaive", "ets", "dlinear", "mean")
             for t in TARGETS]
    m = check_smoke_claim(zero_shot_real, keys)
    assert m.figure is not None
    for arm in ("mean", "untrained"):  # each null arm (this run) in DAM's place: not holds
        assert zero_shot_real.verdict(_as_method(m.metrics, arm), Scale.SMALL) != "holds"
        assert zero_shot_real.verdict(_as_method(m.metrics, arm), Scale.SMOKE) != "holds"


# --- the rules on hand-made numbers ------------------------------------------------------------

def test_hsr_rule_holds_fails_and_needs_a_window_better_than_the_mean():
    good = {"mse_ratio": _est([0.5, 0.55, 0.6]), "hsr_over_mean": _est([0.5, 0.52, 0.55]),
            "window_over_mean": _est([0.9, 0.92, 0.94])}
    assert hsr_vs_window.verdict(good, Scale.SMALL) == "holds"
    # the window model as the method: ratio ~1
    window = {**good, "mse_ratio": _est([1.0, 1.03, 0.97]),
              "hsr_over_mean": good["window_over_mean"]}
    assert hsr_vs_window.verdict(window, Scale.SMALL) != "holds"
    assert hsr_vs_window.verdict({**good, "mse_ratio": _est([1.0, 1.05, 1.1])},
                                 Scale.SMALL) == "fails"
    # HSR beats the window but not the mean forecast: fails
    assert hsr_vs_window.verdict({**good, "hsr_over_mean": _est([1.1, 1.2, 1.15])},
                                 Scale.SMALL) == "fails"
    # the audit's smoke case: a window worse than the mean forecast cannot tell
    straw = {"mse_ratio": 0.62, "hsr_over_mean": 0.9, "window_over_mean": 1.45}
    assert hsr_vs_window.verdict(straw, Scale.SMOKE) == "inconclusive"
    assert hsr_vs_window.verdict({**straw, "mse_ratio": 0.62 / 0.9, "hsr_over_mean": 1.0},
                                 Scale.SMOKE) != "holds"


def test_irregular_rule_rejects_an_input_ignoring_forecaster():
    good = {"degradation_gap": _est([-0.2, -0.25, -0.3]),
            "dam_over_trivial": _est([0.5, 0.55, 0.6]),
            "dlinear_over_trivial": _est([0.4, 0.45, 0.5])}
    assert irregular_robustness.verdict(good, Scale.SMALL) == "holds"
    # a constant forecast: degradation ratio exactly 1 (gap < 0 against a degrading DLinear)
    # but no better than the trivial forecast it is
    constant = {**good, "dam_over_trivial": 1.0}
    assert irregular_robustness.verdict(constant, Scale.SMALL) == "fails"
    # DLinear against itself: gap exactly 0
    r = [0.98, 1.2, 1.05]
    dl = {**good, "degradation_gap": Estimate.difference(r, r, paired=True)}
    assert irregular_robustness.verdict(dl, Scale.SMALL) != "holds"
    assert irregular_robustness.verdict({**good, "degradation_gap": _est([0.1, 0.2, 0.15])},
                                        Scale.SMALL) == "fails"
    # a DLinear worse than a constant: the test bed cannot tell
    assert irregular_robustness.verdict({**good, "dlinear_over_trivial": _est([1.2, 1.3, 1.4])},
                                        Scale.SMALL) == "inconclusive"


def _zs(dam_snaive, dam_ets, mean_snaive=16.0, mean_ets=60.0, un_snaive=(2.0, 2.1, 2.2),
        un_ets=(5.0, 5.2, 5.4)):
    m = {}
    for t in TARGETS:
        m[f"dam_vs_snaive_{t}"], m[f"dam_vs_ets_{t}"] = _est(dam_snaive), _est(dam_ets)
        m[f"mean_vs_snaive_{t}"], m[f"mean_vs_ets_{t}"] = mean_snaive, mean_ets
        m[f"untrained_vs_snaive_{t}"] = _est(un_snaive)
        m[f"untrained_vs_ets_{t}"] = _est(un_ets)
    return m


def test_zero_shot_rule_and_its_null_arm_control():
    good = _zs([0.7, 0.75, 0.8], [1.0, 1.05, 1.1])
    assert zero_shot_real.verdict(good, Scale.SMALL) == "holds"
    assert zero_shot_real.verdict(_zs([1.9, 2.0, 2.1], [5.0, 5.5, 6.0]), Scale.SMALL) == "fails"
    # seasonal naive as the method: ratio 1, not < 1
    snaive = _zs([1.0, 1.0, 1.0], [1.1, 1.12, 1.14])
    assert zero_shot_real.verdict(snaive, Scale.SMALL) != "holds"
    # a null arm that passes the rule: the rule cannot tell, inconclusive
    assert zero_shot_real.verdict({**good, **{f"mean_vs_{b}_{t}": 0.5 for b in BASES
                                              for t in TARGETS}}, Scale.SMALL) == "inconclusive"
    untrained_passes = _zs([0.7, 0.75, 0.8], [1.0, 1.05, 1.1], un_snaive=(0.8, 0.82, 0.84),
                           un_ets=(1.1, 1.12, 1.14))
    assert zero_shot_real.verdict(untrained_passes, Scale.SMALL) == "inconclusive"
    for arm in ("mean", "untrained"):
        assert zero_shot_real.verdict(_as_method(good, arm), Scale.SMALL) != "holds"
