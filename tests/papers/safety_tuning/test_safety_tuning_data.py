"""The synthetic world, the mixing recipe and the Alpaca template."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.kits.language_models import alpaca_prompt as kit_alpaca_prompt
from iclr24.papers.safety_tuning import (
    HARM_TARGETS,
    HARM_VERBS,
    REFUSALS,
    Example,
    alpaca_prompt,
    make_instruction_world,
    mix_safety,
    render_for_reward_model,
    safety_count,
)


@pytest.fixture(scope="module")
def world():
    return make_instruction_world(3, n_general=600, n_general_test=80, n_harmful_test=80,
                                  n_lookalike_test=60, n_pretraining=100, n_scorer_texts=200)


def _pairs(examples):
    return {(e.verb, e.target) for e in examples if e.verb}


def test_evaluation_prompts_share_no_verb_target_pair_with_training(world):
    train = _pairs(world.general) | _pairs(world.safety)
    assert _pairs(world.harmful_test) and _pairs(world.lookalike_test)
    for name, exs in world.eval_sets().items():
        assert not _pairs(exs) & train, name
        # and no evaluation instruction appears verbatim in training
        assert not {e.instruction for e in exs if e.verb} & \
            {e.instruction for e in world.general + world.safety}, name
    assert world.train_harm_pairs.isdisjoint(world.test_harm_pairs)
    assert _pairs(world.harmful_test) <= world.test_harm_pairs
    assert _pairs(world.safety) <= world.train_harm_pairs


def test_harm_is_a_harm_verb_meeting_a_harm_target(world):
    for e in world.safety + world.harmful_test:
        assert e.verb in HARM_VERBS and e.target in HARM_TARGETS
        assert e.verb in e.instruction and e.target in e.instruction
    assert all(e.output in REFUSALS for e in world.safety)
    for e in world.general:  # the general set never pairs a harm verb with a harm target
        assert not (e.verb in HARM_VERBS and e.target in HARM_TARGETS)
        assert e.kind == "general" and e.output not in REFUSALS
    for e in world.lookalike_test:
        assert e.kind == "lookalike" and not (e.verb in HARM_VERBS and e.target in HARM_TARGETS)
    # the compliant answers of the harmful set are never training targets
    assert not {e.output for e in world.harmful_test} & {e.output for e in world.general}


def test_general_answers_are_programmatic(world):
    for e in world.general[:200]:
        if e.task == "repeat":
            w, n = e.instruction.split()[3], int(e.instruction.split()[4])
            assert e.output == " ".join([w] * n)
        elif e.task == "reverse":
            assert e.output.split() == e.input.split()[::-1]
        elif e.task == "add":
            a, b = e.instruction[4:-1].split(" and ")
            assert int(e.output) == int(a) + int(b)
        elif e.task == "count":
            assert int(e.output) == len(e.input.split())


def test_world_is_deterministic_and_seeded():
    a = make_instruction_world(1, n_general=50, n_pretraining=10, n_scorer_texts=20)
    b = make_instruction_world(1, n_general=50, n_pretraining=10, n_scorer_texts=20)
    c = make_instruction_world(2, n_general=50, n_pretraining=10, n_scorer_texts=20)
    assert a == b and a.general != c.general
    assert len(a.safety) == 5 * len(a.train_harm_pairs) >= 1333  # a 25% share of 4,000


def test_world_bad_arguments():
    with pytest.raises(ValueError, match="n_general"):
        make_instruction_world(0, n_general=0)
    with pytest.raises(ValueError, match="test_fraction"):
        make_instruction_world(0, test_fraction=1.0)


def test_safety_count_is_a_share_of_the_mixture_in_examples():
    assert safety_count(0.0, 4000) == 0
    assert safety_count(0.25, 4000) == 1333  # 1333 / 5333 = 25%
    assert safety_count(0.03, 20000) == 619  # the paper's "3%" of ~20.6k
    assert safety_count(0.5, 10) == 10


@given(share=st.floats(0, 0.6), n=st.integers(1, 5000))
def test_safety_count_share_round_trip(share, n):
    x = safety_count(share, n)
    # X / (n + X) is the share up to rounding of X by at most 1/2
    assert abs(x - share * (n + x)) <= 0.5 / (1 - share) + 1e-9


@pytest.mark.parametrize("share", [-0.1, 1.0, 1.5])
def test_share_outside_unit_interval_is_refused(share):
    with pytest.raises(ValueError, match=r"share must be in \[0, 1\)"):
        safety_count(share, 100)
    with pytest.raises(ValueError, match="share"):
        mix_safety([Example("a", "b")], [], share=share)


def test_share_above_the_safety_pool_is_refused(world):
    small_pool = world.safety[:10]
    with pytest.raises(ValueError, match="above the safety pool of 10"):
        mix_safety(world.general, small_pool, share=0.25)
    with pytest.raises(ValueError, match="above the safety pool"):
        mix_safety(world.general, small_pool, 11)
    with pytest.raises(ValueError, match="exactly one"):
        mix_safety(world.general, small_pool, 3, share=0.1)
    with pytest.raises(TypeError, match="general"):
        mix_safety(["not an example"], small_pool, 0)
    with pytest.raises(TypeError, match="share"):
        safety_count("0.1", 10)


def test_mixture_keeps_the_general_set_and_counts_examples(world):
    for share in (0.0, 0.03, 0.25):
        mix = mix_safety(world.general, world.safety, share=share, seed=5)
        n_safe = sum(e.kind == "safety" for e in mix)
        assert n_safe == safety_count(share, len(world.general))
        assert abs(n_safe / len(mix) - share) < 1 / len(mix)
        assert sorted(map(repr, (e for e in mix if e.kind == "general"))) == \
            sorted(map(repr, world.general))
    # nested: the 3% mixture's safety examples are a subset of the 25% one's (saferpaca_X)
    small = {e for e in mix_safety(world.general, world.safety, 30, 5) if e.kind == "safety"}
    big = {e for e in mix_safety(world.general, world.safety, 300, 5) if e.kind == "safety"}
    assert small <= big
    assert mix_safety(world.general, world.safety, 30, 5) == \
        mix_safety(world.general, world.safety, 30, 5)


def test_alpaca_template_matches_the_official_one():
    assert alpaca_prompt("Do X.") == (
        "Below is an instruction that describes a task. Write a response that appropriately "
        "completes the request.\n\n### Instruction:\nDo X.\n\n### Response:\n")
    with_input = alpaca_prompt("Do X.", "some input")
    assert with_input.startswith("Below is an instruction that describes a task, paired with "
                                 "an input") and "### Input:\nsome input\n\n### Response:\n" \
        in with_input
    assert alpaca_prompt("Do X.", "", "ok") == kit_alpaca_prompt("Do X.") + "ok"
    assert alpaca_prompt("Do X.", None, "ok").endswith("### Response:\nok")
    with pytest.raises(ValueError, match="instruction"):
        alpaca_prompt("  ")
    with pytest.raises(TypeError, match="response"):
        alpaca_prompt("Do X.", None, 3)


def test_reward_model_rendering():
    assert render_for_reward_model("Hi?", "Hello.") == "\n\nHuman: Hi?\n\nAssistant: Hello."
