"""Smoke runs of the mint claims and the negative controls of their rules."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.mint.claims import feedback_gain, smollm2_episodes, turn_budget


def _same(xs):
    return Estimate.difference(xs, xs, paired=True)


@pytest.mark.usefixtures("one_torch_thread")
def test_turn_budget_smoke(check_smoke_claim):
    m = check_smoke_claim(turn_budget, ["sr_1", "sr_3", "sr5_minus_sr1", "slope",
                                        "answer_only_sr", "tool_minus_answer_only"])
    assert 0 <= m.metrics["sr_1"] <= 1 and m.tables["actions_per_episode"]


def test_turn_budget_negative_control():
    """The answer-only baseline passed as the method: flat SR_k, no gain over itself."""
    flat = [0.1, 0.05, 0.12]
    null = {"sr5_minus_sr1": _same(flat), "slope": Estimate.mean_of([0.0, 0.01, -0.01]),
            "tool_minus_answer_only": _same(flat)}
    assert turn_budget.verdict(null, Scale.SMALL) == "fails"
    small_gain = dict(null, sr5_minus_sr1=Estimate.difference([0.15, 0.1, 0.17], flat,
                                                              paired=True))
    assert turn_budget.verdict(small_gain, Scale.SMALL) != "holds"  # +5 points < 10
    assert turn_budget.verdict({"sr5_minus_sr1": 0.0}, Scale.SMOKE) == "fails"


@pytest.mark.usefixtures("one_torch_thread")
def test_feedback_gain_smoke(check_smoke_claim):
    m = check_smoke_claim(feedback_gain, ["delta_f", "sr5_none", "sr5_gt", "delta_f_no_gt"])
    assert len(m.tables["per_seed"]) == 1


def test_feedback_gain_negative_control():
    """No feedback passed as the feedback condition: ΔF = 0 on paired seeds."""
    sr = [0.3, 0.35, 0.28]
    assert feedback_gain.verdict({"delta_f": _same(sr)}, Scale.SMALL) == "fails"
    noisy = Estimate.difference([0.32, 0.30, 0.31], sr, paired=True)
    assert feedback_gain.verdict({"delta_f": noisy}, Scale.SMALL) != "holds"


def test_smollm2_episodes_smoke(check_smoke_claim):
    m = check_smoke_claim(smollm2_episodes, ["sr_1", "sr_2", "sr_gain", "valid_action_rate"])
    assert "untrained" in m.notes and m.metrics["n_episodes"] == 4


def test_smollm2_episodes_negative_control():
    zero = [0.0, 0.0, 0.0]
    assert smollm2_episodes.verdict({"sr_gain": _same(zero)}, Scale.SMALL) == "fails"
