"""Saving and loading :class:`CausalTransformer` checkpoints as single local files.

A checkpoint is one ``torch.save`` file holding ``{"format", "config", "state_dict", "extra"}``;
it is loaded with ``weights_only=True`` (no pickled code runs on load).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from .transformer import CausalTransformer, TransformerConfig

__all__ = ["load_checkpoint", "save_checkpoint"]

_FORMAT = "iclr24.causal_transformer.v1"


def save_checkpoint(model: CausalTransformer, path: str | os.PathLike,
                    extra: dict[str, Any] | None = None) -> Path:
    """Write ``model`` (config + weights, plus optional plain-data ``extra``) to ``path``."""
    if not isinstance(model, CausalTransformer):
        raise TypeError(f"model must be a CausalTransformer, got {type(model).__name__}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
    payload = {"format": _FORMAT, "config": model.config.to_dict(), "state_dict": state,
               "extra": dict(extra or {})}
    tmp = path.with_suffix(path.suffix + ".tmp")
    torch.save(payload, tmp)
    os.replace(tmp, path)  # atomic: a crash never leaves a half-written checkpoint
    return path


def load_checkpoint(path: str | os.PathLike, map_location: str | torch.device = "cpu"
                    ) -> tuple[CausalTransformer, dict[str, Any]]:
    """Read a file written by :func:`save_checkpoint`; returns ``(model in eval mode, extra)``."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint file at {path}")
    try:
        payload = torch.load(path, map_location=map_location, weights_only=True)
    except Exception as exc:
        raise ValueError(f"{path} is not a readable checkpoint: {exc}") from exc
    if not isinstance(payload, dict) or payload.get("format") != _FORMAT:
        raise ValueError(f"{path} is not an iclr24 causal-transformer checkpoint")
    config = dict(payload["config"])
    model = CausalTransformer(TransformerConfig(**config))
    model.load_state_dict(payload["state_dict"])
    model.to(map_location)
    model.eval()
    return model, dict(payload.get("extra", {}))
