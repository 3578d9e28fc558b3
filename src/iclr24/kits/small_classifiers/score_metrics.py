"""Metrics on scores and probabilities: operating points of a ROC curve, calibration error, and a
stratified bootstrap.

Conventions: ``labels`` are 1 for positives (members, in-distribution, ...) and 0 for negatives;
higher scores mean "more positive". The operating points are closed forms over order
statistics, checked against scikit-learn's ``roc_curve`` in the tests; ROC/AUC themselves come
from scikit-learn.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["expected_calibration_error", "fpr_at_tpr", "stratified_bootstrap", "tpr_at_fpr"]


def _scores_labels(scores: np.ndarray, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    lab = np.asarray(labels)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array, got shape {s.shape}")
    if lab.shape != s.shape:
        raise ValueError(f"labels must have the shape of scores {s.shape}, got {lab.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("scores must be finite")
    if not np.isin(lab, (0, 1)).all():
        raise ValueError("labels must be binary (0/1 or bool)")
    lab = lab.astype(bool)
    if lab.all() or not lab.any():
        raise ValueError("labels must contain both positives (1) and negatives (0)")
    return s, lab


def _rate(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)) \
            or not 0 < float(value) < 1:
        raise ValueError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)


def tpr_at_fpr(scores: np.ndarray, labels: np.ndarray, fpr: float) -> float:
    """Largest true-positive rate over the ROC points whose false-positive rate is <= ``fpr``.

    scores, labels: (n,). At most k = floor(fpr * n_neg) negatives may score at or above the
    threshold, so the best threshold lies just above the (k+1)-th largest negative score q and
    TPR = #(positives > q) / n_pos: the ROC point of scikit-learn's ``roc_curve`` (tested), in
    O(n) per call (the bootstraps call it thousands of times). This is the strict reading; the
    CHAMELEON code takes the ROC point whose FPR is *nearest* the target, which may exceed it.
    """
    s, lab = _scores_labels(scores, labels)
    target = _rate(fpr, "fpr")
    pos, neg = s[lab], s[~lab]
    k = int(np.floor(target * neg.size + 1e-9))
    if k >= neg.size:
        return 1.0
    q = -np.partition(-neg, k)[k]  # the (k+1)-th largest negative score
    return float(np.mean(pos > q))


def fpr_at_tpr(scores: np.ndarray, labels: np.ndarray, tpr: float = 0.95) -> float:
    """Smallest false-positive rate over the ROC points whose true-positive rate is >= ``tpr``
    (FPR95 for ``tpr=0.95``: the fraction of negatives scored at or above the threshold that
    keeps 95% of the positives). scores, labels: (n,). The threshold is the j-th largest
    positive score, j = ceil(tpr * n_pos) (equal to scikit-learn's ROC point; tested)."""
    s, lab = _scores_labels(scores, labels)
    target = _rate(tpr, "tpr")
    pos, neg = s[lab], s[~lab]
    j = int(np.ceil(target * pos.size - 1e-9))
    t = -np.partition(-pos, j - 1)[j - 1]  # the j-th largest positive score
    return float(np.mean(neg >= t))


def expected_calibration_error(probs: np.ndarray, labels: np.ndarray, n_bins: int = 15) -> float:
    """Top-label ECE with ``n_bins`` equal-width confidence bins:
    ECE = sum_b (|B_b| / n) |acc(B_b) - conf(B_b)|.

    probs: (n, C) class probabilities (rows need not be renormalised); labels: (n,) ints.
    Bins are [k/n_bins, (k+1)/n_bins) with a confidence of exactly 1 in a bin of its own, the
    binning of torchmetrics' ``multiclass_calibration_error`` (so both agree to rounding).
    """
    p = np.asarray(probs, dtype=np.float64)
    y = np.asarray(labels)
    if p.ndim != 2 or p.shape[0] == 0:
        raise ValueError(f"probs must be a non-empty 2-D array (n, C), got shape {p.shape}")
    if y.shape != (p.shape[0],) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"labels must be integers of shape ({p.shape[0]},), got {y.shape} "
                         f"{y.dtype}")
    if y.min() < 0 or y.max() >= p.shape[1]:
        raise ValueError(f"labels must lie in [0, {p.shape[1]}), got [{y.min()}, {y.max()}]")
    if np.any(p < 0) or np.any(p > 1 + 1e-9):
        raise ValueError("probs must lie in [0, 1]")
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive int, got {n_bins!r}")
    conf = p.max(axis=1)
    correct = (p.argmax(axis=1) == y).astype(np.float64)
    edges = np.linspace(0.0, 1.0, n_bins + 1)
    idx = np.digitize(conf, edges) - 1  # bin k holds edges[k] <= conf < edges[k+1]
    count = np.bincount(idx, minlength=n_bins + 1)
    conf_sum = np.bincount(idx, weights=conf, minlength=n_bins + 1)
    acc_sum = np.bincount(idx, weights=correct, minlength=n_bins + 1)
    nz = count > 0
    gap = np.abs(acc_sum[nz] - conf_sum[nz]) / count[nz]
    return float(np.sum(gap * count[nz]) / conf.size)


def stratified_bootstrap(scores: np.ndarray, labels: np.ndarray,
                         statistic: Callable[[np.ndarray, np.ndarray], float], *,
                         n_resamples: int = 1000, confidence: float = 0.95, seed: int = 0
                         ) -> tuple[float, float, float]:
    """``(value, low, high)``: ``statistic(scores, labels)`` and its percentile bootstrap
    interval, resampling positives and negatives separately (with replacement, each keeping its
    count), so every resample has the class balance of the data. Seeded by ``seed``.

    scores: (n,) or (n, k): with k columns (e.g. two attacks scored on the same trials) rows are
    resampled together, which gives a *paired* interval for a statistic comparing columns.
    """
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim not in (1, 2):
        raise ValueError(f"scores must be (n,) or (n, k), got shape {s.shape}")
    _, lab = _scores_labels(s[:, 0] if s.ndim == 2 else s, labels)
    if not callable(statistic):
        raise TypeError(f"statistic must be callable, got {statistic!r}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 10:
        raise ValueError(f"n_resamples must be an int >= 10, got {n_resamples!r}")
    conf = _rate(confidence, "confidence")
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(lab), np.flatnonzero(~lab)
    value = float(statistic(s, lab.astype(np.int64)))
    stats = np.empty(n_resamples)
    for r in range(n_resamples):
        rows = np.concatenate([rng.choice(pos, pos.size), rng.choice(neg, neg.size)])
        stats[r] = statistic(s[rows], lab[rows].astype(np.int64))
    low, high = np.quantile(stats, [(1 - conf) / 2, (1 + conf) / 2])
    return value, float(min(low, value)), float(max(high, value))
