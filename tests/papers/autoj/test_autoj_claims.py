"""Smoke runs of the autoj claims and their negative controls."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.autoj.claims import best_of_n, judge_agreement, smollm2_judge


@pytest.mark.usefixtures("one_torch_thread")
def test_judge_agreement_smoke(check_smoke_claim):
    m = check_smoke_claim(judge_agreement, [
        "agreement_gain", "consistency_gain", "sft_agreement", "sft_consistency",
        "untuned_agreement", "reward_model_agreement", "sft_no_swap_consistency",
        "swap_consistency_gain"])
    for key in ("sft_agreement", "reward_model_agreement", "untuned_parse_rate"):
        assert 0 <= m.metrics[key] <= 1
    assert {r["system"] for r in m.tables["per_scenario"]} == {
        "untuned", "reward_model", "sft_no_swap", "sft"}


def test_judge_agreement_negative_control():
    """The untuned LM passed as the fine-tuned judge: zero gains do not hold."""
    same = [0.05, 0.1, 0.0]
    null = {"agreement_gain": Estimate.difference(same, same, paired=True),
            "consistency_gain": Estimate.difference(same, same, paired=True)}
    assert judge_agreement.verdict(null, Scale.SMALL) == "fails"
    # agreement gained but consistency did not: still not "holds"
    half = {"agreement_gain": Estimate.difference([0.5, 0.55, 0.6], [0.0, 0.0, 0.0],
                                                  paired=True),
            "consistency_gain": Estimate.difference(same, same, paired=True)}
    assert judge_agreement.verdict(half, Scale.SMALL) == "fails"
    assert judge_agreement.verdict({"agreement_gain": 0.0, "consistency_gain": 0.0},
                                   Scale.SMOKE) == "fails"


@pytest.mark.usefixtures("one_torch_thread")
def test_best_of_n_smoke(check_smoke_claim):
    m = check_smoke_claim(best_of_n, ["quality_gain", "gap_closed", "quality_at_1",
                                      "quality_at_8", "oracle_quality", "rating_parse_rate"])
    assert m.metrics["quality_at_8"] <= m.metrics["oracle_quality"] + 1e-12


def test_best_of_n_negative_control():
    """A judge whose ratings carry no information (random pick at every N)."""
    q1 = [0.40, 0.42, 0.38]
    null = {"quality_gain": Estimate.difference(q1, q1, paired=True),
            "gap_closed": Estimate.mean_of([0.0, 0.01, -0.01])}
    assert best_of_n.verdict(null, Scale.SMALL) == "fails"
    weak = {"quality_gain": Estimate.difference([0.5, 0.52, 0.5], q1, paired=True),
            "gap_closed": Estimate.mean_of([0.15, 0.2, 0.18])}
    assert best_of_n.verdict(weak, Scale.SMALL) == "fails"


@pytest.mark.usefixtures("one_torch_thread")
def test_smollm2_judge_smoke(check_smoke_claim):
    m = check_smoke_claim(smollm2_judge, ["agreement_gain", "free_parse_rate",
                                          "primed_parse_rate", "random_agreement"])
    assert "stand-in" in m.notes and m.tables["replies"]


def test_smollm2_judge_negative_control():
    """The random judge passed as the model: no gain over itself."""
    r = [0.17, 0.0, 0.33]
    null = {"agreement_gain": Estimate.difference(r, r, paired=True)}
    assert smollm2_judge.verdict(null, Scale.SMALL) == "fails"
