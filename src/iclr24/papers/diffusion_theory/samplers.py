"""The two samplers analysed by Li, Wei, Chen & Chi (ICLR 2024, Sec. 2), run t = T, ..., 2 from
Y_T ~ N(0, I); the output Y_1 is compared with q_1 (the law of X_1), never with p_data.

Deterministic (probability-flow ODE type):  Y_{t-1} = (Y_t + (1 - alpha_t)/2 s_t(Y_t)) / sqrt(alpha_t)
Stochastic (DDPM type), noise inside:        Y_{t-1} = (Y_t + (1 - alpha_t) s_t(Y_t) + sqrt(1 - alpha_t) Z_t) / sqrt(alpha_t)
                        noise outside:       Y_{t-1} = (Y_t + (1 - alpha_t) s_t(Y_t)) / sqrt(alpha_t) + sqrt(beta_t) Z_t
The paper's form is "inside" (noise variance beta_t / alpha_t); "outside" (variance beta_t, as
in Ho et al.) differs at O(beta_t^2) per step. ``score_fn(x, alpha_bar)`` maps (n, d) points to
(n, d) scores of q_t, where alpha_bar = alpha_bar_t; the step t -> t-1 uses alpha_t and s_t at the
*current* time t.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .schedule import alpha_bars, check_schedule

__all__ = ["NOISE_PLACEMENTS", "ScoreFn", "sample_ddpm", "sample_ode"]

ScoreFn = Callable[[np.ndarray, float], np.ndarray]
NOISE_PLACEMENTS = ("inside", "outside")


def _start(score_fn, betas, n, d, rng):
    if not callable(score_fn):
        raise TypeError(f"score_fn must be callable (x, alpha_bar) -> score, got {score_fn!r}")
    betas = check_schedule(betas)
    for name, v in (("n", n), ("d", d)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    return betas, alpha_bars(betas), rng.standard_normal((n, d))


def _score(score_fn, y, ab):
    s = np.asarray(score_fn(y, ab), dtype=np.float64)
    if s.shape != y.shape:
        raise ValueError(f"score_fn returned shape {s.shape}, expected {y.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError(f"score_fn returned a non-finite score (NaN or inf) at alpha_bar = {ab:g}")
    return s


def sample_ode(score_fn: ScoreFn, betas: np.ndarray, n: int, d: int,
               rng: np.random.Generator, y_T: np.ndarray | None = None) -> np.ndarray:
    """n samples Y_1 (shape (n, d)) of the deterministic sampler; ``y_T`` (n, d) overrides the
    N(0, I) start (the map Y_T -> Y_1 is then evaluated pointwise)."""
    betas, abar, y = _start(score_fn, betas, n, d, rng)
    if y_T is not None:
        y = np.array(y_T, dtype=np.float64).reshape(n, d)
    for t in range(betas.size, 1, -1):
        a = 1 - betas[t - 1]
        y = (y + 0.5 * (1 - a) * _score(score_fn, y, abar[t - 1])) / np.sqrt(a)
    return y


def sample_ddpm(score_fn: ScoreFn, betas: np.ndarray, n: int, d: int,
                rng: np.random.Generator, noise: str = "inside") -> np.ndarray:
    """n samples Y_1 (shape (n, d)) of the stochastic sampler; ``noise`` is "inside" (the
    paper's, variance beta_t/alpha_t) or "outside" (variance beta_t)."""
    if noise not in NOISE_PLACEMENTS:
        raise ValueError(f"noise must be one of {NOISE_PLACEMENTS}, got {noise!r}")
    betas, abar, y = _start(score_fn, betas, n, d, rng)
    for t in range(betas.size, 1, -1):
        a = 1 - betas[t - 1]
        drift = y + (1 - a) * _score(score_fn, y, abar[t - 1])
        z = rng.standard_normal(y.shape)
        if noise == "inside":
            y = (drift + np.sqrt(1 - a) * z) / np.sqrt(a)
        else:
            y = drift / np.sqrt(a) + np.sqrt(1 - a) * z
    return y
