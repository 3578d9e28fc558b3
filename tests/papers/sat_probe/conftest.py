"""Small models and tokenizers shared by the sat_probe tests (built once per session)."""

import pytest


@pytest.fixture(scope="session")
def subword_tokenizer():
    from iclr24.kits.language_models import train_subword_tokenizer

    texts = [("User: Tell me the capital city of the country Burkina Faso.\n"
             "Assistant: The capital city is Ouagadougou.")] * 3 + [
        "Tell me the year the person Xanmopa was born in 1957.", "Paris is in France."]
    return train_subword_tokenizer(texts, 300)


@pytest.fixture(scope="session")
def hf_fast_tokenizer(subword_tokenizer):
    """A Hugging Face fast tokenizer (byte-level BPE with 'Ġ' spaces, as SmolLM2's)."""
    from transformers import PreTrainedTokenizerFast

    return PreTrainedTokenizerFast(tokenizer_object=subword_tokenizer.tk, bos_token="<eos>",
                                   eos_token="<eos>")


@pytest.fixture(scope="session")
def byte_lm():
    import torch

    from iclr24.kits.language_models import CausalTransformer, TransformerConfig, TransformerLM

    torch.manual_seed(0)
    return TransformerLM(CausalTransformer(TransformerConfig(d_model=32, n_layers=2, n_heads=2,
                                                             context_length=256)))


@pytest.fixture(scope="session")
def hf_lm(hf_fast_tokenizer):
    """A random tiny Llama (grouped-query attention: 4 query heads, 2 K/V heads)."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from iclr24.kits.language_models import HFCausalLM

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=len(hf_fast_tokenizer), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=160)
    return HFCausalLM(LlamaForCausalLM(cfg), hf_fast_tokenizer)
