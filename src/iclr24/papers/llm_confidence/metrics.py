"""Evaluation metrics of Xiong et al. (ICLR 2024), Sec. 2.2 / 4.1 ("Evaluation metrics").

Calibration: ECE with 10 equal-width confidence bins (the official code calls netcal's
``ECE(10)``), ``ECE = Σ_b |B_b|/n · |acc(B_b) − conf(B_b)|``; a confidence of exactly 1.0 falls
in the last bin. Failure prediction: AUROC with *correct* as the positive class and the
confidence as the score (scikit-learn), AUPRC-Positive on (y, conf), AUPRC-Negative on
(1 − y, 1 − conf), and AURC, the area under the risk-coverage curve as the official code computes
it (after fd-shifts; ×1000 there, a plain fraction here).

AUROC and AUPRC are undefined when every prediction is right or every one is wrong: the
functions return NaN then (one-class guard) and :func:`confidence_metrics` says so in
``one_class``.

Uncertainty over questions (not in the paper, which reports point values):
:func:`question_bootstrap` resamples the questions with replacement, the same questions in
every column (paired: the methods compared answered the same questions), and gives a
percentile interval of any statistic of the columns, e.g. AUROC(Consistency) − AUROC(verbalised).
A resample in which the statistic is undefined (one class left: NaN AUROC) is set aside and
counted; when more than ``max_undefined`` of them are, the interval is NaN (cannot tell).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BootstrapInterval",
    "auprc_negative",
    "auprc_positive",
    "aurc",
    "confidence_metrics",
    "expected_calibration_error",
    "failure_auroc",
    "question_bootstrap",
    "reliability_bins",
]


def _inputs(conf: Sequence[float], correct: Sequence[bool]) -> tuple[np.ndarray, np.ndarray]:
    try:
        c = np.asarray(conf, dtype=np.float64)
        y = np.asarray(correct)
    except (TypeError, ValueError):
        raise TypeError("conf must be a sequence of numbers and correct a sequence of bools"
                        ) from None
    if c.ndim != 1 or y.ndim != 1 or c.shape != y.shape:
        raise ValueError(f"conf and correct must be 1-D of equal length, got shapes {c.shape} "
                         f"and {y.shape}")
    if c.size == 0:
        raise ValueError("conf and correct must not be empty")
    if not np.all(np.isfinite(c)) or c.min() < 0 or c.max() > 1:
        raise ValueError("conf must hold finite confidences in [0, 1] (divide 0-100 scores by "
                         "100 first)")
    if y.dtype != bool:
        if not np.all(np.isin(y, (0, 1))):
            raise ValueError("correct must hold booleans (or 0/1)")
        y = y.astype(bool)
    return c, y


def reliability_bins(conf: Sequence[float], correct: Sequence[bool], n_bins: int = 10
                     ) -> list[dict[str, float]]:
    """Equal-width bins over [0, 1]: bin b holds b/n ≤ conf < (b+1)/n, the last one also
    conf = 1. Returns one row per bin: lower, upper, count, accuracy, confidence (NaN when
    empty)."""
    c, y = _inputs(conf, correct)
    if isinstance(n_bins, bool) or not isinstance(n_bins, int) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive int, got {n_bins!r}")
    idx = np.minimum((c * n_bins).astype(int), n_bins - 1)  # conf = 1.0 -> last bin
    rows = []
    for b in range(n_bins):
        sel = idx == b
        k = int(sel.sum())
        rows.append({"lower": b / n_bins, "upper": (b + 1) / n_bins, "count": k,
                     "accuracy": float(y[sel].mean()) if k else math.nan,
                     "confidence": float(c[sel].mean()) if k else math.nan})
    return rows


def expected_calibration_error(conf: Sequence[float], correct: Sequence[bool],
                               n_bins: int = 10) -> float:
    """ECE = Σ_b (|B_b| / n) · |acc(B_b) − conf(B_b)| over equal-width bins. conf, correct: (n,)."""
    rows = reliability_bins(conf, correct, n_bins)
    n = sum(r["count"] for r in rows)
    # ECE = Σ_b |B_b|/n |acc_b − conf_b|
    return float(sum(r["count"] / n * abs(r["accuracy"] - r["confidence"])
                     for r in rows if r["count"]))


def failure_auroc(conf: Sequence[float], correct: Sequence[bool]) -> float:
    """AUROC of ``conf`` for telling correct (positive) from wrong predictions; NaN when only
    one class is present."""
    from sklearn.metrics import roc_auc_score

    c, y = _inputs(conf, correct)
    if y.all() or not y.any():
        return math.nan
    return float(roc_auc_score(y, c))


def auprc_positive(conf: Sequence[float], correct: Sequence[bool]) -> float:
    """Average precision with correct answers as positives, scored by conf (NaN if one class)."""
    from sklearn.metrics import average_precision_score

    c, y = _inputs(conf, correct)
    if y.all() or not y.any():
        return math.nan
    return float(average_precision_score(y, c))


def auprc_negative(conf: Sequence[float], correct: Sequence[bool]) -> float:
    """Average precision with wrong answers as positives, scored by 1 − conf (NaN if one
    class)."""
    from sklearn.metrics import average_precision_score

    c, y = _inputs(conf, correct)
    if y.all() or not y.any():
        return math.nan
    return float(average_precision_score(~y, 1 - c))


def aurc(conf: Sequence[float], correct: Sequence[bool]) -> float:
    """Area under the risk-coverage curve (lower is better), as the official code (fd-shifts):
    reject the least confident prediction one at a time; each distinct confidence adds a
    point (coverage, selective risk), and the area sums trapezoids weighted by the coverage
    each step removes. Ties in confidence move together."""
    c, y = _inputs(conf, correct)
    n = c.size
    residual = (~y).astype(np.float64)
    order = np.argsort(c, kind="stable")
    error_sum = residual.sum()
    risks = [error_sum / n]
    weights = []
    pending = 0
    for i in range(n - 1):
        error_sum -= residual[order[i]]
        pending += 1
        if i == 0 or c[order[i]] != c[order[i - 1]]:
            risks.append(error_sum / (n - 1 - i))  # selective risk at coverage (n-1-i)/n
            weights.append(pending / n)
            pending = 0
    if pending:
        risks.append(risks[-1])
        weights.append(pending / n)
    # AURC = Σ_i (r_i + r_{i+1}) / 2 · w_i
    return float(sum((risks[i] + risks[i + 1]) * 0.5 * weights[i] for i in range(len(weights))))


def confidence_metrics(conf: Sequence[float], correct: Sequence[bool], n_bins: int = 10
                       ) -> dict[str, float]:
    """All of them at once: accuracy, ece, auroc, auprc_positive, auprc_negative, aurc,
    mean_confidence, one_class (1.0 when AUROC/AUPRC are undefined)."""
    c, y = _inputs(conf, correct)
    return {"accuracy": float(y.mean()), "mean_confidence": float(c.mean()),
            "ece": expected_calibration_error(c, y, n_bins), "auroc": failure_auroc(c, y),
            "auprc_positive": auprc_positive(c, y), "auprc_negative": auprc_negative(c, y),
            "aurc": aurc(c, y), "one_class": float(y.all() or not y.any())}


@dataclass(frozen=True)
class BootstrapInterval:
    """``value`` = the statistic on all questions; ``[low, high]`` its percentile interval over
    the ``n_used`` resamples where it was defined (NaN when too few were); ``n`` questions."""

    value: float
    low: float
    high: float
    n: int
    n_used: int
    confidence: float


def question_bootstrap(statistic: Callable[..., float], columns: Sequence[Sequence[float]], *,
                       n_resamples: int = 2000, confidence: float = 0.95, seed: int = 0,
                       max_undefined: float = 0.05) -> BootstrapInterval:
    """Paired percentile bootstrap over questions: ``columns`` are k equal-length per-question
    arrays (confidences, 0/1 correctness, ...); each resample draws n question indices with
    replacement and calls ``statistic(*columns_at_those_indices)``. Resamples where the
    statistic is NaN are set aside; if more than ``max_undefined`` (a fraction) are, or the
    statistic on all questions is NaN, low and high are NaN."""
    if not callable(statistic):
        raise TypeError(f"statistic must be callable, got {type(statistic).__name__}")
    if isinstance(columns, (str, bytes)) or not isinstance(columns, Sequence) or not columns:
        raise TypeError("columns must be a non-empty sequence of per-question arrays")
    try:
        cols = [np.asarray(c, dtype=np.float64) for c in columns]
    except (TypeError, ValueError):
        raise TypeError("columns must hold numeric per-question arrays") from None
    n = cols[0].shape[0] if cols[0].ndim == 1 else -1
    if n < 1 or any(c.shape != (n,) for c in cols):
        raise ValueError(f"columns must be 1-D arrays of one equal, non-zero length, got shapes "
                         f"{[c.shape for c in cols]}")
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
        raise ValueError(f"n_resamples must be an int >= 100, got {n_resamples!r}")
    if isinstance(confidence, bool) or not isinstance(confidence, float) \
            or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a float in (0, 1), got {confidence!r}")
    if not isinstance(max_undefined, (int, float)) or not 0 <= max_undefined < 1:
        raise ValueError(f"max_undefined must be a fraction in [0, 1), got {max_undefined!r}")
    value = float(statistic(*cols))
    if not math.isfinite(value):
        return BootstrapInterval(value, math.nan, math.nan, n, 0, confidence)
    rng = np.random.default_rng(seed)
    draws = np.array([float(statistic(*(c[idx] for c in cols)))
                      for idx in rng.integers(0, n, size=(n_resamples, n))])
    ok = draws[np.isfinite(draws)]
    if ok.size < (1 - max_undefined) * n_resamples:
        return BootstrapInterval(value, math.nan, math.nan, n, int(ok.size), confidence)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(ok, [alpha, 1 - alpha])  # percentile interval
    return BootstrapInterval(value, float(min(low, value)), float(max(high, value)), n,
                             int(ok.size), confidence)
