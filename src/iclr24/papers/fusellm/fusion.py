"""Step 3 of FuseLLM: fuse the aligned distributions of several sources, per sequence.

FuseLLM (Wan et al., ICLR 2024, Sec. 3.3 "Fusion strategies", Eq. 4-5): with P_s the aligned
distribution matrix of source s on a text and CE_s its cross-entropy on that text,

- MinCE (the paper's default; official flag ``distill_greater_as_gt``, type "hard"):
  P_fused = P_{argmin_s CE_s} for the whole sequence;
- AvgCE: P_fused = Σ_s w_s P_s with CE-based weights. The official trainer
  (``distill_weighted_as_gt``) uses rewards r_s = 1 / exp(CE_s) and w = softmax(r)
  (``weights="official"``); ``weights="softmax_neg_ce"`` gives w = softmax(-CE), the plain
  reading of the paper's text.

The target's own base model is one of the sources (its distribution from
:func:`~.alignment.own_distribution`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .alignment import SparseDist

__all__ = ["fuse", "fusion_weights"]

_METHODS = ("min_ce", "avg_ce")
_WEIGHTS = ("official", "softmax_neg_ce")


def fusion_weights(seq_ce: Sequence[float], weights: str = "official") -> np.ndarray:
    """AvgCE's source weights (sum to 1) from per-sequence cross-entropies."""
    if weights not in _WEIGHTS:
        raise ValueError(f"weights must be one of {_WEIGHTS}, got {weights!r}")
    ce = np.asarray(list(seq_ce), dtype=np.float64)
    if ce.ndim != 1 or ce.size == 0 or not np.isfinite(ce).all():
        raise ValueError(f"seq_ce must be a non-empty list of finite numbers, got {seq_ce!r}")
    score = np.exp(-ce) if weights == "official" else -ce  # r_s = 1/exp(CE_s), or -CE_s
    w = np.exp(score - score.max())
    return w / w.sum()


def fuse(dists: Sequence[SparseDist], seq_ce: Sequence[float], method: str = "min_ce",
         weights: str = "official") -> SparseDist:
    """Fuse the sources' aligned distributions of one text.

    dists: one :class:`SparseDist` per source, all with the same T (target positions).
    seq_ce: each source's CE_s on this text (same order).
    method: "min_ce" (pick the lowest-CE source) or "avg_ce" (CE-weighted average).
    weights: AvgCE's weighting, "official" (softmax of exp(-CE)) or "softmax_neg_ce".
    """
    if method not in _METHODS:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    dists = list(dists)
    if not dists:
        raise ValueError("dists must hold at least one SparseDist")
    for i, d in enumerate(dists):
        if not isinstance(d, SparseDist):
            raise TypeError(f"dists[{i}] must be a SparseDist, got {type(d).__name__}")
    ce = list(seq_ce)
    if len(ce) != len(dists):
        raise ValueError(f"seq_ce has {len(ce)} entries for {len(dists)} distributions")
    lengths = {len(d) for d in dists}
    if len(lengths) != 1:
        raise ValueError(f"all distributions must cover the same target positions, got "
                         f"lengths {sorted(lengths)}")
    w = fusion_weights(ce, weights)  # validates seq_ce
    if method == "min_ce":
        return dists[int(np.argmin(ce))]  # P_fused = P_{argmin_s CE_s}
    t = lengths.pop()
    ids = np.concatenate([d.ids for d in dists], axis=1)
    probs = np.concatenate([wi * d.probs for wi, d in zip(w, dists)], axis=1)  # Σ_s w_s P_s
    rows = []
    for r in range(t):
        keep = probs[r] > 0
        u, inv = np.unique(ids[r][keep], return_inverse=True)
        p = np.zeros(u.shape[0], dtype=np.float64)
        np.add.at(p, inv, probs[r][keep])
        rows.append((u, p / p.sum()))
    transferred = np.any(np.stack([d.transferred for d in dists]), axis=0)
    return SparseDist.from_rows(rows, transferred)
