"""Smoke runs of the FuseLLM claims and their negative controls."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.fusellm.claims import alignment_quality, fusion_vs_clm


@pytest.mark.usefixtures("one_torch_thread")
def test_fusion_vs_clm_smoke_and_self_distillation_null(check_smoke_claim):
    m = check_smoke_claim(fusion_vs_clm, ["rel_bpc_gain_min_ce", "bpc_gain_min_ce",
                                          "bpc_mean_clm", "bpc_mean_min_ce", "bpc_mean_avg_ce",
                                          "arith_acc_clm", "arith_acc_min_ce",
                                          "bpc_min_ce_minus_avg_ce", "bpc_mean_self_distill",
                                          "rel_bpc_gain_self_distill"])
    arms = {r["arm"] for r in m.tables["per_seed_arm"]}
    assert arms == {"clm", "min_ce", "avg_ce", "self_distill"}
    assert all(0 < r["coverage_soft"] <= 1 for r in m.tables["sources_and_base"]
               if "coverage_soft" in r)
    # the self-distillation null (this run) in MinCE's place: the verdict must not be holds
    null = {**m.metrics, "rel_bpc_gain_min_ce": m.metrics["rel_bpc_gain_self_distill"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert fusion_vs_clm.verdict(null, scale) != "holds"


def test_fusion_vs_clm_rule_and_control():
    """CLM passed as the fusion method: zero paired gain is not a holds; a self-distillation
    null that reaches the bar leaves the test bed unable to tell."""
    same = [1.50, 1.42, 1.61]
    quiet = {"rel_bpc_gain_self_distill": Estimate.mean_of([0.004, 0.0, 0.008])}
    null = {**quiet, "rel_bpc_gain_min_ce": Estimate.difference(same, same, paired=True)}
    assert fusion_vs_clm.verdict(null, Scale.SMALL) == "fails"
    small_gain = {**quiet, "rel_bpc_gain_min_ce": Estimate.mean_of([0.004, 0.006, 0.005])}
    assert fusion_vs_clm.verdict(small_gain, Scale.SMALL) == "fails"
    good = {**quiet, "rel_bpc_gain_min_ce": Estimate.mean_of([0.05, 0.06, 0.055])}
    assert fusion_vs_clm.verdict(good, Scale.SMALL) == "holds"
    loud = {**good, "rel_bpc_gain_self_distill": Estimate.mean_of([0.04, 0.05, 0.045])}
    assert fusion_vs_clm.verdict(loud, Scale.SMALL) == "inconclusive"
    assert fusion_vs_clm.verdict({"rel_bpc_gain_self_distill": -0.01,
                                  "rel_bpc_gain_min_ce": 0.0}, Scale.SMOKE) == "fails"


def test_alignment_quality_smoke_and_shuffled_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(alignment_quality, ["coverage_soft", "coverage_hard", "coverage_gain",
                                              "bpc_soft", "bpc_hard", "bpc_clm", "bpc_shuffled",
                                              "bpc_gain_soft", "bpc_gain_shuffled",
                                              "p_true_soft", "soft_only_share"])
    assert m.metrics["coverage_soft"] >= m.metrics["coverage_hard"]  # soft ⊇ hard by design
    assert 0 <= m.metrics["soft_only_share"] <= m.metrics["coverage_soft"]
    assert "untrained" in m.notes
    assert {r["arm"] for r in m.tables["per_seed_arm"]} == {"clm", "hard", "soft", "shuffled"}
    # the shuffled null (this run) in soft alignment's place: the verdict must not be holds
    null = {**m.metrics, "bpc_gain_soft": m.metrics["bpc_gain_shuffled"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert alignment_quality.verdict(null, scale) != "holds"


def test_alignment_quality_rule_and_control():
    """Hard alignment passed as the soft one fails; coverage no longer decides; a shuffled
    null that beats hard alignment makes the test bed unable to tell."""
    bpc = [2.1, 2.3, 2.2]
    quiet_null = {"bpc_gain_shuffled": Estimate.mean_of([-0.02, 0.01, -0.01])}
    null = {**quiet_null, "coverage_gain": 0.0,
            "bpc_gain_soft": Estimate.difference(bpc, bpc, paired=True)}
    assert alignment_quality.verdict(null, Scale.SMALL) == "fails"
    assert alignment_quality.verdict({"bpc_gain_shuffled": 0.0, "bpc_gain_soft": 0.0},
                                     Scale.SMOKE) == "fails"
    covers_more_but_no_better = {**quiet_null, "coverage_gain": 0.1,
                                 "bpc_gain_soft": Estimate.mean_of([-0.01, 0.02, 0.0])}
    assert alignment_quality.verdict(covers_more_but_no_better, Scale.SMALL) == "inconclusive"
    good = {**quiet_null, "bpc_gain_soft": Estimate.mean_of([0.03, 0.05, 0.04])}
    assert alignment_quality.verdict(good, Scale.SMALL) == "holds"
    regularising = {**good, "bpc_gain_shuffled": Estimate.mean_of([0.03, 0.04, 0.035])}
    assert alignment_quality.verdict(regularising, Scale.SMALL) == "inconclusive"
    assert "cannot tell" in alignment_quality.judge(regularising, Scale.SMALL).reason
