"""Dense graph quantities for small graphs, in float64 numpy, with a size guard.

- ``normalized_laplacian``: L = I - D^{-1/2} A D^{-1/2}, the same matrix as
  ``scipy.sparse.csgraph.laplacian(A, normed=True)`` (an isolated node has a zero row and column).
- ``shortest_path_distances``: hop distances from successive boolean powers of A + I (the
  distance-``k`` ring is what ``(A + I)^k`` reaches and ``(A + I)^{k-1}`` does not).
- ``total_effective_resistance``: the Kirchhoff index, sum over unordered connected pairs of
  R_uv = (e_u - e_v)^T L^+ (e_u - e_v); per connected component it equals n_c tr(L_c^+).

Everything is O(n^2) memory and up to O(n^3) time; graphs above ``DENSE_NODE_LIMIT`` nodes raise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "DENSE_NODE_LIMIT",
    "dense_adjacency",
    "normalized_laplacian",
    "shortest_path_distances",
    "total_effective_resistance",
]

DENSE_NODE_LIMIT = 2000


def _edges(edge_index: Any, num_nodes: Any) -> tuple[np.ndarray, int]:
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, (int, np.integer)):
        raise TypeError(f"num_nodes must be an int; got {type(num_nodes).__name__}")
    n = int(num_nodes)
    if n < 1:
        raise ValueError(f"num_nodes must be >= 1; got {n} (empty graph)")
    if n > DENSE_NODE_LIMIT:
        raise ValueError(f"num_nodes = {n} is above the dense-size limit DENSE_NODE_LIMIT = "
                         f"{DENSE_NODE_LIMIT}; these quantities build n x n matrices")
    e = np.asarray(edge_index.cpu() if hasattr(edge_index, "cpu") else edge_index)
    if e.size == 0:
        return np.zeros((2, 0), dtype=np.int64), n
    if e.ndim != 2 or e.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E); got {e.shape}")
    e = e.astype(np.int64)
    if e.min() < 0 or e.max() >= n:
        raise ValueError(f"edge_index holds node ids outside [0, {n}); "
                         f"range [{e.min()}, {e.max()}]")
    return e, n


def dense_adjacency(edge_index: Any, num_nodes: int) -> np.ndarray:
    """Symmetric 0/1 adjacency (n, n) of the undirected union of ``edge_index``; no self loops."""
    e, n = _edges(edge_index, num_nodes)
    a = np.zeros((n, n))
    a[e[0], e[1]] = 1.0
    a[e[1], e[0]] = 1.0
    np.fill_diagonal(a, 0.0)
    return a


def normalized_laplacian(edge_index: Any, num_nodes: int) -> np.ndarray:
    """L = I - D^{-1/2} A D^{-1/2} (n, n); rows and columns of isolated nodes are zero."""
    a = dense_adjacency(edge_index, num_nodes)
    deg = a.sum(axis=1)
    connected = deg > 0
    inv_sqrt = np.zeros_like(deg)
    inv_sqrt[connected] = deg[connected] ** -0.5
    lap = -inv_sqrt[:, None] * a * inv_sqrt[None, :]
    lap[np.diag_indices_from(lap)] = connected.astype(float)  # L_ii = 1 if deg_i > 0 else 0
    return lap


def shortest_path_distances(edge_index: Any, num_nodes: int, *,
                            max_distance: int | None = None) -> np.ndarray:
    """Hop distances (n, n) int64 by boolean powers of A + I; -1 where unreachable or farther
    than ``max_distance``."""
    if max_distance is not None and (isinstance(max_distance, bool)
                                     or not isinstance(max_distance, (int, np.integer))
                                     or max_distance < 0):
        raise ValueError(f"max_distance must be a non-negative int or None; got {max_distance!r}")
    a = dense_adjacency(edge_index, num_nodes) > 0
    n = a.shape[0]
    step = (a | np.eye(n, dtype=bool)).astype(np.float32)  # float32 matmul: counts <= n exact
    dist = np.full((n, n), -1, dtype=np.int64)
    reached = np.eye(n, dtype=bool)
    dist[reached] = 0
    limit = n - 1 if max_distance is None else min(int(max_distance), n - 1)
    for k in range(1, limit + 1):
        nxt = (reached.astype(np.float32) @ step) > 0  # (A + I)^k > 0
        ring = nxt & ~reached
        if not ring.any():
            break
        dist[ring] = k
        reached = nxt
    return dist


def total_effective_resistance(edge_index: Any, num_nodes: int) -> float:
    """Sum of effective resistances over unordered connected node pairs (Kirchhoff index).

    Pairs in different components (infinite resistance) are left out, so a disconnected graph
    gives the sum of its components' indices; per component, sum_{u<v} R_uv = n_c tr(L_c^+)
    = n_c sum_{i>=2} 1/lambda_i over the component Laplacian's non-zero eigenvalues (read from
    the spectrum: ``pinv``'s default cutoff kept the round-off of lambda_1 = 0 on nearly complete
    graphs and returned ~1e15 instead of ~86).
    """
    a = dense_adjacency(edge_index, num_nodes)
    from scipy.sparse.csgraph import connected_components

    _, comp = connected_components(a, directed=False)
    total = 0.0
    for c in np.unique(comp):
        idx = np.flatnonzero(comp == c)
        if len(idx) < 2:
            continue
        sub = a[np.ix_(idx, idx)]
        lam = np.linalg.eigvalsh(np.diag(sub.sum(axis=1)) - sub)  # ascending, lam[0] = 0
        total += len(idx) * float(np.sum(1.0 / lam[1:]))  # n_c tr(L_c^+) = n_c sum 1/lambda_i
    return total
