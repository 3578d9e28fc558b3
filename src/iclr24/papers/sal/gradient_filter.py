"""SAL's filtering step (Du et al., ICLR 2024, Sec. 3.1, Eqs. 4-6): per-sample gradients of the
cross-entropy w.r.t. the last linear layer, centred by the labelled-ID reference gradient and
projected on the top singular vector of the wild gradients.

How the code maps to the paper and to the official ``main.py`` (deeplearning-wisc/sal):

- :func:`last_layer_grad_rows` - the per-sample gradient of CE(h(x), label) w.r.t. the weight
  ``W`` (C x D) of the last layer h = W phi + b (bias excluded, as the official
  ``per_sample_gradient`` returns ``grads[-2]``), reduced to the row of the label class: the
  official filter projects only ``g[:, c, :]`` for the (pseudo-)label ``c``. For a linear head
  the row is closed form, ``dCE/dW_c = (p_c - 1) phi`` (no autograd). Wild points use the
  model's own prediction y_hat = argmax h(x) as label (the paper's Eq. 4), ID points their
  true label.
- :func:`class_reference_means` - the reference gradient g_bar_c: the mean, over *labelled ID*
  samples of class c, of their gradient rows (official ``cal_avg_clean``, ``avg_on_wild=0``).
- :func:`sal_scores` - per predicted class c, the wild rows with y_hat = c are centred by
  g_bar_c, stacked into G_c and projected on G_c's top right singular vector v_c; the score is
  tau = <g - g_bar_c, v_c>^2 (Eq. 6; the official code takes the absolute value, the same
  ranking). The singular vector's sign is irrelevant after squaring. A class with fewer than
  ``min_class_size`` rows would give a degenerate direction (one row is its own singular
  vector); those rows use the top singular vector of all centred rows pooled instead.
- :func:`sal_threshold` - the official ``use_thres=1`` rule: the same scores computed on the
  labelled ID data with *their own* per-class singular vectors, and T = their ``quantile``
  (0.95) quantile; wild points with tau > T are the candidate outliers S_T
  (:func:`filter_candidates`, or the ``use_thres=0`` alternative: the top-pi fraction).
- :func:`gradnorm_scores` - the official toy script's ``gradnorm`` ablation: the squared norm
  of the uncentred gradient row, no projection.
- :func:`filter_quality` - precision / recall / F1 of a candidate set against the hidden truth
  of the wild mixture (the official script's printout).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "class_reference_means",
    "filter_candidates",
    "filter_quality",
    "gradnorm_scores",
    "last_layer_grad_rows",
    "sal_scores",
    "sal_threshold",
]


def _as_2d(x, name: str) -> np.ndarray:
    a = np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    if a.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array, got shape {a.shape}")
    if a.shape[0] == 0:
        raise ValueError(f"{name} must not be empty (got 0 rows)")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite")
    return a


def _as_labels(labels, n: int, num_classes: int, name: str) -> np.ndarray:
    y = np.asarray(labels.detach().cpu().numpy() if hasattr(labels, "detach") else labels)
    if y.shape != (n,) or not np.issubdtype(y.dtype, np.integer):
        raise ValueError(f"{name} must be integers of shape ({n},), got {y.dtype} {y.shape}")
    if y.min() < 0 or y.max() >= num_classes:
        raise ValueError(f"{name} must lie in [0, {num_classes}), got [{y.min()}, {y.max()}]")
    return y.astype(np.int64)


def last_layer_grad_rows(features, logits, labels=None) -> np.ndarray:
    """Closed-form per-sample gradient row of CE w.r.t. the last layer's weight.

    features: (N, D) penultimate activations phi(x); logits: (N, C) = W phi + b;
    labels: (N,) ints, or ``None`` for the model's own prediction argmax(logits) (the paper's
    pseudo-label for wild data). Returns (N, D): row ``label`` of dCE/dW, i.e.
    (softmax(logits)_label - 1) * phi(x).
    """
    phi = _as_2d(features, "features")
    z = _as_2d(logits, "logits")
    if z.shape[0] != phi.shape[0]:
        raise ValueError(f"logits must have {phi.shape[0]} rows like features, got {z.shape[0]}")
    y = z.argmax(axis=1) if labels is None else _as_labels(labels, z.shape[0], z.shape[1],
                                                           "labels")
    z = z - z.max(axis=1, keepdims=True)
    log_p = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
    p_label = np.exp(log_p[np.arange(z.shape[0]), y])
    return (p_label - 1.0)[:, None] * phi  # dCE/dW_y = (p_y - 1) phi(x)


def class_reference_means(grad_rows, labels, num_classes: int) -> np.ndarray:
    """Reference gradients g_bar (C, D): row c is the mean gradient row of the labelled ID
    samples of class c (true labels). grad_rows: (N, D); labels: (N,). Every class must
    occur."""
    g = _as_2d(grad_rows, "grad_rows")
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) \
            or num_classes < 1:
        raise ValueError(f"num_classes must be a positive int, got {num_classes!r}")
    y = _as_labels(labels, g.shape[0], int(num_classes), "labels")
    counts = np.bincount(y, minlength=num_classes)
    if np.any(counts == 0):
        raise ValueError(f"every class needs labelled ID samples; classes "
                         f"{np.flatnonzero(counts == 0).tolist()} have none")
    sums = np.zeros((num_classes, g.shape[1]))
    np.add.at(sums, y, g)
    return sums / counts[:, None]  # g_bar_c = mean_{i: y_i = c} g_i


def _top_direction(centred: np.ndarray) -> np.ndarray:
    # v = top right singular vector of the centred gradient matrix (Eq. 5)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return vt[0]


def sal_scores(grad_rows, pred_labels, class_means, *, min_class_size: int = 3) -> np.ndarray:
    """SAL filtering scores tau (N,) of gradient rows (N, D) grouped by ``pred_labels`` (N,)
    and centred by ``class_means`` (C, D), each projected on its group's own top singular
    vector: tau_j = <g_j - g_bar_c, v_c>^2 (Eq. 6). Groups with fewer than ``min_class_size``
    rows use the pooled top singular vector of all centred rows."""
    g = _as_2d(grad_rows, "grad_rows")
    means = _as_2d(class_means, "class_means")
    if means.shape[1] != g.shape[1]:
        raise ValueError(f"class_means must have {g.shape[1]} columns like grad_rows, got "
                         f"{means.shape[1]}")
    if isinstance(min_class_size, bool) or not isinstance(min_class_size, int) \
            or min_class_size < 1:
        raise ValueError(f"min_class_size must be a positive int, got {min_class_size!r}")
    y = _as_labels(pred_labels, g.shape[0], means.shape[0], "pred_labels")
    centred = g - means[y]  # g_j - g_bar_{y_hat_j}
    scores = np.empty(g.shape[0])
    small = np.zeros(g.shape[0], dtype=bool)
    for c in np.unique(y):
        rows = y == c
        if rows.sum() < min_class_size:
            small |= rows
            continue
        scores[rows] = (centred[rows] @ _top_direction(centred[rows])) ** 2  # tau = <., v_c>^2
    if small.any():
        scores[small] = (centred[small] @ _top_direction(centred)) ** 2
    return scores


def sal_threshold(id_grad_rows, id_labels, class_means, quantile: float = 0.95, *,
                  min_class_size: int = 3) -> float:
    """Threshold T: the ``quantile`` quantile of :func:`sal_scores` of the labelled ID rows
    (N, D) grouped by their true ``id_labels`` (N,) with their own singular vectors (official
    ``GetThresNoConditional``, ``thres_id = 0.95``)."""
    if isinstance(quantile, bool) or not isinstance(quantile, (int, float)) \
            or not 0 < quantile < 1:
        raise ValueError(f"quantile must be a number in (0, 1), got {quantile!r}")
    s = sal_scores(id_grad_rows, id_labels, class_means, min_class_size=min_class_size)
    return float(np.quantile(s, quantile))


def gradnorm_scores(grad_rows) -> np.ndarray:
    """Gradient-norm filter scores (N,): ||g_j||^2 of the uncentred gradient rows (N, D) (the
    official toy script's ``gradnorm`` ablation; no centring, no projection)."""
    g = _as_2d(grad_rows, "grad_rows")
    return np.sum(g * g, axis=1)


def filter_candidates(scores, *, threshold: float | None = None,
                      pi: float | None = None) -> np.ndarray:
    """Candidate-outlier mask (N,) from wild scores (N,): ``scores > threshold`` (official
    ``use_thres=1``) or, with ``pi``, the ``ceil(pi * N)`` highest scores (``use_thres=0``).
    Give exactly one of the two."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"scores must be a non-empty 1-D array (the wild set), got shape "
                         f"{s.shape}")
    if (threshold is None) == (pi is None):
        raise ValueError("give exactly one of threshold= and pi=")
    if threshold is not None:
        if not np.isfinite(threshold):
            raise ValueError(f"threshold must be finite, got {threshold!r}")
        return s > threshold
    if isinstance(pi, bool) or not isinstance(pi, (int, float)) or not 0 < pi < 1:
        raise ValueError(f"pi must be a number in (0, 1), got {pi!r}")
    k = int(np.ceil(pi * s.size - 1e-9))
    mask = np.zeros(s.size, dtype=bool)
    mask[np.argsort(-s, kind="stable")[:k]] = True
    return mask


def filter_quality(candidate_mask, is_outlier) -> dict[str, float]:
    """Precision, recall and F1 of the candidate set (N,) bool against the true outliers (N,)
    bool of the wild mixture; also the fraction flagged. Empty sets give 0 (no division by
    zero)."""
    from sklearn.metrics import precision_recall_fscore_support

    m = np.asarray(candidate_mask)
    t = np.asarray(is_outlier)
    if m.ndim != 1 or m.size == 0 or t.shape != m.shape:
        raise ValueError(f"candidate_mask and is_outlier must be non-empty 1-D arrays of one "
                         f"shape, got {m.shape} and {t.shape}")
    for name, a in (("candidate_mask", m), ("is_outlier", t)):
        if not np.isin(a, (0, 1)).all():
            raise ValueError(f"{name} must be boolean (0/1)")
    p, r, f, _ = precision_recall_fscore_support(t.astype(bool), m.astype(bool),
                                                 average="binary", zero_division=0)
    return {"precision": float(p), "recall": float(r), "f1": float(f),
            "flagged": float(m.astype(bool).mean())}
