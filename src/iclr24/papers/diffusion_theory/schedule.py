"""The noise ("learning-rate") schedule analysed by Li, Wei, Chen & Chi (ICLR 2024, Sec. 2).

beta_1 = T^{-c0};  beta_{t+1} = (c1 log T / T) * min{beta_1 (1 + c1 log T / T)^t, 1},
t = 1..T-1. The schedule grows geometrically from ~T^{-c0} and is capped at c1 log T / T, so that
alpha_bar_T ~ T^{-(c1 - c0)}: the N(0, I) start of the samplers is then exponentially close to q_T.
The paper only asks for "large enough" constants; c0 = 2, c1 = 6 are our choice, checked at run
time (max beta < 1 and alpha_bar_T < 1e-4, else the initialisation error would flatten the rate).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["alpha_bars", "li_schedule"]

MAX_ALPHA_BAR_T = 1e-4


def li_schedule(T: int, c0: float = 2.0, c1: float = 6.0) -> np.ndarray:
    """betas[t-1] = beta_t for t = 1..T (shape (T,)). Raises ValueError if the constants give a
    schedule with max beta >= 1 or alpha_bar_T >= 1e-4."""
    if isinstance(T, bool) or not isinstance(T, (int, np.integer)) or T < 2:
        raise ValueError(f"T must be an int >= 2, got {T!r}")
    for name, c in (("c0", c0), ("c1", c1)):
        if not isinstance(c, (int, float)) or not math.isfinite(c) or c <= 0:
            raise ValueError(f"{name} must be a positive number, got {c!r}")
    T = int(T)
    rate = c1 * math.log(T) / T
    betas = np.empty(T)
    betas[0] = T ** (-c0)                                   # beta_1 = 1 / T^{c0}
    t = np.arange(1, T)
    betas[1:] = rate * np.minimum(betas[0] * (1 + rate) ** t, 1.0)  # beta_{t+1}
    check_schedule(betas)
    return betas


def check_schedule(betas: np.ndarray) -> np.ndarray:
    """Validate a schedule (1-D, 0 < beta < 1, alpha_bar_T < 1e-4); returns it as float64."""
    b = np.asarray(betas, dtype=np.float64)
    if b.ndim != 1 or b.size < 2:
        raise ValueError(f"betas must be a 1-D array of at least 2 steps, got shape {b.shape}")
    if not np.all(np.isfinite(b)) or np.any(b <= 0):
        raise ValueError("betas must be finite and positive")
    if b.max() >= 1:
        raise ValueError(f"betas must be < 1 (alpha_t = 1 - beta_t > 0); max beta = {b.max():.4g}"
                         " (increase T or lower c1)")
    abar_T = float(np.prod(1 - b))
    if abar_T >= MAX_ALPHA_BAR_T:
        raise ValueError(f"alpha_bar_T = {abar_T:.3g} must be < {MAX_ALPHA_BAR_T:g}, otherwise "
                         "the N(0, I) initialisation error dominates (raise c1 - c0)")
    return b


def alpha_bars(betas: np.ndarray) -> np.ndarray:
    """alpha_bar_t = prod_{k <= t} (1 - beta_k), shape (T,)."""
    return np.cumprod(1 - np.asarray(betas, dtype=np.float64))
