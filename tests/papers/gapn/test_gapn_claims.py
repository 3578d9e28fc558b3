"""Smoke runs of the three GAPN claims and a negative control per claim."""

import math

import pytest

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.gapn.claims import assembly_quality, reward_alignment, search_cost

RULE_METRICS = {
    "reward_alignment": {"spearman_mean"},
    "assembly_quality": {"gain_vs_greedy", "gain_vs_random", "gap_vs_mcts", "adv_gain_large",
                         "tm_gapn", "tm_mcts", "tm_greedy", "tm_random", "tm_large_gapn",
                         "tm_large_gapn_noadv", "rmsd_gapn"},
    "search_cost": {"time_ratio", "tm_gap_vs_mcts", "gapn_cpu_s_per_complex",
                    "mcts_cpu_s_per_complex"},
}


@pytest.mark.parametrize("claim_obj", [reward_alignment, assembly_quality, search_cost],
                         ids=lambda c: c.name)
def test_smoke_claim_runs(claim_obj, one_torch_thread):
    m = claim_obj(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert RULE_METRICS[claim_obj.name] <= set(m.metrics)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert claim_obj.verdict(m.metrics, scale) in ("holds", "fails", "inconclusive")
    assert m.figure is not None and m.tables


def _est(values):
    return Estimate.mean_of(values)


def test_reward_alignment_negative_control():
    # a reward unrelated to TM (correlation scattered around 0) must not hold
    null = {"spearman_mean": _est([0.1, -0.2, 0.05, 0.0])}
    assert reward_alignment.verdict(null, Scale.SMALL) != "holds"
    good = {"spearman_mean": _est([0.8, 0.7, 0.75, 0.9])}
    assert reward_alignment.verdict(good, Scale.SMALL) == "holds"


def test_assembly_quality_negative_control():
    # greedy passed as the method: every gain over greedy is exactly zero
    zero = Estimate(0.0, 0.0, 0.0, 3, 0.95, "paired-t")
    null = {"gain_vs_greedy": zero, "gain_vs_random": _est([0.4, 0.45, 0.42]),
            "gap_vs_mcts": _est([0.3, 0.35, 0.32]), "adv_gain_large": _est([0.02, 0.03, 0.01])}
    assert assembly_quality.verdict(null, Scale.SMALL) != "holds"
    # the method without its adversarial reward passed as GAPN: adv gain exactly zero
    ablated = dict(null, gain_vs_greedy=_est([0.05, 0.06, 0.04]), adv_gain_large=zero)
    assert assembly_quality.verdict(ablated, Scale.SMALL) != "holds"
    ok = dict(ablated, adv_gain_large=_est([0.02, 0.03, 0.025]))
    assert assembly_quality.verdict(ok, Scale.SMALL) == "holds"
    assert assembly_quality.verdict({"gain_vs_random": 0.0}, Scale.SMOKE) == "fails"


def test_search_cost_negative_control():
    # MCTS passed as the method: time ratio 1, TM gap 0
    null = {"time_ratio": _est([1.0, 1.1, 0.95]), "tm_gap_vs_mcts": Estimate(0, 0, 0, 3)}
    assert search_cost.verdict(null, Scale.SMALL) == "fails"
    # fast but much worse (e.g. random assembly) must not hold either
    cheap = {"time_ratio": _est([400, 420, 390]), "tm_gap_vs_mcts": _est([-0.3, -0.25, -0.28])}
    assert search_cost.verdict(cheap, Scale.SMALL) == "fails"
