"""Cosine similarity between a network and its globally L1-pruned self (paper Sec. 3).

theta is the concatenation of the parameter tensors the pruning routine reaches (the official demo:
every module's ``weight`` and ``bias``, BatchNorm included). Pruning by masking zeroes entries, so

    CS(p) = <theta, theta_p> / (|theta| |theta_p|) = |theta_p| / |theta|
          = sqrt(1 - sum_{pruned} theta_i^2 / sum theta_i^2),

and global L1 pruning zeroes the k = round(p n) smallest |theta_i|: one sort of theta_i^2 and a
cumulative sum give the whole curve (no model copies). The paper's theorem: for a fixed k, no
other choice of zeroed entries gives a larger CS (the removed squared mass is smallest).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

__all__ = [
    "DEFAULT_AMOUNTS",
    "cosine_prune_curve",
    "cosine_similarity",
    "flatten_params",
    "masked_cosine",
    "prunable_fraction",
    "prunable_tensors",
    "prune_count",
    "utopia_prune_amount",
]

DEFAULT_AMOUNTS = np.linspace(0.0, 1.0, 101)


def _check_include(include: Sequence[str]) -> tuple[str, ...]:
    include = tuple(include)
    if not include or not all(isinstance(n, str) for n in include):
        raise ValueError(f"include must be a non-empty sequence of parameter names, got "
                         f"{include!r}")
    return include


def prunable_tensors(model: nn.Module, include: Sequence[str] = ("weight", "bias")
                     ) -> list[tuple[nn.Module, str]]:
    """(module, name) for every parameter named in ``include`` of every module, in module
    order; a tensor under torch's pruning reparametrisation (``name_orig`` + mask) counts."""
    include = _check_include(include)
    out = []
    for module in model.modules():
        for name in include:
            if name in module._parameters and module._parameters[name] is not None \
                    or f"{name}_orig" in module._parameters:
                out.append((module, name))
    if not out:
        raise ValueError(f"model has no parameters named {include}")
    return out


def flatten_params(model: nn.Module, include: Sequence[str] = ("weight", "bias")) -> torch.Tensor:
    """theta: the effective (masked, if pruned with masks) tensors named in ``include`` of every
    module, flattened and concatenated in module order. Returns a detached 1-D tensor."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    return torch.cat([getattr(m, n).detach().reshape(-1)
                      for m, n in prunable_tensors(model, include)])


def cosine_similarity(a: torch.Tensor | np.ndarray, b: torch.Tensor | np.ndarray) -> float:
    """<a, b> / (|a| |b|) clipped to [-1, 1]; 0 when either vector is zero (the paper's
    NaN -> 0 convention)."""
    a = np.asarray(a, dtype=np.float64).ravel()
    b = np.asarray(b, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise ValueError(f"vectors must have equal sizes, got {a.size} and {b.size}")
    na, nb = np.linalg.norm(a), np.linalg.norm(b)
    if na == 0 or nb == 0:
        return 0.0
    return float(np.clip(a @ b / (na * nb), -1.0, 1.0))


def masked_cosine(theta: np.ndarray, pruned: np.ndarray) -> float:
    """CS between theta and theta with the entries of the boolean mask ``pruned`` zeroed."""
    theta = np.asarray(theta, dtype=np.float64)
    return cosine_similarity(theta, np.where(pruned, 0.0, theta))


def _check_amounts(amounts: Sequence[float] | np.ndarray) -> np.ndarray:
    a = np.asarray(amounts, dtype=np.float64)
    if a.ndim != 1 or a.size == 0:
        raise ValueError(f"amounts must be a non-empty 1-D sequence, got shape {a.shape}")
    if not np.all((a >= 0) & (a <= 1)):
        raise ValueError(f"prune amounts must lie in [0, 1], got [{a.min()}, {a.max()}]")
    return a


def prune_count(amount: float, n: int) -> int:
    """How many of n entries torch's pruning removes for a fractional ``amount``:
    round(amount * n) (Python's round, as ``torch.nn.utils.prune`` does)."""
    return round(float(amount) * n)


def _theta(model_or_vector: nn.Module | torch.Tensor | np.ndarray, include: Sequence[str]
           ) -> np.ndarray:
    """theta as a finite float64 vector (a NaN weight would make every CS NaN)."""
    if isinstance(model_or_vector, nn.Module):
        theta = flatten_params(model_or_vector, include).double().cpu().numpy()
    else:
        theta = np.asarray(model_or_vector, dtype=np.float64).ravel()
    if theta.size == 0:
        raise ValueError("the parameter vector is empty")
    if not np.all(np.isfinite(theta)):
        raise ValueError(f"the parameters contain {int(np.sum(~np.isfinite(theta)))} NaN or "
                         "infinite values: the cosine curve is undefined")
    return theta


def cosine_prune_curve(model_or_vector: nn.Module | torch.Tensor | np.ndarray,
                       amounts: Sequence[float] | np.ndarray = DEFAULT_AMOUNTS,
                       include: Sequence[str] = ("weight", "bias")) -> np.ndarray:
    """CS(p) of global L1 pruning for each amount p (same shape as ``amounts``), analytically:
    CS(p) = sqrt(1 - C[k] / C[n]) with C the cumulative sum of the ascending theta_i^2 and
    k = round(p n). CS(1) = 0 (NaN -> 0); a zero vector gives 0 everywhere."""
    a = _check_amounts(amounts)
    theta = _theta(model_or_vector, include)
    sq = np.sort(theta**2)
    cum = np.concatenate([[0.0], np.cumsum(sq)])
    total = cum[-1]
    if total == 0:
        return np.zeros_like(a)
    k = np.array([prune_count(p, theta.size) for p in a])
    kept = np.clip(1.0 - cum[k] / total, 0.0, 1.0)
    cs = np.sqrt(kept)  # |theta_p| / |theta|
    cs[k == theta.size] = 0.0
    return cs


def utopia_prune_amount(amounts: Sequence[float] | np.ndarray, cs: Sequence[float] | np.ndarray
                        ) -> float:
    """p* = argmin_p |(CS(p), p) - (1, 1)|_2, the point of the curve nearest the utopia point
    (full similarity at full pruning). amounts, cs: (m,)."""
    a = _check_amounts(amounts)
    c = np.asarray(cs, dtype=np.float64)
    if c.shape != a.shape:
        raise ValueError(f"cs must have the shape of amounts {a.shape}, got {c.shape}")
    return float(a[np.argmin(np.hypot(1.0 - c, 1.0 - a))])


def prunable_fraction(model_or_vector: nn.Module | torch.Tensor | np.ndarray,
                      cs_floor: float = 0.95, include: Sequence[str] = ("weight", "bias")
                      ) -> float:
    """Largest k/n such that L1-pruning k of the n entries keeps CS >= ``cs_floor``:
    C[k] / C[n] <= 1 - cs_floor^2 with C the cumulative ascending squared magnitudes."""
    if not 0 < cs_floor < 1:
        raise ValueError(f"cs_floor must be in (0, 1), got {cs_floor!r}")
    theta = _theta(model_or_vector, include)
    cum = np.concatenate([[0.0], np.cumsum(np.sort(theta**2))])
    if cum[-1] == 0:
        raise ValueError("the parameter vector is zero")
    k = int(np.searchsorted(cum / cum[-1], 1.0 - cs_floor**2, side="right")) - 1
    return k / theta.size
