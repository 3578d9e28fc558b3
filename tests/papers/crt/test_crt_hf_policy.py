"""RedTeamPPO on a Hugging Face causal LM (a tiny random Llama with a byte-level BPE tokenizer
trained here, SmolLM2's architecture and tokenizer family): from_lm, the conditional policy's
log-probabilities against a direct forward pass, a PPO step, and refused inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr24.papers.crt import CRTConfig, HashingEmbedder, HFRedTeamPolicy, RedTeamPPO

PROMPT = "Here are some instructions:\n1. Write a short poem about the sea.\n2."


@pytest.fixture(scope="module")
def tiny_hf():
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from iclr24.kits.language_models import HFCausalLM, train_subword_tokenizer

    sub = train_subword_tokenizer([PROMPT, "Tell me a joke about pirates.\n"] * 3, 300)
    tok = PreTrainedTokenizerFast(tokenizer_object=sub.tk, bos_token="<eos>",
                                  eos_token="<eos>")
    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=256)
    return HFCausalLM(LlamaForCausalLM(cfg), tok, name="tiny-llama")


def _ppo(lm, **kwargs):
    return RedTeamPPO.from_lm(lm, lambda toks, g: ["a reply"] * len(toks),
                              lambda texts: np.full(len(texts), 0.3),
                              CRTConfig(rollouts=4, ppo_epochs=1, lr=1e-2),
                              embedder=HashingEmbedder(), max_tokens=6, **kwargs)


def test_from_lm_takes_a_hugging_face_model_and_trains_it(tiny_hf, one_torch_thread):
    before = {k: v.clone() for k, v in tiny_hf.model.state_dict().items()}
    ppo = _ppo(tiny_hf, prompt=PROMPT)
    assert isinstance(ppo.policy, HFRedTeamPolicy) and isinstance(ppo.ref, HFRedTeamPolicy)
    newline = tiny_hf.tokenizer.hf("\n", add_special_tokens=False)["input_ids"]
    assert ppo.policy.eos_id == newline[0]  # a test case ends at the end of its line
    history = ppo.train(2)
    assert len(history.test_cases) == 8 and all(isinstance(t, str) for t in history.test_cases)
    assert all(np.isfinite(v) for s in history.stats for v in s.values())
    moved = [not torch.equal(p, q) for p, q in zip(ppo.policy.lm.state_dict().values(),
                                                    ppo.ref.lm.state_dict().values())]
    assert any(moved)  # the policy was updated, π_ref was not
    for k, v in tiny_hf.model.state_dict().items():  # the user's model is untouched
        assert torch.equal(v, before[k]), k
    for k, v in ppo.ref.lm.state_dict().items():
        assert torch.equal(v, before[k]), k


def test_conditional_log_probs_match_a_direct_forward_pass(tiny_hf, one_torch_thread):
    policy = _ppo(tiny_hf, prompt=PROMPT).policy.eval()
    tokens, mask = policy.sample(5, 6, temperature=1.0, top_p=1.0,
                                 generator=torch.Generator().manual_seed(3))
    logp, values, _ = policy(tokens)
    assert values.shape == tokens.shape == mask.shape == (5, 6)
    prompt = policy.prompt_ids.tolist()
    with torch.no_grad():
        for i in range(5):
            n = int(mask[i].sum())
            assert int(tokens[i, n - 1]) == policy.eos_id  # the stop token ends every row
            ids = torch.tensor([prompt + tokens[i, :n].tolist()])
            ref = torch.log_softmax(tiny_hf.model(input_ids=ids).logits[0].float(), -1)
            for t in range(n):  # log π(x_t | z, x_<t): the logits one position earlier
                want = float(ref[len(prompt) - 1 + t, int(tokens[i, t])])
                assert float(logp[i, t]) == pytest.approx(want, abs=1e-4)
            assert bool((logp[i, n:] == 0).all())


def test_hugging_face_inputs_are_checked(tiny_hf):
    with pytest.raises(TypeError, match="lm must be"):
        _ppo("HuggingFaceTB/SmolLM2-135M-Instruct")
    with pytest.raises(ValueError, match="tokenizer is required"):
        _ppo(tiny_hf.model)
    with pytest.raises(ValueError, match="prompt"):
        _ppo(tiny_hf, prompt="  ")
    with pytest.raises(ValueError, match="prompt_ids"):
        HFRedTeamPolicy(tiny_hf.model, [], 1)
    with pytest.raises(ValueError, match="eos_id"):
        HFRedTeamPolicy(tiny_hf.model, [1, 2], 10**6)
    with pytest.raises(TypeError, match="model"):
        HFRedTeamPolicy("llama", [1], 1)
    # a raw transformers model with its tokenizer is accepted (default prompt: the few-shot list)
    ppo = _ppo(tiny_hf.model, tokenizer=tiny_hf.tokenizer.hf)
    assert ppo.policy.prompt_ids.numel() > 10
