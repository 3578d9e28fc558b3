"""Structural Hamming distance and varsortability (Reisach et al. 2021)."""

from __future__ import annotations

import numpy as np

__all__ = ["shd", "varsortability"]


def shd(B_est, B_true) -> int:
    """Edge insertions + deletions + reversals (a reversal counts once) between two directed
    graphs given as (d, d) adjacency matrices (nonzero = edge)."""
    E, T = np.asarray(B_est) != 0, np.asarray(B_true) != 0
    if E.shape != T.shape or E.ndim != 2 or E.shape[0] != E.shape[1]:
        raise ValueError(f"B_est and B_true must be square of equal shape, got {E.shape}, "
                         f"{T.shape}")
    iu = np.triu_indices(E.shape[0], 1)
    return int(np.sum((E[iu] != T[iu]) | (E.T[iu] != T.T[iu])))


def varsortability(variances, B, tol: float = 1e-9) -> float:
    """Fraction of directed paths i ~> j (all lengths) along which the marginal variance
    increases (ties count 1/2); 1 means sorting by variance recovers the order.
    ``variances``: (d,) marginal variances (diag Sigma or a sample estimate); B: (d, d)."""
    v = np.asarray(variances, dtype=float)
    A = (np.asarray(B) != 0).astype(float)
    if A.shape != (v.size, v.size):
        raise ValueError(f"B must have shape {(v.size, v.size)}, got {A.shape}")
    diff = v[None, :] - v[:, None]                         # var_j - var_i for a path i ~> j
    score = np.where(diff > tol, 1.0, np.where(diff < -tol, 0.0, 0.5))
    num = den = 0.0
    P = A.copy()
    for _ in range(v.size - 1):
        num += float((P * score).sum())
        den += float(P.sum())
        P = P @ A
    if den == 0:
        raise ValueError("B has no edges; varsortability is undefined")
    return num / den
