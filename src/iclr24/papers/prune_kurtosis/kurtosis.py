"""Kurtosis of the parameter distribution and the safe-prune recipe (paper Sec. 4-5).

kappa_t = Pearson kurtosis (scipy ``kurtosis(..., fisher=False)``: a Gaussian gives 3, a uniform
1.8) of each parameter tensor; kappa-kappa = Pearson kurtosis of the list {kappa_t} (weights and
biases are separate tensors). The modifier

    m = 1 / log2(kk)  if kk < e,    m = 1 / ln(kk)  otherwise,

scales the utopia amount: p_safe = p* m. m > 1 when kk < 2 and is undefined for kk <= 1, so
``safe_prune_amount`` rejects kk <= 1 and clips p_safe to [0, p*] (a "safe" amount never exceeds
the utopia point; the paper leaves the m > 1 case open).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from torch import nn

from .cosine import DEFAULT_AMOUNTS, cosine_prune_curve, prunable_tensors, utopia_prune_amount

__all__ = [
    "kurtosis_modifier",
    "kurtosis_of_kurtoses",
    "pearson_kurtosis",
    "safe_prune_amount",
    "tensor_kurtoses",
]


def pearson_kurtosis(x: np.ndarray) -> float:
    """E[(x - mu)^4] / sigma^4 (scipy, ``fisher=False``, biased); NaN for constant input."""
    from scipy.stats import kurtosis

    x = np.asarray(x, dtype=np.float64).ravel()
    if not np.all(np.isfinite(x)):
        raise ValueError("x contains NaN or infinite values")
    if x.size < 2 or np.ptp(x) == 0:
        return math.nan
    return float(kurtosis(x, fisher=False))


def tensor_kurtoses(model: nn.Module, include: Sequence[str] = ("weight", "bias")) -> np.ndarray:
    """kappa_t for every tensor named in ``include`` (effective masked values). Tensors with
    fewer than two distinct values (e.g. zero-initialised biases) have no kurtosis and are
    skipped. Raises ValueError naming the first tensor with a NaN or infinite value."""
    ks = []
    for m, n in prunable_tensors(model, include):
        values = getattr(m, n).detach().cpu().numpy()
        if not np.all(np.isfinite(values)):
            raise ValueError(f"parameter {type(m).__name__}.{n} contains NaN or infinite "
                             "values: its kurtosis is undefined")
        ks.append(pearson_kurtosis(values))
    return np.array([k for k in ks if math.isfinite(k)])


def kurtosis_of_kurtoses(model: nn.Module, include: Sequence[str] = ("weight", "bias")) -> float:
    """kappa-kappa: the Pearson kurtosis of the per-tensor Pearson kurtoses."""
    ks = tensor_kurtoses(model, include)
    if ks.size < 2:
        raise ValueError(f"kurtosis of kurtoses needs >= 2 tensors with a kurtosis, got {ks.size}")
    return pearson_kurtosis(ks)


def kurtosis_modifier(kk: float) -> float:
    """m = 1/log2(kk) for kk < e, else 1/ln(kk); kk must exceed 1."""
    if isinstance(kk, bool) or not isinstance(kk, (int, float, np.floating)) \
            or not math.isfinite(kk) or kk <= 1:
        raise ValueError(f"kurtosis of kurtoses must be a finite number > 1 (the modifier "
                         f"1/log(kk) is undefined or negative otherwise), got {kk!r}")
    return 1.0 / math.log2(kk) if kk < math.e else 1.0 / math.log(kk)


def safe_prune_amount(model: nn.Module, amounts: Sequence[float] | np.ndarray = DEFAULT_AMOUNTS,
                      include: Sequence[str] = ("weight", "bias"), kk: float | None = None
                      ) -> float:
    """p_safe = clip(p* m(kk), 0, p*): the utopia amount of the model's cosine curve scaled by
    the kurtosis-of-kurtoses modifier (``kk`` computed from the model unless given)."""
    amounts = np.asarray(amounts, dtype=np.float64)
    p_star = utopia_prune_amount(amounts, cosine_prune_curve(model, amounts, include))
    kk = kurtosis_of_kurtoses(model, include) if kk is None else kk
    return float(np.clip(p_star * kurtosis_modifier(kk), 0.0, p_star))
