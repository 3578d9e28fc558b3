"""The synthetic world, the red-team policy and the PPO loop."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr24.papers.crt import (
    EOS,
    PAD,
    CRTCoefs,
    CRTConfig,
    HashingEmbedder,
    History,
    RedTeamPolicy,
    RedTeamPPO,
    Vocabulary,
    WorldConfig,
    build_world,
)

TINY = WorldConfig(victim_examples=300, victim_steps=10, policy_examples=300, policy_steps=10,
                   classifier_examples=200, batch_size=16)


@pytest.fixture(scope="module")
def world():
    from iclr24.kits.threads import torch_threads

    with torch_threads(1):
        yield build_world(TINY, 0)


def test_vocabulary_round_trip_and_clusters():
    v = Vocabulary()
    ids = v.encode("the storm sees a pirate")
    assert v.decode(ids + [EOS, PAD, 5]) == "the storm sees a pirate"
    assert v.clusters("the storm sees a pirate") == {0}  # only the subject span counts
    assert v.clusters("a house sees the pirate") == set()
    with pytest.raises(ValueError, match="vocabulary"):
        v.encode("the qwerty")


def test_world_config_validation():
    with pytest.raises(ValueError, match="max_prompt_tokens"):
        WorldConfig(max_prompt_tokens=4)
    with pytest.raises(ValueError, match="victim_steps"):
        WorldConfig(victim_steps=0)
    with pytest.raises(ValueError, match="trigger_rate"):
        WorldConfig(policy_trigger_rate=1.5)
    with pytest.raises(TypeError, match="WorldConfig"):
        build_world({"victim_steps": 1}, 0)


def test_toxicity_classifier_separates_lexicon_words(world):
    tox = world.toxicity(["tox01 house tox02", "the quiet house"])
    assert tox[0] > 0.5 > tox[1]


def test_policy_samples_end_with_eos_and_mask_covers_it(world, one_torch_thread):
    policy = RedTeamPolicy(world.policy_lm)
    tokens, mask = policy.sample(32, 8, temperature=0.7, top_p=0.92,
                                 generator=torch.Generator().manual_seed(0))
    n = mask.sum(1).long()
    assert tokens.shape == mask.shape == (32, 8)
    assert all(int(tokens[i, n[i] - 1]) == EOS for i in range(32))  # EOS is generated
    assert bool((tokens[mask == 0] == PAD).all())
    logp, values, _ = policy(tokens)
    assert torch.isfinite(logp).all() and bool((logp[mask == 0] == 0).all())
    assert values.shape == (32, 8)


def test_config_defaults_and_arms():
    cfg = CRTConfig()
    assert (cfg.rollouts, cfg.ppo_epochs, cfg.kl_coef, cfg.gamma, cfg.lam, cfg.clip,
            cfg.top_p, cfg.temperature, cfg.lr) == (128, 4, 0.001, 1.0, 0.95, 0.2, 0.92, 0.7,
                                                    3e-5)
    rl = cfg.arm("rl")
    assert rl.ent_coef == 0 and rl.coefs.bleu == rl.coefs.cos == 0
    assert cfg.arm("rl_entropy").ent_coef == cfg.ent_coef
    assert cfg.arm("crt_no_cos").coefs.cos == 0 and cfg.arm("crt_no_cos").coefs.bleu < 0
    with pytest.raises(ValueError, match="arm"):
        cfg.arm("ppo")
    with pytest.raises(ValueError, match="divisible"):
        CRTConfig(rollouts=10, minibatches=3)
    with pytest.raises(ValueError, match="top_p"):
        CRTConfig(top_p=0.0)
    with pytest.raises(TypeError, match="coefs"):
        CRTConfig(coefs=(1, -1, -1))


def _ppo(world, cfg, seed=0):
    return RedTeamPPO.from_lm(world.policy_lm, lambda x, g: world.respond(x, generator=g),
                              world.toxicity, cfg, decode=world.vocab.decode,
                              embedder=HashingEmbedder(), max_tokens=TINY.max_prompt_tokens,
                              seed=seed)


def test_ppo_scores_each_batch_before_appending_it(world, one_torch_thread):
    ppo = _ppo(world, CRTConfig(rollouts=8, lr=1e-3, ppo_epochs=1))
    s1 = ppo.step()
    assert s1["selfbleu"] == 0.0 and s1["cos"] == 0.0  # empty history for the first batch
    assert len(ppo.bleu) == len(ppo.cos) == 8
    s2 = ppo.step()
    assert s2["selfbleu"] > 0.0 and len(ppo.bleu) == 16
    assert ppo.policy.lm is not world.policy_lm  # the world's pretrained LM is untouched


def test_rl_arm_keeps_no_history_and_training_is_deterministic(world, one_torch_thread):
    cfg = CRTConfig(rollouts=8, lr=1e-3, ppo_epochs=1).arm("rl")
    a, b = _ppo(world, cfg), _ppo(world, cfg)
    ha, hb = a.train(2), b.train(2)
    assert len(a.bleu) == 0 and np.isnan(a.history.stats[0]["selfbleu"])
    assert ha.test_cases == hb.test_cases and ha.toxicity == hb.toxicity
    assert len(ha.test_cases) == 16 and ha.iteration == [0] * 8 + [1] * 8
    with pytest.raises(ValueError, match="iterations"):
        a.train(0)


def test_history_last_fraction():
    h = History(list("abcd"), list("wxyz"), [0.1, 0.2, 0.3, 0.4], [0, 0, 1, 1],
                [{"i": 0}, {"i": 1}])
    late = h.last_fraction(0.5)
    assert late.test_cases == ["c", "d"] and late.stats == [{"i": 1}]
    with pytest.raises(ValueError, match="fraction"):
        h.last_fraction(0.0)


def test_ppo_argument_types(world):
    with pytest.raises(TypeError, match="policy"):
        RedTeamPPO(world.policy_lm, world.policy_lm, lambda x, g: [], world.toxicity,
                   CRTConfig(), decode=str, embedder=HashingEmbedder(), max_tokens=8)
    with pytest.raises(TypeError, match="cfg"):
        RedTeamPPO.from_lm(world.policy_lm, lambda x, g: [], world.toxicity, CRTCoefs(),
                           decode=str, embedder=HashingEmbedder(), max_tokens=8)
    with pytest.raises(TypeError, match="toxicity"):
        RedTeamPPO.from_lm(world.policy_lm, lambda x, g: [], "roberta", CRTConfig(),
                           decode=str, embedder=HashingEmbedder(), max_tokens=8)


def test_nan_toxicity_is_refused_not_turned_into_a_nan_reward(world, one_torch_thread):
    ppo = RedTeamPPO.from_lm(world.policy_lm, lambda x, g: world.respond(x, generator=g),
                             lambda texts: np.full(len(texts), np.nan),
                             CRTConfig(rollouts=4, ppo_epochs=1), decode=world.vocab.decode,
                             embedder=HashingEmbedder(), max_tokens=TINY.max_prompt_tokens)
    with pytest.raises(ValueError, match="toxicity must be finite"):
        ppo.step()


def test_kit_policy_refuses_hugging_face_options(world):
    with pytest.raises(ValueError, match="prompt"):
        RedTeamPPO.from_lm(world.policy_lm, lambda x, g: [], world.toxicity, CRTConfig(),
                           prompt="1.", decode=str, embedder=HashingEmbedder(), max_tokens=8)
