"""PrefixCachedTextModel equals LocalTextModel (greedy and seeded samples, unequal prompt
lengths, stops) and scores samples by their log-probabilities, on a tiny random Llama with
SmolLM2's tokenizer (only the tokenizer is read from the SmolLM2 cache)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow]


@pytest.fixture(scope="module")
def tiny_llama():
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from iclr24.kits.language_models import HFCausalLM
    from iclr24.kits.language_models.pretrained import smollm2_cache

    folder, _ = smollm2_cache()
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                      max_position_embeddings=256, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    return HFCausalLM(LlamaForCausalLM(cfg), tok, name="tiny")


def test_prefix_cached_generation_equals_the_plain_backend(tiny_llama, one_torch_thread):
    from iclr24.kits.language_models import LocalTextModel, PrefixCachedTextModel

    ref = LocalTextModel(tiny_llama)
    fast = PrefixCachedTextModel(tiny_llama, max_batch=3, min_shared=4)
    head = "/*\ncol : team | wins\nrow 1 : oslo otters | 3\n*/\nStatement: "
    prompts = [head + "oslo otters has the most wins", head + "x",
               head + "the team with the fewest wins is lyon lynx", "unrelated words"]
    assert fast.generate(prompts, 6) == ref.generate(prompts, 6)
    a = fast.generate(prompts, 5, temperature=0.9, n=3, seed=4)
    assert a == ref.generate(prompts, 5, temperature=0.9, n=3, seed=4)
    assert fast.generate(prompts, 5, stop=[" "]) == ref.generate(prompts, 5, stop=[" "])
    # a score is the log-probability of the generated token(s): one greedy token scores the
    # maximum of the next-token distribution after the prompt
    for p, row in zip(prompts, fast.generate_scored(prompts, 1)):
        ids = tiny_llama.tokenizer.encode(p.encode())
        best = tiny_llama.log_probs(ids + [0])[-1].max()
        assert row[0][1] == pytest.approx(best, abs=1e-4)
    # a second call reuses the cached prefix (fewer tokens prefilled), same texts
    before = fast.prefill_tokens
    again = fast.generate(prompts[:3], 6)
    assert again == ref.generate(prompts[:3], 6)
    assert fast.prefill_tokens - before < sum(len(p) for p in prompts[:3]) // 2
    assert fast.generate(prompts, 0) == [[""]] * 4
    assert fast.logprobs("alpha", " beta") == ref.logprobs("alpha", " beta")  # delegated
    with pytest.raises(ValueError, match="context_length"):
        fast.generate(["word " * 300], 4)
    with pytest.raises(ValueError, match="n must"):
        fast.generate(prompts, 4, n=0)
    with pytest.raises(TypeError, match="HFCausalLM"):
        PrefixCachedTextModel(object())
    with pytest.raises(ValueError, match="max_batch"):
        PrefixCachedTextModel(tiny_llama, max_batch=0)
