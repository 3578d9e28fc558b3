"""Interpolation and barycenters in the LCOT embedding space (paper Sec. 3, Fig. 3, Exp. 3).

An embedding nu_hat defines the Monge map m(x) = nu_hat(x) + x that pushes the uniform measure
onto nu; so any function e in the embedding space gives back a measure, (id + e)_# Unif, which we
represent by pushing the grid x_m = m / M forward: atoms (x_m + e(x_m)) mod 1 with mass 1 / M.

- Interpolation (geodesic in embedding space): e_t = e_1 + t * [e_2 - e_1]_{S^1}, where
  [d]_{S^1} is d reduced into [-1/2, 1/2). This is the paper's (1 - t) e_1 + t e_2 wherever
  |e_1(x) - e_2(x)| < 1/2 (no wrap); where the two displacements straddle the +-1/2 cut, the
  plain average would send that mass to the antipode of both targets, while the geodesic of the
  circular metric LCOT actually uses goes along the short arc.
- Barycenter: the paper averages embeddings. ``mode="linear"`` does exactly that;
  ``mode="circular"`` (default) takes the pointwise Frechet mean on the circle (a fixed-point
  iteration started at the heaviest embedding), which equals the plain average whenever the
  embeddings do not straddle the cut and otherwise avoids the antipodal artefact above.
  Barycenter measure: push the grid forward by id + e_bar. Official code then smooths with a von
  Mises KDE (``inverse_kde``, kappa = 500): see :func:`von_mises_kde`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .embedding import wrap_half

__all__ = [
    "embedding_to_measure",
    "lcot_barycenter",
    "lcot_interpolate",
    "mean_embedding",
    "von_mises_kde",
]


def _as_embedding(e: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(e, dtype=np.float64)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError(f"{name} must be a 1-D embedding (grid_size,), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite")
    return arr


def lcot_interpolate(e1: ArrayLike, e2: ArrayLike, t: float | ArrayLike) -> NDArray[np.float64]:
    """Geodesic between two embeddings in LCOT space.

    e1, e2: (M,) embeddings; t: scalar or (T,) times in [0, 1].
    Returns (M,) or (T, M): e1 + t [e2 - e1]_{S^1}, wrapped to [-1/2, 1/2).
    LCOT(e_s, e_t) = |s - t| LCOT(e1, e2) (constant-speed geodesic).
    """
    a = _as_embedding(e1, "e1")
    b = _as_embedding(e2, "e2")
    if a.shape != b.shape:
        raise ValueError(f"e1 and e2 must have the same grid_size, got {a.size} and {b.size}")
    tt = np.asarray(t, dtype=np.float64)
    if tt.ndim > 1 or not np.all(np.isfinite(tt)):
        raise ValueError("t must be a finite scalar or 1-D array of times")
    if np.any(tt < 0) or np.any(tt > 1):
        raise ValueError("t must lie in [0, 1]")
    step = wrap_half(b - a)  # short-arc difference, as in the LCOT metric
    if tt.ndim == 0:
        return wrap_half(a + float(tt) * step)  # (1 - t) e1 + t e2 when no wrap occurs
    return wrap_half(a[None, :] + tt[:, None] * step[None, :])


def mean_embedding(embeddings: ArrayLike, weights: ArrayLike | None = None, *,
                   mode: str = "circular", n_iter: int = 50) -> NDArray[np.float64]:
    """Weighted mean of embeddings (K, M) -> (M,).

    mode="linear": sum_k w_k e_k (the paper's average). mode="circular": pointwise Frechet mean
    on the circle, e <- e + sum_k w_k [e_k - e]_{S^1}, started at the heaviest embedding.
    """
    e = np.asarray(embeddings, dtype=np.float64)
    if e.ndim != 2 or e.shape[0] == 0 or e.shape[1] == 0:
        raise ValueError(f"embeddings must be 2-D (K, grid_size) with K >= 1, got {e.shape}")
    if not np.all(np.isfinite(e)):
        raise ValueError("embeddings must be finite")
    if weights is None:
        w = np.full(e.shape[0], 1.0 / e.shape[0])
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (e.shape[0],):
            raise ValueError(f"weights must have shape ({e.shape[0]},), got {w.shape}")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must be finite, non-negative, with a positive sum")
        w = w / w.sum()
    if mode == "linear":
        return wrap_half(w @ e)  # e_bar = sum_k w_k e_k
    if mode != "circular":
        raise ValueError(f"mode must be 'circular' or 'linear', got {mode!r}")
    ref = e[int(np.argmax(w))].copy()
    for _ in range(int(n_iter)):
        step = w @ wrap_half(e - ref[None, :])  # Riemannian gradient step of the circle variance
        ref = ref + step
        if np.max(np.abs(step)) < 1e-13:
            break
    return wrap_half(ref)


def embedding_to_measure(embedding: ArrayLike) -> NDArray[np.float64]:
    """Push the grid x_m = m / M forward by the Monge map x + e(x): (M,) -> sorted atoms in
    [0, 1), each with mass 1 / M (the measure (id + e)_# Unif, discretised)."""
    e = _as_embedding(embedding, "embedding")
    x = np.arange(e.size, dtype=np.float64) / e.size
    y = np.mod(x + e, 1.0)  # m(x) = e(x) + x, mod 1
    y[y >= 1.0] = 0.0  # guard the float edge case mod(-tiny, 1) == 1.0
    return np.sort(y)


def lcot_barycenter(embeddings: ArrayLike, weights: ArrayLike | None = None, *,
                    mode: str = "circular") -> NDArray[np.float64]:
    """LCOT barycenter of K measures given by their embeddings (K, M).

    Returns the barycenter measure as (M,) sorted atoms in [0, 1) with equal masses 1 / M; use
    :func:`von_mises_kde` or :func:`~iclr24.papers.lcot.baselines.circular_histogram` for a
    density. Its embedding is ``mean_embedding(embeddings, weights, mode=mode)``.
    """
    return embedding_to_measure(mean_embedding(embeddings, weights, mode=mode))


def von_mises_kde(values: ArrayLike, weights: ArrayLike | None = None, *, grid_size: int = 1000,
                  kappa: float = 500.0) -> NDArray[np.float64]:
    """Von Mises kernel density of atoms on [0, 1), evaluated at x_m = m / M -> (M,) density
    w.r.t. dx on [0, 1) (integrates to 1). Official ``inverse_kde`` uses kappa = 500."""
    from scipy.special import i0e

    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 1 or v.size == 0 or np.any(v < 0) or np.any(v >= 1):
        raise ValueError("values must be a non-empty 1-D array of atoms in [0, 1)")
    if not (np.isfinite(kappa) and kappa > 0):
        raise ValueError(f"kappa must be a positive number, got {kappa!r}")
    if weights is None:
        w = np.full(v.size, 1.0 / v.size)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != v.shape or np.any(w < 0) or w.sum() <= 0:
            raise ValueError("weights must match values, be non-negative and sum to > 0")
        w = w / w.sum()
    x = np.arange(int(grid_size), dtype=np.float64) / int(grid_size)
    ang = 2 * np.pi * (x[:, None] - v[None, :])
    # von Mises density in angle, exp(kappa (cos - 1)) / (2 pi I0e(kappa)), times 2 pi for dx
    dens = np.exp(kappa * (np.cos(ang) - 1.0)) / i0e(kappa)
    return dens @ w
