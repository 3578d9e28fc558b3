"""load_hf_checkpoint's device argument, on a tiny checkpoint written here (no SmolLM2 load):
the weights land on the device asked for, inputs follow them, bad devices are refused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from iclr24.kits.language_models import HFCausalLM, LocalTextModel, load_hf_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_ckpt")
    tk = Tokenizer(models.BPE())
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(["def f(x): return x + 1", "the cat sat on the mat"] * 5,
                           trainers.BpeTrainer(vocab_size=300, special_tokens=["<eos>"],
                                               show_progress=False,
                                               initial_alphabet=pre_tokenizers.ByteLevel
                                               .alphabet()))
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<eos>", eos_token="<eos>",
                                  pad_token="<eos>")
    cfg = LlamaConfig(vocab_size=len(tok), hidden_size=16, intermediate_size=32,
                      num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                      max_position_embeddings=64, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_default_and_explicit_cpu_give_the_same_model(checkpoint):
    default = load_hf_checkpoint(checkpoint)
    explicit = load_hf_checkpoint(checkpoint, device=torch.device("cpu"))
    assert isinstance(default, HFCausalLM) and default.device.type == "cpu"
    assert explicit.device.type == "cpu"
    toks = default.tokenizer.encode(b"def f(x): return x")
    np.testing.assert_array_equal(default.log_probs(toks), explicit.log_probs(toks))
    out = LocalTextModel(explicit).generate(["the cat"], 4)
    assert len(out) == 1 and isinstance(out[0][0], str)


def test_the_weights_move_to_the_device_asked_for(checkpoint):
    # the meta device exists on every machine: every weight must be there, none left behind
    lm = load_hf_checkpoint(checkpoint, device="meta")
    assert lm.device.type == "meta"
    assert {p.device.type for p in lm.model.parameters()} == {"meta"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_checkpoint_scores_and_generates_like_the_cpu_one(checkpoint):
    cpu = load_hf_checkpoint(checkpoint)
    gpu = load_hf_checkpoint(checkpoint, device="cuda")
    assert gpu.device.type == "cuda"
    toks = cpu.tokenizer.encode(b"the cat sat")
    np.testing.assert_allclose(gpu.log_probs(toks), cpu.log_probs(toks), atol=1e-4)
    assert LocalTextModel(gpu).generate(["def f"], 3) == LocalTextModel(cpu).generate(["def f"], 3)


def test_bad_devices_are_refused_naming_the_argument(checkpoint):
    with pytest.raises(TypeError, match="device must be a str or torch.device"):
        load_hf_checkpoint(checkpoint, device=0)
    with pytest.raises(ValueError, match="device must name a torch device"):
        load_hf_checkpoint(checkpoint, device="gpu")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match=r"device 'cuda' is not available"):
            load_hf_checkpoint(checkpoint, device="cuda")
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    with pytest.raises(ValueError, match="is not available here"):
        load_hf_checkpoint(checkpoint, device=f"cuda:{count}")
    # the device is checked before anything is read from disk
    with pytest.raises(ValueError, match="device"):
        load_hf_checkpoint(checkpoint / "missing", device="gpu")
