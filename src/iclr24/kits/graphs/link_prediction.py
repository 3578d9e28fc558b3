"""Link-prediction negatives and scores, shared by the temporal-graph and EX-Graph papers.

``sample_negative_edges`` draws uniform (source, destination) pairs from a seeded generator and
rejects existing edges (and any ``exclude`` edges, e.g. the validation and test positives), self
loops, and with ``directed=False`` the reverse of existing edges too. ``num_nodes`` may be a
``(num_src, num_dst)`` pair for bipartite graphs (then self loops are allowed: the ids live in
different node sets). Pairs are drawn with replacement among the allowed ones.

``link_metrics`` scores positive and negative logits: average precision and ROC AUC over the
logits, and F1 / precision / recall of ``logit > threshold`` (threshold 0 = probability 0.5).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

__all__ = ["link_metrics", "mean_std", "sample_negative_edges"]

_MAX_ROUNDS = 64


def _sizes(num_nodes: Any) -> tuple[int, int, bool]:
    if isinstance(num_nodes, tuple):
        if len(num_nodes) != 2:
            raise ValueError(f"num_nodes must be an int or a (num_src, num_dst) pair; got "
                             f"{num_nodes!r}")
        n_src, n_dst = num_nodes
        bipartite = True
    else:
        n_src = n_dst = num_nodes
        bipartite = False
    for name, v in (("num_nodes", n_src), ("num_nodes", n_dst)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must hold positive ints; got {num_nodes!r}")
    return int(n_src), int(n_dst), bipartite


def _codes(edges: Any, n_src: int, n_dst: int, name: str) -> np.ndarray:
    e = np.asarray(edges.cpu() if hasattr(edges, "cpu") else edges, dtype=np.int64)
    if e.size == 0:
        return np.zeros(0, dtype=np.int64)
    if e.ndim != 2 or e.shape[0] != 2:
        raise ValueError(f"{name} must have shape (2, E); got {e.shape}")
    if e[0].min() < 0 or e[0].max() >= n_src or e[1].min() < 0 or e[1].max() >= n_dst:
        raise ValueError(f"{name} holds node ids outside the graph's {n_src} sources / "
                         f"{n_dst} destinations")
    return e[0] * n_dst + e[1]


def sample_negative_edges(edge_index: Any, num_nodes: int | tuple[int, int], num_samples: int, *,
                          seed: int, directed: bool = True,
                          exclude: Any = None) -> torch.Tensor:
    """(2, num_samples) LongTensor of uniform non-edges (see the module docstring)."""
    if isinstance(num_samples, bool) or not isinstance(num_samples, (int, np.integer)) \
            or num_samples < 0:
        raise ValueError(f"num_samples must be a non-negative int; got {num_samples!r}")
    n_src, n_dst, bipartite = _sizes(num_nodes)
    if not directed and bipartite:
        raise ValueError("directed=False needs one node set; got a (num_src, num_dst) pair")
    forbidden = [_codes(edge_index, n_src, n_dst, "edge_index")]
    if exclude is not None:
        forbidden.append(_codes(exclude, n_src, n_dst, "exclude"))
    codes = np.concatenate(forbidden)
    if not directed:
        src, dst = np.divmod(codes, n_dst)
        codes = np.concatenate([codes, dst * n_dst + src])
    codes = np.unique(codes)
    allowed = n_src * n_dst - len(codes)
    if not bipartite:
        allowed -= n_src - int(np.isin(np.arange(n_src) * (n_dst + 1), codes).sum())
    if num_samples > 0 and allowed <= 0:
        raise ValueError("the graph has no non-edge to sample (it is complete)")
    rng = np.random.default_rng(seed)
    out = np.zeros(0, dtype=np.int64)
    for _ in range(_MAX_ROUNDS):
        if len(out) >= num_samples:
            break
        draw = rng.integers(0, n_src * n_dst, size=2 * (num_samples - len(out)) + 16)
        keep = ~np.isin(draw, codes)
        if not bipartite:
            keep &= (draw // n_dst) != (draw % n_dst)
        out = np.concatenate([out, draw[keep]])
    else:
        if len(out) < num_samples:
            raise ValueError(f"could not draw {num_samples} negatives in {_MAX_ROUNDS} rounds; "
                             f"the graph is nearly complete ({allowed} non-edges)")
    out = out[:num_samples]
    return torch.from_numpy(np.stack([out // n_dst, out % n_dst])).long()


def link_metrics(pos_logits: Any, neg_logits: Any, *, threshold: float = 0.0) -> dict[str, float]:
    """AP, AUC, F1, precision and recall of positive vs negative edge logits."""
    from sklearn.metrics import (
        average_precision_score,
        f1_score,
        precision_score,
        recall_score,
        roc_auc_score,
    )

    pos = np.asarray(torch.as_tensor(pos_logits).detach().float().cpu()).reshape(-1)
    neg = np.asarray(torch.as_tensor(neg_logits).detach().float().cpu()).reshape(-1)
    if len(pos) == 0 or len(neg) == 0:
        raise ValueError(f"need at least one positive and one negative logit; got {len(pos)} "
                         f"and {len(neg)}")
    scores = np.concatenate([pos, neg])
    if not np.isfinite(scores).all():
        raise ValueError("logits must be finite")
    labels = np.concatenate([np.ones(len(pos)), np.zeros(len(neg))])
    pred = scores > threshold
    return {"ap": float(average_precision_score(labels, scores)),
            "auc": float(roc_auc_score(labels, scores)),
            "f1": float(f1_score(labels, pred, zero_division=0)),
            "precision": float(precision_score(labels, pred, zero_division=0)),
            "recall": float(recall_score(labels, pred, zero_division=0))}


def mean_std(values: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (ddof = 1; 0.0 for a single run) over runs."""
    v = np.asarray(list(values), dtype=float)
    if v.size == 0:
        raise ValueError("values must be non-empty")
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0
