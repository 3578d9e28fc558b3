"""Frozen pretrained parts and an on-disk cache of the small stand-ins trained here.

The vision papers (daefr, selfhdr, concept_axes, zip_clip_sam, oracle_robustness) build on big
pretrained models (VQGAN, CLIP, SAM, BLIP-2, DeepFloyd, VGG). Their pipelines take those parts
as interfaces; the claims plug in small stand-ins trained here once and then frozen.

- :func:`freeze` turns a module into a frozen part in place: no parameter takes gradients and it
  is in eval mode. Gradients still flow *through* it to its inputs (concept_axes needs that).
- :class:`Frozen` wraps a frozen part so that a parent's ``.train()`` cannot switch it back to
  training mode (dropout, batch-norm statistics).
- :func:`cached_standin` trains a stand-in once per machine and loads it afterwards: the state
  dict is stored through :func:`iclr24.kits.disk_cache.cached_directory` under a key made of
  the stand-in's name, its config, the seed, the torch version and the source text of the two
  callables that build and train it, so editing either retrains instead of loading a stale copy.
  Several claims (or processes) asking for the same stand-in share one copy.
"""

from __future__ import annotations

import hashlib
import inspect
import os
from collections.abc import Callable, Mapping
from typing import Any

import torch
from torch import nn

from .disk_cache import cached_directory

__all__ = ["Frozen", "cached_standin", "freeze", "is_frozen"]

STATE_FILE = "state.pt"


def freeze(module: nn.Module) -> nn.Module:
    """Freeze ``module`` in place (``requires_grad=False`` on every parameter, eval mode) and
    return it."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    module.requires_grad_(False)
    module.eval()
    return module


def is_frozen(module: nn.Module) -> bool:
    """True when no parameter of ``module`` takes gradients and every submodule is in eval
    mode."""
    if not isinstance(module, nn.Module):
        raise TypeError(f"module must be a torch.nn.Module, got {type(module).__name__}")
    return (not any(p.requires_grad for p in module.parameters())
            and not any(m.training for m in module.modules()))


class Frozen(nn.Module):
    """A frozen part that stays in eval mode inside a model that is being trained.

    ``Frozen(part)(x)`` is ``part(x)``; ``Frozen(part).part`` is the part itself.
    """

    def __init__(self, part: nn.Module) -> None:
        super().__init__()
        self.part = freeze(part)

    def train(self, mode: bool = True) -> Frozen:
        super().train(mode)
        self.part.eval()
        return self

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.part(*args, **kwargs)


def _source_digest(fn: Callable[..., Any]) -> str:
    try:
        text = inspect.getsource(fn)
    except (OSError, TypeError):  # built-ins, lambdas typed at a prompt
        text = getattr(fn, "__qualname__", repr(type(fn)))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def cached_standin(name: str, config: Mapping[str, Any], seed: int,
                   make: Callable[[], nn.Module], train: Callable[[nn.Module], None], *,
                   root: str | os.PathLike[str] | None = None) -> nn.Module:
    """A trained, frozen stand-in, trained by this call only if no valid cached copy exists.

    name:   a folder name for this kind of stand-in, e.g. ``"daefr-vq-hq"``.
    config: JSON-able mapping of everything the weights depend on besides the seed and the code
            (sizes, steps, learning rate, data subset...).
    seed:   the training seed (part of the key; ``train`` must use it to be deterministic).
    make:   builds the untrained module (called on every call: it gives the architecture the
            stored state dict is loaded into).
    train:  trains the module it is given in place (called only when the cache misses).
    root:   cache root (default :func:`iclr24.kits.disk_cache.cache_root`).

    Returns the module, frozen (:func:`freeze`), on the CPU.
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    if not callable(make) or not callable(train):
        raise TypeError("make and train must be callables")
    if not isinstance(config, Mapping):
        raise TypeError(f"config must be a mapping, got {type(config).__name__}")
    model = make()
    if not isinstance(model, nn.Module):
        raise TypeError(f"make() must return a torch.nn.Module, got {type(model).__name__}")
    key = {"config": dict(config), "seed": seed, "torch": torch.__version__,
           "make": _source_digest(make), "train": _source_digest(train)}

    def build(folder: Any) -> None:
        train(model)
        torch.save(model.state_dict(), folder / STATE_FILE)

    folder, built = cached_directory(name, key, build, root=root)
    if not built:
        state = torch.load(folder / STATE_FILE, map_location="cpu", weights_only=True)
        model.load_state_dict(state)
    return freeze(model.cpu())
