"""Load the released L2S checkpoints (official repository zcaicaros/L2S, folder ``saved_model/``)
into :class:`L2SPolicy`.

An official ``.pth`` file is a bare ``state_dict`` (an ``OrderedDict``, no wrapper) of the
official ``model/actor.Actor`` with ``embedding_type="gin+dghan"``, saved by ``torch.save(
policy.state_dict(), ...)`` in ``n-step_reinforce.py``; its name records the setting, e.g.
``incumbent_10x10[1,99]_fdd-divide-mwkr_yaoxin_1_128_4_4_gin+dghan_1_0.0_5e-05_..._10.pth`` =
hidden 128, 4 embedding layers, 4 policy blocks, 1 head, dropout 0. The key layout maps onto ours
one to one, except that the file was written by an old PyTorch Geometric whose ``GATConv`` named
its parameters differently:

=========================================================  =====================================
official key                                                :class:`L2SPolicy` key
=========================================================  =====================================
``embedding_gin.GIN_layers.{i}.{eps,nn.*}``                 ``gin.{i}.{eps,nn.*}``
``embedding_dghan.DGHAN_layers.{i}.opsgrp_conv.att_l``      ``gat.{i}.job.att_src`` (source side)
``embedding_dghan.DGHAN_layers.{i}.opsgrp_conv.att_r``      ``gat.{i}.job.att_dst`` (target side)
``embedding_dghan.DGHAN_layers.{i}.opsgrp_conv.lin_l.*``    ``gat.{i}.job.lin.*``
``embedding_dghan.DGHAN_layers.{i}.opsgrp_conv.lin_r.*``    (the same tensor as ``lin_l``: dropped)
``embedding_dghan.DGHAN_layers.{i}.opsgrp_conv.bias``       ``gat.{i}.job.bias``
``...mchgrp_conv.*``                                        ``gat.{i}.mch.*`` (same renaming)
``policy.{i}.{0,2}.*``                                      ``head.{i}.{0,2}.*``
=========================================================  =====================================

(The old ``GATConv`` scored an arc j -> i by ``att_l . W x_j + att_r . W x_i`` with one shared
``W`` stored twice, as ``lin_l`` and ``lin_r``; the current one names the same terms ``att_src``
and ``att_dst`` and stores ``W`` once as ``lin``.) The official files of the "gin" or "dghan"
ablations lack one of the two modules and are refused: :class:`L2SPolicy` is the "gin+dghan"
network.
"""

from __future__ import annotations

import os
import pickle
import re
from collections.abc import Mapping
from typing import Any

import torch

from .policy import L2SPolicy

__all__ = ["from_official", "official_to_policy_state"]

_GIN = re.compile(r"embedding_gin\.GIN_layers\.(\d+)\.(.+)")
_GAT = re.compile(r"embedding_dghan\.DGHAN_layers\.(\d+)\.(opsgrp|mchgrp)_conv\.(.+)")
_HEAD = re.compile(r"policy\.(\d+)\.(.+)")
_GAT_RENAME = {"att_l": "att_src", "att_r": "att_dst", "lin_l.weight": "lin.weight",
               "bias": "bias"}
_RELATION = {"opsgrp": "job", "mchgrp": "mch"}


def official_to_policy_state(state: Mapping[str, Any]) -> tuple[dict[str, torch.Tensor],
                                                                 dict[str, str], list[str]]:
    """Rename an official ``Actor`` state_dict into :class:`L2SPolicy` keys (table in the module
    docstring). Returns (our state_dict, our key -> official key, official keys that match no
    parameter of ours). Raises ``TypeError`` for a value that is not a tensor and ``ValueError``
    where ``lin_r`` differs from ``lin_l`` (a file the shared-weight ``GATConv`` cannot hold)."""
    if not isinstance(state, Mapping):
        raise TypeError(f"state must be a mapping of parameter name -> tensor (the official "
                        f"file's state_dict), got {type(state).__name__}")
    out: dict[str, torch.Tensor] = {}
    source: dict[str, str] = {}
    unexpected: list[str] = []
    for key, value in state.items():
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"state[{key!r}] must be a tensor, got {type(value).__name__}")
        new = None
        if m := _GIN.fullmatch(key):
            new = f"gin.{m[1]}.{m[2]}"
        elif m := _GAT.fullmatch(key):
            layer, group, name = m[1], m[2], m[3]
            if name == "lin_r.weight":
                twin = state.get(key.replace("lin_r.weight", "lin_l.weight"))
                if isinstance(twin, torch.Tensor) and not (
                        twin.shape == value.shape and torch.equal(twin, value)):
                    raise ValueError(f"state[{key!r}] differs from its lin_l twin: the official "
                                     f"GATConv shares one weight between them, this file does "
                                     f"not")
                continue
            if name in _GAT_RENAME:
                new = f"gat.{layer}.{_RELATION[group]}.{_GAT_RENAME[name]}"
        elif m := _HEAD.fullmatch(key):
            new = f"head.{m[1]}.{m[2]}"
        if new is None:
            unexpected.append(key)
        else:
            out[new] = value
            source[new] = key
    return out, source, unexpected


