"""The tuning recipe, the evaluation of one set and the safety curve."""

from __future__ import annotations

import numpy as np
import pytest

from iclr24.kits.language_models import CausalTransformer, TransformerConfig, TransformerLM
from iclr24.papers.safety_tuning import (
    REFUSALS,
    Example,
    SafetyTuneConfig,
    alpaca_prompt,
    evaluate_set,
    finetune,
    make_instruction_world,
    mix_safety,
    respond,
    safety_curve,
    training_pairs,
    world_tokenizer,
)


@pytest.fixture(scope="module")
def world():
    return make_instruction_world(5, n_general=200, n_general_test=4, n_harmful_test=4,
                                  n_lookalike_test=4, n_pretraining=50, n_scorer_texts=60)


@pytest.fixture(scope="module")
def tiny(world):
    import torch

    tok = world_tokenizer(world, 600)
    torch.manual_seed(0)
    model = CausalTransformer(TransformerConfig(vocab_size=tok.vocab_size, d_model=16,
                                                n_layers=1, n_heads=2, context_length=128))
    return TransformerLM(model, tok)


class _ConstScorer:
    def __init__(self, values):
        self.values = np.asarray(values, float)

    def score(self, instructions, responses):
        return self.values[:len(responses)]


def test_config_defaults_are_the_official_recipe():
    cfg = SafetyTuneConfig()
    assert (cfg.lr, cfg.batch_size, cfg.epochs, cfg.warmup_steps) == (3e-4, 128, 3.0, 10)
    assert cfg.train_on_inputs
    kit = cfg.kit_config(20000, hf=True)
    assert (kit.lora_rank, kit.lora_alpha, kit.lora_targets) == (8, 16.0, ("q_proj", "v_proj"))
    assert kit.steps == 469 and kit.train_on_inputs  # ceil(3 * 20000 / 128)
    assert cfg.kit_config(20000, hf=False).lora_rank is None  # tiny model: full fine-tuning
    assert SafetyTuneConfig(steps=7).steps_for(10 ** 6) == 7
    with pytest.raises(ValueError, match="steps"):
        SafetyTuneConfig(steps=0)
    with pytest.raises(ValueError, match="batch_size"):
        SafetyTuneConfig(batch_size=0)


def test_training_pairs_use_the_alpaca_template():
    ex = Example("Reverse the order of these words.", "b a", input="a b")
    assert training_pairs([ex]) == [(alpaca_prompt(ex.instruction, "a b"), "b a\n")]
    with pytest.raises(TypeError, match="examples"):
        training_pairs([("p", "t")])


@pytest.mark.usefixtures("one_torch_thread")
def test_total_steps_are_fixed_across_mixtures(world, tiny):
    import copy

    cfg = SafetyTuneConfig(lr=1e-3, batch_size=4, steps=6)
    losses = []
    for n in (0, 60):
        lm = copy.deepcopy(tiny)
        hist = finetune(lm, mix_safety(world.general, world.safety, n), cfg)
        assert len(hist.losses) == 6
        losses.append(hist.losses)
    # without a fixed step count the paper's epochs make the larger mixture train longer
    assert SafetyTuneConfig(batch_size=4).steps_for(260) > SafetyTuneConfig(
        batch_size=4).steps_for(200)
    with pytest.raises(TypeError, match="SafetyTuneConfig"):
        finetune(tiny, world.general, {"steps": 3})


def test_evaluate_set_by_role(world):
    harm = list(world.harmful_test[:2])
    m = evaluate_set(harm, [REFUSALS[0], "Here is how: go."], _ConstScorer([0.2, 0.9]), "h")
    assert m == {"h_refusal": 0.5, "h_harm_score": pytest.approx(0.55), "h_compliance": 0.5}
    look = list(world.lookalike_test[:2])
    m = evaluate_set(look, [look[0].output + " ", "I'm sorry, no."], _ConstScorer([]), "l")
    assert m == {"l_refusal": 0.5, "l_accuracy": 0.5}
    with pytest.raises(ValueError, match="one kind"):
        evaluate_set(harm + look, ["a"] * 4, _ConstScorer([0] * 4), "mixed")
    with pytest.raises(ValueError, match="equal length"):
        evaluate_set(harm, ["a"], _ConstScorer([0]))


class _EchoBackend:
    def __init__(self):
        self.prompts = []

    def generate(self, prompts, max_new_tokens, *, temperature, stop, seed):
        self.prompts.extend(prompts)
        return [[" answer \n"] for _ in prompts]


def test_respond_formats_with_alpaca_by_default(world):
    b = _EchoBackend()
    ex = world.general_test[:2]
    assert respond(b, ex, 5) == ["answer", "answer"]
    assert b.prompts == [alpaca_prompt(e.instruction, e.input or None) for e in ex]
    assert respond(b, ex[:1], 5, format_prompt=lambda e: "Q: " + e.instruction) == ["answer"]
    assert b.prompts[-1] == "Q: " + ex[0].instruction
    with pytest.raises(TypeError, match="TextBackend"):
        respond(object(), ex, 5)


@pytest.mark.usefixtures("one_torch_thread")
def test_safety_curve_counts_shares_in_examples_with_steps_fixed(world, tiny):
    df = safety_curve(tiny, world.general, world.safety, (0.0, 0.25), world.eval_sets(),
                      scorer=_ConstScorer([0.0] * 10), config=SafetyTuneConfig(
                          lr=1e-3, batch_size=4, steps=3), max_new_tokens=3)
    assert list(df["n_safety"]) == [0, 67]
    assert list(df["n_examples"]) == [200, 267]
    assert list(df["steps"]) == [3, 3]
    np.testing.assert_allclose(df["share"], df["n_safety"] / df["n_examples"])
    for col in ("harmful_compliance", "harmful_refusal", "lookalike_refusal",
                "lookalike_accuracy", "general_accuracy"):
        assert df[col].between(0, 1).all(), col
    assert len(df.attrs["responses"]) == 2
    with pytest.raises(ValueError, match="above the safety pool"):
        safety_curve(tiny, world.general, world.safety[:5], (0.25,), world.eval_sets(),
                     scorer=_ConstScorer([0.0]))
    with pytest.raises(ValueError, match=r"share must be in \[0, 1\)"):
        safety_curve(tiny, world.general, world.safety, (1.0,), world.eval_sets(),
                     scorer=_ConstScorer([0.0]))
    with pytest.raises(ValueError, match="exactly one"):
        safety_curve(tiny, world.general, world.safety, (0.1,), world.eval_sets(), ns=[3],
                     scorer=_ConstScorer([0.0]))
