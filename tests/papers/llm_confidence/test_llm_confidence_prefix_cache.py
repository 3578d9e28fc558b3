"""SharedPrefixTextModel equals LocalTextModel (greedy text, seeded samples) on a tiny random
Llama with SmolLM2's tokenizer (loads only the tokenizer from the SmolLM2 cache)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def tiny_llama():
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from iclr24.kits.language_models import HFCausalLM
    from iclr24.kits.language_models.pretrained import smollm2_cache

    folder, _ = smollm2_cache()
    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=256, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    return HFCausalLM(LlamaForCausalLM(cfg), tok, name="tiny")


def test_shared_prefix_generation_equals_the_plain_backend(tiny_llama):
    from iclr24.kits.language_models import LocalTextModel
    from iclr24.papers.llm_confidence import SharedPrefixTextModel

    ref = LocalTextModel(tiny_llama)
    fast = SharedPrefixTextModel(tiny_llama, max_batch=3)
    head = "Read the question and answer it. Question: "
    prompts = [head + "What is 2 + 3?", head + "How many legs does a spider have?",
               head + "What is 7 + 1?"]
    assert fast.generate(prompts, 6) == ref.generate(prompts, 6)
    a = fast.generate(prompts, 6, temperature=0.8, n=4, seed=5)
    assert a == ref.generate(prompts, 6, temperature=0.8, n=4, seed=5)
    assert a != fast.generate(prompts, 6, temperature=0.8, n=4, seed=6)
    # no shared prefix at all, stop strings, and the logprobs delegate
    other = ["alpha beta", "gamma"]
    assert fast.generate(other, 5, stop=[" "]) == ref.generate(other, 5, stop=[" "])
    assert fast.logprobs("alpha", " beta") == ref.logprobs("alpha", " beta")
    assert fast.generate(other, 0) == [[""], [""]]
    with pytest.raises(ValueError, match="context_length"):
        fast.generate(["word " * 300], 4)
    with pytest.raises(ValueError, match="n must"):
        fast.generate(other, 4, n=0)
    with pytest.raises(TypeError, match="HFCausalLM"):
        SharedPrefixTextModel(object())
