"""Intervals over seeds, as the claims report them (Student-t; Welch for differences)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = ["difference_interval", "mean_interval", "t_half_width"]


def t_half_width(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float | None]:
    """Mean and the half-width of a two-sided Student-t interval (None for a single value)."""
    from scipy import stats

    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 1 or x.size == 0:
        raise ValueError(f"values must be a non-empty 1-D sequence, got shape {x.shape}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    mean = float(x.mean())
    if x.size < 2:
        return mean, None
    half = stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return mean, float(half)


def mean_interval(values: Sequence[float], confidence: float = 0.95
                  ) -> tuple[float, float, float]:
    """(mean, low, high) of a Student-t interval; low = high = mean for a single value."""
    mean, half = t_half_width(values, confidence)
    half = 0.0 if half is None else half
    return mean, mean - half, mean + half


def difference_interval(a: Sequence[float], b: Sequence[float], confidence: float = 0.95
                        ) -> tuple[float, float, float]:
    """mean(a) - mean(b) with a Welch interval (independent samples): (diff, low, high)."""
    from scipy import stats

    x, y = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if x.size == 0 or y.size == 0:
        raise ValueError("a and b must be non-empty")
    d = float(x.mean() - y.mean())
    if x.size < 2 or y.size < 2:
        return d, d, d
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    se = math.sqrt(va + vb)
    if se == 0:
        return d, d, d
    ra, rb = va / max(va, vb), vb / max(va, vb)  # dof is scale-free; rescaling avoids underflow
    dof = (ra + rb) ** 2 / (ra**2 / (x.size - 1) + rb**2 / (y.size - 1))  # Welch-Satterthwaite
    half = float(stats.t.ppf(0.5 + confidence / 2, dof) * se)
    return d, d - half, d + half
