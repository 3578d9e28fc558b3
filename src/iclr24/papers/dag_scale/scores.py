"""Population scores of DAGs and the rescaling attack (Seng et al., ICLR 2024, Sec. 3-4).

r_j(G) = Var(X_j | X_pa(j)) = Sigma_jj - Sigma_jP Sigma_PP^{-1} Sigma_Pj (optimal linear weights);
LS(G) = sum_j r_j(G) (square loss: NOTEARS, GOLEM-EV up to a monotone map);
LL(G) = 1/2 sum_j log r_j(G) (Gaussian likelihood with non-equal variances, GOLEM-NV).
Rescaling X -> S X maps r_j to s_j^2 r_j, so LS(G; s) = sum_j s_j^2 r_j(G) depends on the scale
while LL(G; s) = LL(G) + sum_j log s_j shifts every DAG by the same constant.

Attack: along any complete order pi, prod_j r_pi(j) = det Sigma. Choosing
s_pi'(j)^2 = (det Sigma)^{1/d} / r_pi'(j) for a target order pi' makes all its residual variances
equal, so LS(pi'; s) = d (det S^2 Sigma)^{1/d} <= LS(pi; s) for every order by AM-GM.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "MAX_EXACT_D",
    "best_order_exact",
    "is_consistent_order",
    "ll_score",
    "ls_score",
    "order_residual_variances",
    "population_residual_variances",
    "rescale_covariance",
    "scale_attack",
]

MAX_EXACT_D = 15


def _check_cov(Sigma) -> np.ndarray:
    S = np.asarray(Sigma, dtype=float)
    if S.ndim != 2 or S.shape[0] != S.shape[1] or not np.allclose(S, S.T):
        raise ValueError("Sigma must be a symmetric square matrix")
    try:
        np.linalg.cholesky(S)
    except np.linalg.LinAlgError:
        raise ValueError("Sigma must be positive definite") from None
    return S


def _conditional_variance(S, j, P):
    if len(P) == 0:
        return float(S[j, j])
    P = list(P)
    return float(S[j, j] - S[j, P] @ np.linalg.solve(S[np.ix_(P, P)], S[P, j]))


def population_residual_variances(Sigma, dag) -> np.ndarray:
    """r_j(G) for each node; ``dag`` is a (d, d) adjacency (nonzero [i, j] = edge i -> j)."""
    S = _check_cov(Sigma)
    A = np.asarray(dag) != 0
    if A.shape != S.shape:
        raise ValueError(f"dag must have shape {S.shape}, got {A.shape}")
    return np.array([_conditional_variance(S, j, np.flatnonzero(A[:, j]))
                     for j in range(S.shape[0])])


def _check_order(order, d) -> list[int]:
    o = [int(v) for v in np.asarray(order).reshape(-1)]
    if sorted(o) != list(range(d)):
        raise ValueError(f"order must be a permutation of 0..{d - 1}, got {list(order)}")
    return o


def order_residual_variances(Sigma, order) -> np.ndarray:
    """r_j along a complete order (parents = all predecessors), indexed by node."""
    S = _check_cov(Sigma)
    o = _check_order(order, S.shape[0])
    r = np.empty(S.shape[0])
    for pos, j in enumerate(o):
        r[j] = _conditional_variance(S, j, o[:pos])
    return r


def ls_score(Sigma, dag) -> float:
    """LS(G) = sum_j r_j(G)."""
    return float(population_residual_variances(Sigma, dag).sum())


def ll_score(Sigma, dag) -> float:
    """LL(G) = 1/2 sum_j log r_j(G) (to be minimised, like LS)."""
    return float(0.5 * np.log(population_residual_variances(Sigma, dag)).sum())


def best_order_exact(Sigma, score: str = "ls") -> tuple[list[int], float]:
    """The order minimising the population score of its complete DAG (equal to that of its
    minimal I-map), by dynamic programming over subsets; d <= 15. Returns (order, score)."""
    S = _check_cov(Sigma)
    d = S.shape[0]
    if d > MAX_EXACT_D:
        raise ValueError(f"best_order_exact enumerates 2^d subsets; d must be <= {MAX_EXACT_D}, "
                         f"got {d}")
    if score not in ("ls", "ll"):
        raise ValueError(f"score must be 'ls' or 'll', got {score!r}")
    cost = (lambda r: r) if score == "ls" else (lambda r: 0.5 * np.log(r))
    full = (1 << d) - 1
    best = np.full(1 << d, np.inf)
    back = np.full(1 << d, -1, dtype=int)
    best[0] = 0.0
    for mask in range(1 << d):                     # masks in increasing order: subsets first
        if not np.isfinite(best[mask]):
            continue
        members = [i for i in range(d) if mask >> i & 1]
        for j in range(d):
            if mask >> j & 1:
                continue
            new = mask | 1 << j
            val = best[mask] + cost(_conditional_variance(S, j, members))
            if val < best[new]:
                best[new], back[new] = val, j
    order, mask = [], full
    while mask:
        j = int(back[mask])
        order.append(j)
        mask &= ~(1 << j)
    return order[::-1], float(best[full])


def scale_attack(Sigma, target_order) -> np.ndarray:
    """Scales s (d,) under which ``target_order`` minimises the LS score:
    s_pi'(j)^2 = (det Sigma)^{1/d} / r_pi'(j)."""
    S = _check_cov(Sigma)
    r = order_residual_variances(S, target_order)
    d = S.shape[0]
    geo = np.exp(np.linalg.slogdet(S)[1] / d)                # (det Sigma)^{1/d}
    return np.sqrt(geo / r)


def rescale_covariance(Sigma, s) -> np.ndarray:
    """S Sigma S for S = diag(s)."""
    s = np.asarray(s, dtype=float)
    return np.asarray(Sigma) * np.outer(s, s)


def is_consistent_order(order, dag) -> bool:
    """True if every edge i -> j of ``dag`` has i before j in ``order``."""
    A = np.asarray(dag) != 0
    pos = np.empty(A.shape[0], dtype=int)
    pos[_check_order(order, A.shape[0])] = np.arange(A.shape[0])
    i, j = np.nonzero(A)
    return bool(np.all(pos[i] < pos[j]))