def _official_name(key: str) -> str:
    """The official key of one of our keys (the inverse of the table)."""
    parts = key.split(".", 3)
    if parts[0] == "gin":
        return f"embedding_gin.GIN_layers.{key[len('gin.'):]}"
    if parts[0] == "gat" and len(parts) == 4:
        inverse = {v: k for k, v in _GAT_RENAME.items()}
        group = {v: k for k, v in _RELATION.items()}[parts[2]]
        return (f"embedding_dghan.DGHAN_layers.{parts[1]}.{group}_conv."
                f"{inverse.get(parts[3], parts[3])}")
    if parts[0] == "head":
        return f"policy.{key[len('head.'):]}"
    return key


def _layer_count(state: Mapping[str, Any], pattern: re.Pattern) -> int:
    ids = {int(m[1]) for k in state if (m := pattern.fullmatch(k))}
    return max(ids) + 1 if ids else 0


def _guess_architecture(state: Mapping[str, Any]) -> str:
    """The L2SPolicy arguments the file's shapes suggest (for the error message)."""
    try:
        hidden = int(state["policy.0.0.weight"].shape[0])
        att = state.get("embedding_dghan.DGHAN_layers.0.opsgrp_conv.att_l")
        heads = int(att.shape[1]) if isinstance(att, torch.Tensor) and \
            _layer_count(state, _GAT) > 1 else 1
        return (f" The file's shapes suggest L2SPolicy(hidden={hidden}, "
                f"gin_layers={_layer_count(state, _GIN)}, gat_layers={_layer_count(state, _GAT)},"
                f" heads={heads}, policy_layers={_layer_count(state, _HEAD)}); pass those to "
                f"from_official.")
    except (KeyError, AttributeError, IndexError, TypeError):
        return ""


def from_official(path: str | os.PathLike, **policy_kwargs: Any) -> L2SPolicy:
    """An :class:`L2SPolicy` holding the weights of an official L2S checkpoint file.

    path: a ``saved_model/*.pth`` file of zcaicaros/L2S (the user provides it; nothing is
    downloaded). policy_kwargs: the architecture, passed to :class:`L2SPolicy`; its defaults are
    the official training script's (hidden 128, 4 GIN + 4 DGHAN layers, 1 head, 4 policy
    blocks), which is the setting of the released ``..._gin+dghan_1_0.0_...`` files; the
    ``..._gin+dghan_2_...`` files need ``heads=2``. Loading is strict: missing keys, unexpected
    keys and shape mismatches raise ``ValueError`` naming them (in the official names). The
    returned policy is in eval mode; :func:`~.training.improve` normalises GIN's BatchNorm with batch
    statistics as the official test script does."""
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"path must be a file path, got {type(path).__name__}")
    if not os.path.isfile(path):
        raise FileNotFoundError(f"path {os.fspath(path)!r} is not a file (pass a saved_model/*.pth "
                                f"file of the official L2S repository)")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, KeyError) as exc:
        raise ValueError(f"path {os.fspath(path)!r} is not a torch state_dict file "
                         f"({type(exc).__name__}: {exc})") from None
    if not isinstance(state, Mapping):
        raise TypeError(f"path {os.fspath(path)!r} holds a {type(state).__name__}, not the "
                        f"official Actor's state_dict (an OrderedDict of tensors)")
    if not any(_GAT.fullmatch(k) for k in state) or not any(_GIN.fullmatch(k) for k in state):
        missing = "embedding_dghan.*" if any(_GIN.fullmatch(k) for k in state) else \
            "embedding_gin.*"
        raise ValueError(f"path {os.fspath(path)!r} has no {missing} keys: it is not a "
                         f"'gin+dghan' L2S checkpoint (the 'gin' and 'dghan' ablations are not "
                         f"supported); its first keys: {list(state)[:4]}")
    converted, source, unexpected = official_to_policy_state(state)
    policy = L2SPolicy(**policy_kwargs)
    expected = policy.state_dict()
    hint = _guess_architecture(state)
    missing = [_official_name(k) for k in expected if k not in converted]
    if missing or unexpected:
        what = [f"{label} {names[:8]}{' ...' if len(names) > 8 else ''}"
                for label, names in (("missing keys", missing), ("unexpected keys", unexpected))
                if names]
        args = ", ".join(f"{k}={v!r}" for k, v in policy_kwargs.items())
        raise ValueError(f"official checkpoint {os.fspath(path)!r} does not match "
                         f"L2SPolicy({args}): {'; '.join(what)}.{hint}")
    extra = [source[k] for k in converted if k not in expected]
    if extra:
        raise ValueError(f"official checkpoint {os.fspath(path)!r} has keys this architecture "
                         f"lacks: {extra[:8]}{' ...' if len(extra) > 8 else ''}.{hint}")
    wrong = [f"{source[k]} {tuple(converted[k].shape)} (expected {tuple(v.shape)})"
             for k, v in expected.items() if converted[k].shape != v.shape]
    if wrong:
        raise ValueError(f"official checkpoint {os.fspath(path)!r} has wrong shapes: "
                         f"{'; '.join(wrong[:6])}{' ...' if len(wrong) > 6 else ''}.{hint}")
    policy.load_state_dict(converted, strict=True)
    return policy.eval()
