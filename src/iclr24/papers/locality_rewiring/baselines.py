"""Rewiring baselines for LASER's comparison (paper Sec. 3 trade-offs, Table 1 / Fig. 3 arms).

- :func:`khop_rewiring` - spatial multi-hop rewiring: every pair at distance 2..K becomes an edge
  (both directions), tagged with snapshot id d - 1. Satisfies locality, not sparsity. LASER with
  rho = 1 gives exactly this edge set.
- :func:`random_rewiring` - uniform non-edges (no distance constraint), at a given budget; the
  stand-in for rewiring that ignores locality.
- :func:`greedy_resistance_rewiring` - a "spectral-like" rewiring: adds, one at a time, the
  non-edge whose insertion lowers the total effective resistance R_tot = n tr(L^+) the most
  (exact greedy over all non-adjacent pairs). FoSR/SDRF are not in PyG and their code may not be
  copied, so this greedy is the spectral arm: it targets over-squashing (i) and sparsity (iii)
  but is free to ignore locality (ii), as the paper argues spectral methods do.

Adding a unit edge b = e_u - e_v to a connected graph changes L^+ by Sherman-Morrison,
    L'^+ = L^+ - (L^+ b)(L^+ b)^T / (1 + R_uv),     R_uv = b^T L^+ b,
so tr drops by ||L^+ b||^2 / (1 + R_uv) (Ghosh, Boyd & Saberi 2008), evaluated for all pairs at
once from P = L^+ and P^2.

All return a shallow copy of ``data`` whose ``edge_index`` holds the original edges first and the
added ones after, with ``edge_snapshot`` (0 = original), like :class:`LaserTransform`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy.sparse.csgraph import connected_components

from iclr24.kits.graphs import dense_adjacency, shortest_path_distances

from .rewiring import _graph_arrays, _int_at_least

__all__ = ["greedy_resistance_rewiring", "khop_rewiring", "random_rewiring"]


def _with_added(data: Any, snapshots: Sequence[np.ndarray]) -> Any:
    import copy

    import torch

    edge_index, _ = _graph_arrays(data)
    if "edge_snapshot" in data:
        raise ValueError("data already has edge_snapshot (it was rewired); pass the original "
                         "graph")
    out = copy.copy(data)
    device = edge_index.device
    new = [torch.as_tensor(np.asarray(p, dtype=np.int64).reshape(2, -1), device=device)
           for p in snapshots]
    ids = [torch.full((p.shape[1],), lvl, dtype=torch.long, device=device)
           for lvl, p in enumerate(new, start=1)]
    out.edge_index = torch.cat([edge_index.long(), *new], dim=1)
    out.edge_snapshot = torch.cat(
        [torch.zeros(edge_index.shape[1], dtype=torch.long, device=device), *ids])
    return out


def khop_rewiring(data: Any, max_distance: int) -> Any:
    """All pairs at hop distance 2..``max_distance`` as edges in both directions, snapshot id
    d - 1 (so it has the same snapshot layout as ``LaserTransform(max_distance)``)."""
    max_distance = _int_at_least("max_distance", max_distance, 2)
    edge_index, n = _graph_arrays(data)
    dist = shortest_path_distances(edge_index, n, max_distance=max_distance)
    snapshots = []
    for r in range(2, max_distance + 1):
        dst, src = np.nonzero(dist == r)  # row v = receiver, column u = sender, as in LASER
        snapshots.append(np.stack([src, dst]))
    return _with_added(data, snapshots)


def _non_edges(edge_index: Any, n: int) -> tuple[np.ndarray, np.ndarray]:
    free = dense_adjacency(edge_index, n) == 0
    np.fill_diagonal(free, False)
    return free, np.argwhere(free)


def random_rewiring(data: Any, num_added: int | Sequence[int], *, seed: int,
                    symmetric: bool = False) -> Any:
    """Add uniformly random distinct non-edges (pairs not adjacent in the undirected graph).

    ``num_added``: an int (one snapshot, id 1) or one count per snapshot (ids 1, 2, ...), e.g.
    LASER's per-snapshot counts. With ``symmetric`` each count is a number of unordered pairs,
    each added in both directions; otherwise of directed edges (u -> v).
    """
    counts = [num_added] if isinstance(num_added, (int, np.integer)) else list(num_added)
    counts = [_int_at_least("num_added", c, 0) for c in counts]
    edge_index, n = _graph_arrays(data)
    _, pairs = _non_edges(edge_index, n)
    if symmetric:
        pairs = pairs[pairs[:, 0] < pairs[:, 1]]
    total = sum(counts)
    if total > len(pairs):
        raise ValueError(f"num_added asks for {total} new edges but the graph has only "
                         f"{len(pairs)} non-adjacent {'pairs' if symmetric else 'ordered pairs'}")
    rng = np.random.default_rng(seed)
    picked = pairs[rng.choice(len(pairs), size=total, replace=False)]
    snapshots, start = [], 0
    for c in counts:
        chunk = picked[start:start + c].T
        start += c
        snapshots.append(np.concatenate([chunk, chunk[::-1]], axis=1) if symmetric else chunk)
    return _with_added(data, snapshots)


def greedy_resistance_rewiring(data: Any, num_pairs: int) -> Any:
    """Add ``num_pairs`` undirected edges (both directions, snapshot id 1), each the non-edge
    with the largest drop of total effective resistance given the edges added before it.

    Needs a connected graph (R_tot is infinite otherwise). Ties go to the lowest (u, v).
    """
    num_pairs = _int_at_least("num_pairs", num_pairs, 0)
    edge_index, n = _graph_arrays(data)
    free, _ = _non_edges(edge_index, n)
    a = dense_adjacency(edge_index, n)
    lap = np.diag(a.sum(axis=1)) - a
    if n > 1 and connected_components(a, directed=False)[0] > 1:
        raise ValueError("greedy_resistance_rewiring needs a connected graph (the total "
                         "effective resistance of a disconnected graph is infinite)")
    free = np.triu(free, 1)
    if num_pairs > int(free.sum()):
        raise ValueError(f"num_pairs = {num_pairs} exceeds the {int(free.sum())} non-edges")
    pinv = np.linalg.pinv(lap, hermitian=True)
    added = []
    for _ in range(num_pairs):
        p2 = pinv @ pinv
        d1, d2 = np.diag(pinv), np.diag(p2)
        resist = d1[:, None] + d1[None, :] - 2 * pinv  # R_uv = P_uu + P_vv - 2 P_uv
        drop = (d2[:, None] + d2[None, :] - 2 * p2) / (1.0 + resist)  # ||P b||^2 / (1 + R_uv)
        drop[~free] = -np.inf
        u, v = np.unravel_index(int(np.argmax(drop)), drop.shape)
        col = pinv[:, u] - pinv[:, v]
        pinv = pinv - np.outer(col, col) / (1.0 + resist[u, v])  # Sherman-Morrison
        free[u, v] = False
        added.append((u, v))
    pairs = np.asarray(added, dtype=np.int64).reshape(-1, 2).T
    return _with_added(data, [np.concatenate([pairs, pairs[::-1]], axis=1)])
