"""Split-conformal prediction sets for an early-exit network (JEI-DNN Sec. 5.3; official
``conformal_eedn.py``).

Non-conformity score s = 1 - p_y of the exit a sample takes. On a validation split, each exit l
gets its own quantile q_l at level ceil((n_l + 1)(1 - alpha)) / n_l (numpy's ``"higher"``
method, level capped at 1) of the scores of the validation samples that *left* at l; an exit
with at most ``min_points`` such samples (official: 20) falls back to the quantile of the
scores of *all* validation samples at that exit's head. The set of a test sample leaving at l
is {c : p_c >= 1 - q_l}.
"""

from __future__ import annotations

import numpy as np

__all__ = ["conformal_quantile", "conformal_quantiles", "conformal_sets", "nonconformity_scores",
           "set_coverage"]


def _alpha(alpha: float) -> float:
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float, np.floating)) \
            or not 0 < float(alpha) < 1:
        raise ValueError(f"alpha must be a number in (0, 1), got {alpha!r}")
    return float(alpha)


def _check_labels(y: np.ndarray, num_classes: int) -> None:
    if not np.issubdtype(y.dtype, np.integer):
        raise TypeError(f"y must hold integer class labels, got dtype {y.dtype}")
    if y.size and (y.min() < 0 or y.max() >= num_classes):
        raise ValueError(f"y must hold labels in [0, {num_classes}), got values in "
                         f"[{y.min()}, {y.max()}]")


def nonconformity_scores(probs: np.ndarray, y: np.ndarray) -> np.ndarray:
    """probs: (n, C), y: (n,) -> (n,) scores 1 - p_y."""
    p, y = np.asarray(probs, dtype=np.float64), np.asarray(y)
    if p.ndim != 2 or y.shape != (p.shape[0],):
        raise ValueError(f"probs must be (n, C) and y (n,), got {p.shape} and {y.shape}")
    _check_labels(y, p.shape[1])
    return 1.0 - p[np.arange(p.shape[0]), y]


def conformal_quantile(scores: np.ndarray, alpha: float) -> float:
    """The split-conformal quantile of ``scores`` (n,) at level ceil((n+1)(1-alpha))/n, capped
    at 1, numpy ``"higher"`` method; ``1 - alpha`` for an empty sample (the official default)."""
    alpha = _alpha(alpha)
    s = np.asarray(scores, dtype=np.float64).ravel()
    if s.size == 0:
        return 1.0 - alpha
    level = min(np.ceil((s.size + 1) * (1 - alpha)) / s.size, 1.0)   # ceil((n+1)(1-a))/n
    return float(np.quantile(s, level, method="higher"))


def conformal_quantiles(val_scores: np.ndarray, val_exits: np.ndarray, alpha: float, *,
                        num_exits: int, all_scores: np.ndarray | None = None,
                        min_points: int = 20) -> np.ndarray:
    """(num_exits,) per-exit quantiles q_l.

    val_scores: (n,) score of each validation sample at the exit it took; val_exits: (n,) that
    exit; all_scores: optional (n, num_exits), every validation sample's score at every exit,
    for the fallback at exits with <= ``min_points`` samples (without it the fallback is the
    pooled quantile of ``val_scores``)."""
    alpha = _alpha(alpha)
    s, e = np.asarray(val_scores, dtype=np.float64), np.asarray(val_exits)
    if s.ndim != 1 or e.shape != s.shape or s.size == 0:
        raise ValueError(f"val_scores and val_exits must be non-empty (n,), got {s.shape} and "
                         f"{e.shape}")
    if isinstance(num_exits, bool) or not isinstance(num_exits, int) or num_exits < 1:
        raise ValueError(f"num_exits must be a positive int, got {num_exits!r}")
    if not np.issubdtype(e.dtype, np.integer) or e.min() < 0 or e.max() >= num_exits:
        raise ValueError(f"val_exits must be ints in [0, {num_exits})")
    if all_scores is not None:
        all_scores = np.asarray(all_scores, dtype=np.float64)
        if all_scores.shape != (s.size, num_exits):
            raise ValueError(f"all_scores must be ({s.size}, {num_exits}), got "
                             f"{all_scores.shape}")
    pooled = conformal_quantile(s, alpha)
    q = np.empty(num_exits)
    for l in range(num_exits):
        mine = s[e == l]
        if mine.size > min_points:
            q[l] = conformal_quantile(mine, alpha)
        else:
            q[l] = pooled if all_scores is None else conformal_quantile(all_scores[:, l], alpha)
    return q


def conformal_sets(probs: np.ndarray, qhat: np.ndarray) -> np.ndarray:
    """probs: (n, C); qhat: a number or (n,) per-sample quantiles -> (n, C) bool sets
    {c : p_c >= 1 - qhat}."""
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"probs must be (n, C), got shape {p.shape}")
    q = np.broadcast_to(np.asarray(qhat, dtype=np.float64), (p.shape[0],))
    return p >= (1.0 - q)[:, None]


def set_coverage(sets: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(empirical coverage, mean set size) of (n, C) bool sets for labels y (n,)."""
    S, y = np.asarray(sets, dtype=bool), np.asarray(y)
    if S.ndim != 2 or y.shape != (S.shape[0],):
        raise ValueError(f"sets must be (n, C) and y (n,), got {S.shape} and {y.shape}")
    _check_labels(y, S.shape[1])
    return float(S[np.arange(y.size), y].mean()), float(S.sum(1).mean())
