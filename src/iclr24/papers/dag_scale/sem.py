"""Random DAGs and structural equation models (Seng et al., ICLR 2024, experiments section).

Convention: B[i, j] != 0 is an edge i -> j, and X_j = sum_i B[i, j] X_i + N_j, i.e. X = X B + N for
a data matrix with samples as rows. Population covariance Sigma = (I - B)^{-T} D (I - B)^{-1},
D = diag(noise variances). Weights are U(+-[0.5, 2]); ER graphs have expected degree k; SF graphs
are Barabasi-Albert graphs oriented along a random order.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "is_dag",
    "population_covariance",
    "simulate_anm",
    "simulate_dag",
    "simulate_linear_sem",
]


def _check_rng(rng):
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")


def is_dag(B: np.ndarray) -> bool:
    """True if the weighted adjacency B (d, d) has no directed cycle. B must be square and
    finite (a NaN weight is neither an edge nor a non-edge)."""
    W = np.asarray(B, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1]:
        raise ValueError(f"B must be a square (d, d) matrix, got shape {W.shape}")
    if not np.all(np.isfinite(W)):
        raise ValueError("B must be finite: a NaN or infinite weight is not an edge or a "
                         "non-edge")
    A = (W != 0).astype(float)
    d = A.shape[0]
    reach = A.copy()
    for _ in range(d):
        if np.trace(reach) > 0:
            return False
        reach = (reach @ A > 0).astype(float)
        if not reach.any():
            return True
    return np.trace(reach) == 0


def simulate_dag(d: int, k: float, graph: str, rng: np.random.Generator) -> np.ndarray:
    """Weighted DAG adjacency (d, d): ``graph`` "ER" (edge probability k / (d - 1)) or "SF"
    (Barabasi-Albert, max(1, round(k / 2)) edges per new node); weights U(+-[0.5, 2])."""
    _check_rng(rng)
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or d < 2:
        raise ValueError(f"d must be an int >= 2, got {d!r}")
    if graph not in ("ER", "SF"):
        raise ValueError(f"graph must be 'ER' or 'SF', got {graph!r}")
    if not 0 < k <= d - 1:
        raise ValueError(f"k (expected degree) must be in (0, d - 1], got {k!r}")
    if graph == "ER":
        upper = np.triu(rng.random((d, d)) < k / (d - 1), 1)
    else:
        import networkx as nx

        g = nx.barabasi_albert_graph(d, max(1, round(k / 2)), seed=int(rng.integers(2 ** 31)))
        upper = np.zeros((d, d), dtype=bool)
        for i, j in g.edges:
            upper[min(i, j), max(i, j)] = True
    weights = rng.uniform(0.5, 2.0, (d, d)) * rng.choice([-1.0, 1.0], (d, d))
    perm = rng.permutation(d)
    B = np.zeros((d, d))
    B[np.ix_(perm, perm)] = upper * weights                  # random topological order
    return B


def population_covariance(B: np.ndarray, noise_var) -> np.ndarray:
    """Sigma = (I - B)^{-T} D (I - B)^{-1} for the linear SEM X = X B + N."""
    B = np.asarray(B, dtype=float)
    d = B.shape[0]
    if not is_dag(B):
        raise ValueError("B must be a square adjacency matrix of a DAG")
    D = np.broadcast_to(np.asarray(noise_var, dtype=float), (d,))
    if not np.all(np.isfinite(D) & (D > 0)):
        raise ValueError(f"noise variances must be positive and finite, got {noise_var!r}")
    inv = np.linalg.inv(np.eye(d) - B)
    return inv.T @ np.diag(D) @ inv


def simulate_linear_sem(d: int, k: float, graph: str, n: int, noise_scale, rng):
    """(X (n, d), B (d, d), noise variances (d,)). ``noise_scale``: a positive number (equal
    noise standard deviations) or "random" (sigma_j ~ U(0.5, 1.5))."""
    B = simulate_dag(d, k, graph, rng)
    if isinstance(noise_scale, str):
        if noise_scale != "random":
            raise ValueError(f"noise_scale must be a positive number or 'random', "
                             f"got {noise_scale!r}")
        std = rng.uniform(0.5, 1.5, d)
    else:
        if not noise_scale > 0:
            raise ValueError(f"noise_scale must be positive, got {noise_scale!r}")
        std = np.full(d, float(noise_scale))
    N = rng.standard_normal((n, d)) * std
    X = N @ np.linalg.inv(np.eye(d) - B)                      # X = X B + N
    return X, B, std ** 2


def simulate_anm(d: int, k: float, graph: str, n: int, rng: np.random.Generator,
                 noise_scale: float = 1.0):
    """Additive noise model X_j = sum_{i in pa(j)} w_ij tanh(X_i) + v_ij sin(X_i) + N_j
    (Gaussian noise); returns (X (n, d), binary adjacency (d, d))."""
    B = simulate_dag(d, k, graph, rng)
    A = B != 0
    order = _topological_order(A)
    V = rng.uniform(0.5, 2.0, (d, d)) * rng.choice([-1.0, 1.0], (d, d))
    X = np.zeros((n, d))
    for j in order:
        pa = np.flatnonzero(A[:, j])
        X[:, j] = (np.tanh(X[:, pa]) @ B[pa, j] + np.sin(X[:, pa]) @ V[pa, j]
                   + noise_scale * rng.standard_normal(n))
    return X, A.astype(int)


def _topological_order(A):
    A = np.asarray(A, dtype=bool).copy()
    order, remaining = [], set(range(A.shape[0]))
    while remaining:
        roots = [j for j in sorted(remaining) if not A[list(remaining), j].any()]
        order += roots
        remaining -= set(roots)
    return order
