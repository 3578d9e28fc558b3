"""Smoke runs of the DAM claims and negative controls of their rules."""

import math

import pytest

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.dam.claims import hsr_vs_window, irregular_robustness, zero_shot_real

KEYS = {
    "hsr_vs_window": {"mse_ratio", "mse_hsr", "mse_window", "mse_context_mean"},
    "irregular_robustness": {"degradation_gap", "ratio_dam", "ratio_dlinear"},
    "zero_shot_real": {"dam_vs_snaive_co2", "dam_vs_ets_sunspots", "mase_dam_co2",
                       "mase_ets_co2", "mase_snaive_sunspots", "mase_dlinear_co2"},
}


@pytest.mark.parametrize("c", [hsr_vs_window, irregular_robustness, zero_shot_real],
                         ids=lambda c: c.name)
def test_smoke_claim_runs(c):
    m = c(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert KEYS[c.name] <= set(m.metrics)
    assert all(math.isfinite(v if isinstance(v, float) else v.value) for v in m.metrics.values())
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert c.verdict(m.metrics, scale) in ("holds", "fails", "inconclusive")
    assert m.figure is not None


def _est(xs):
    return Estimate.mean_of(xs)


def test_negative_control_hsr_window_as_method():
    # the window model passed as the method: MSE ratio 1 over seeds
    assert hsr_vs_window.verdict({"mse_ratio": _est([1.0, 1.03, 0.97])}, "small") != "holds"
    assert hsr_vs_window.verdict({"mse_ratio": 1.0}, "smoke") == "fails"
    assert hsr_vs_window.verdict({"mse_ratio": _est([0.5, 0.55, 0.6])}, "small") == "holds"


def test_negative_control_irregular_dlinear_as_method():
    r = [0.98, 1.2, 1.05]
    gap = Estimate.difference(r, r, paired=True)  # DLinear against itself: gap exactly 0
    assert irregular_robustness.verdict({"degradation_gap": gap}, "small") != "holds"
    assert irregular_robustness.verdict({"degradation_gap": 0.0}, "smoke") == "fails"


def test_negative_control_zero_shot_seasonal_naive_as_method():
    m = {"dam_vs_snaive_co2": 1.0, "dam_vs_snaive_sunspots": 1.0, "dam_vs_ets_co2": 1.1,
         "dam_vs_ets_sunspots": 1.1}
    assert zero_shot_real.verdict(m, "small") == "fails"
