"""Smoke runs of the mint claims with their null arms (measured in the same run) put in the
method's place, and the rules and controls fed hand-made numbers."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.mint.claims import feedback_gain, smollm2_episodes, turn_budget


def _same(xs):
    return Estimate.difference(xs, xs, paired=True)


def _diff(a, b):
    return Estimate.difference(a, b, paired=True)


@pytest.mark.usefixtures("one_torch_thread")
def test_turn_budget_smoke_and_answer_only_in_the_agents_place(check_smoke_claim):
    m = check_smoke_claim(turn_budget, ["sr_1", "sr_3", "sr5_minus_sr1", "slope",
                                        "answer_only_sr", "tool_minus_answer_only",
                                        "teacher_sr5_minus_sr1", "teacher_slope",
                                        "teacher_tool_minus_answer_only"])
    assert 0 <= m.metrics["sr_1"] <= 1 and m.tables["actions_per_episode"]
    # the positive control of this run: the scripted teacher gains from the extra turns
    assert m.metrics["teacher_sr5_minus_sr1"] > 0
    # the answer-only arm of this run as the method (flat in k): not holds
    null = {**m.metrics, "sr5_minus_sr1": 0.0, "slope": 0.0, "tool_minus_answer_only": 0.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert turn_budget.verdict(null, scale) != "holds"


def test_turn_budget_rule_and_control():
    flat = [0.1, 0.05, 0.12]
    teacher = {"teacher_sr5_minus_sr1": _diff([0.8, 0.85, 0.82], [0.3, 0.35, 0.32]),
               "teacher_slope": Estimate.mean_of([0.12, 0.13, 0.11]),
               "teacher_tool_minus_answer_only": _diff([0.8, 0.85, 0.82], [0.4, 0.42, 0.41])}
    good = {**teacher, "sr5_minus_sr1": _diff([0.4, 0.45, 0.42], flat),
            "slope": Estimate.mean_of([0.08, 0.09, 0.07]),
            "tool_minus_answer_only": _diff([0.4, 0.45, 0.42], flat)}
    assert turn_budget.verdict(good, Scale.SMALL) == "holds"
    null = {**teacher, "sr5_minus_sr1": _same(flat), "slope": Estimate.mean_of([0.0, 0.01, -0.01]),
            "tool_minus_answer_only": _same(flat)}
    assert turn_budget.verdict(null, Scale.SMALL) == "fails"
    small_gain = dict(null, sr5_minus_sr1=_diff([0.15, 0.1, 0.17], flat))
    assert turn_budget.verdict(small_gain, Scale.SMALL) != "holds"  # +5 points < 10
    # even the teacher shows no turn-budget effect: the test bed cannot tell
    flat_teacher = {**good, "teacher_sr5_minus_sr1": _same(flat)}
    assert turn_budget.verdict(flat_teacher, Scale.SMALL) == "inconclusive"
    assert turn_budget.verdict({"sr5_minus_sr1": 0.0, "teacher_sr5_minus_sr1": 0.3},
                               Scale.SMOKE) == "fails"


@pytest.mark.usefixtures("one_torch_thread")
def test_feedback_gain_smoke_and_random_feedback_in_the_users_place(check_smoke_claim):
    m = check_smoke_claim(feedback_gain, ["delta_f", "sr5_none", "sr5_gt", "delta_f_no_gt",
                                          "sr5_random", "delta_f_random",
                                          "delta_f_over_random"])
    assert len(m.tables["per_seed"]) == 1
    # the random user of this run as the feedback: its margin over itself is 0, not holds
    null = {**m.metrics, "delta_f": m.metrics["delta_f_random"], "delta_f_over_random": 0.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert feedback_gain.verdict(null, scale) != "holds"


def test_feedback_gain_rule_and_control():
    sr = [0.3, 0.35, 0.28]
    gt = [0.4, 0.46, 0.37]
    informative = {"delta_f_over_random": _diff(gt, [0.31, 0.34, 0.29])}
    assert feedback_gain.verdict({**informative, "delta_f": _diff(gt, sr)},
                                 Scale.SMALL) == "holds"
    # no feedback passed as the feedback condition: ΔF = 0 on paired seeds
    assert feedback_gain.verdict({**informative, "delta_f": _same(sr)}, Scale.SMALL) == "fails"
    noisy = _diff([0.32, 0.30, 0.31], sr)
    assert feedback_gain.verdict({**informative, "delta_f": noisy}, Scale.SMALL) != "holds"
    # random GOOD/BAD helps as much as the ground truth: the test bed cannot tell
    assert feedback_gain.verdict({"delta_f": _diff(gt, sr), "delta_f_over_random": _same(gt)},
                                 Scale.SMALL) == "inconclusive"


def test_smollm2_episodes_smoke_and_the_null_arm_in_the_models_place(check_smoke_claim):
    m = check_smoke_claim(smollm2_episodes, ["sr_1", "sr_2", "sr_gain", "valid_action_rate",
                                             "known_answer_sr", "null_valid_action_rate",
                                             "known_answer_valid_action_rate", "null_sr"])
    assert "untrained" in m.notes and m.metrics["n_episodes"] == 4
    # the positive control of this run: every known-answer episode succeeds in one valid turn
    assert m.metrics["known_answer_sr"] == 1.0 == m.metrics["known_answer_valid_action_rate"]
    # the null arm of this run (random text) in the model's place: not holds
    null = {**m.metrics, "valid_action_rate": m.metrics["null_valid_action_rate"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert smollm2_episodes.verdict(null, scale) != "holds"
    # at smoke the model is itself an untrained stand-in: a plumbing run, not a pass
    assert smollm2_episodes.verdict(m.metrics, Scale.SMOKE) == "fails"


def test_smollm2_episodes_rule_and_control():
    ok = {"known_answer_sr": 1.0, "null_valid_action_rate": 0.0}
    assert smollm2_episodes.verdict({**ok, "valid_action_rate": 0.4}, Scale.SMALL) == "holds"
    assert smollm2_episodes.verdict({**ok, "valid_action_rate": 0.0}, Scale.SMALL) == "fails"
    # a harness that loses a correct answer, or counts noise as actions: cannot tell
    for broken in ({**ok, "known_answer_sr": 0.5}, {**ok, "null_valid_action_rate": 0.1}):
        assert smollm2_episodes.verdict({**broken, "valid_action_rate": 0.4},
                                        Scale.SMALL) == "inconclusive"
