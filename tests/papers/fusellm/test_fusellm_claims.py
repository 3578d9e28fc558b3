"""Smoke runs of the FuseLLM claims and their negative controls."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.fusellm.claims import alignment_quality, fusion_vs_clm


@pytest.mark.usefixtures("one_torch_thread")
def test_fusion_vs_clm_smoke(check_smoke_claim):
    m = check_smoke_claim(fusion_vs_clm, ["rel_bpc_gain_min_ce", "bpc_gain_min_ce",
                                          "bpc_mean_clm", "bpc_mean_min_ce", "bpc_mean_avg_ce",
                                          "arith_acc_clm", "arith_acc_min_ce",
                                          "bpc_min_ce_minus_avg_ce"])
    arms = {r["arm"] for r in m.tables["per_seed_arm"]}
    assert arms == {"clm", "min_ce", "avg_ce"}
    assert all(0 < r["coverage_soft"] <= 1 for r in m.tables["sources_and_base"]
               if "coverage_soft" in r)


def test_fusion_vs_clm_negative_control():
    """CLM passed as the fusion method: zero paired gain is not a holds."""
    same = [1.50, 1.42, 1.61]
    null = {"rel_bpc_gain_min_ce": Estimate.difference(same, same, paired=True)}
    assert fusion_vs_clm.verdict(null, Scale.SMALL) == "fails"
    small_gain = {"rel_bpc_gain_min_ce": Estimate.mean_of([0.004, 0.006, 0.005])}
    assert fusion_vs_clm.verdict(small_gain, Scale.SMALL) == "fails"
    assert fusion_vs_clm.verdict({"rel_bpc_gain_min_ce": 0.0}, Scale.SMOKE) == "fails"


def test_alignment_quality_smoke(check_smoke_claim):
    m = check_smoke_claim(alignment_quality, ["coverage_soft", "coverage_hard", "coverage_gain",
                                              "bpc_soft", "bpc_hard", "bpc_clm",
                                              "bpc_gain_soft", "p_true_soft"])
    assert m.metrics["coverage_soft"] >= m.metrics["coverage_hard"]  # soft ⊇ hard by design
    assert "untrained" in m.notes


def test_alignment_quality_negative_control():
    """Hard alignment passed as the soft one: no coverage gain, zero BPC gain."""
    bpc = [2.1, 2.3, 2.2]
    null = {"coverage_gain": 0.0, "bpc_gain_soft": Estimate.difference(bpc, bpc, paired=True)}
    assert alignment_quality.verdict(null, Scale.SMALL) == "fails"
    assert alignment_quality.verdict({"coverage_gain": 0.0, "bpc_gain_soft": 0.0},
                                     Scale.SMOKE) == "fails"
    covers_more_but_no_better = {"coverage_gain": 0.1, "bpc_gain_soft": Estimate.mean_of(
        [-0.01, 0.02, 0.0])}
    assert alignment_quality.verdict(covers_more_but_no_better, Scale.SMALL) != "holds"
