"""A compact GOLEM (Ng, Ghassami & Zhang, NeurIPS 2020): the Gaussian likelihood score of a
linear SEM with a soft DAG penalty, equal (EV) or non-equal (NV) noise variances.

Score of a weighted adjacency B (d, d) (zero diagonal) on centred data X (n, d):
  EV: (d / 2) log ||X - X B||_F^2                - log |det(I - B)| + lambda_1 ||B||_1 + lambda_2 h(B)
  NV: (1 / 2) sum_j log ||X_j - X B_j||^2        - log |det(I - B)| + lambda_1 ||B||_1 + lambda_2 h(B)
with h(B) = tr exp(B o B) - d (NOTEARS' acyclicity function). Defaults as in the GOLEM paper:
EV lambda_1 = 2e-2, NV lambda_1 = 2e-3, lambda_2 = 5, edges |B_ij| > 0.3; NV starts from the
EV solution, as the paper does.

Differs from the paper's code: the same score is minimised by L-BFGS-B with B = B+ - B-
(B+/- >= 0, the usual smooth treatment of the l1 term) instead of 1e5 Adam steps at learning
rate 1e-3 (seconds instead of minutes per fit on a CPU); the optimum of the score is the method,
the optimiser is not. gcastle, which ships GOLEM, pins an older torch than ours.
"""

from __future__ import annotations

import numpy as np

from iclr24.kits.threads import single_threaded

__all__ = ["golem", "golem_score"]


def _check(X: np.ndarray) -> np.ndarray:
    X = np.asarray(X, dtype=float)
    if X.ndim != 2 or X.shape[0] < 3 or X.shape[1] < 2 or not np.all(np.isfinite(X)):
        raise ValueError(f"X must be a finite (n, d) array with n >= 3, d >= 2, got {X.shape}")
    return X - X.mean(axis=0)


def golem_score(B: np.ndarray, X: np.ndarray, *, equal_variances: bool, lambda_1: float,
                lambda_2: float = 5.0) -> tuple[float, np.ndarray]:
    """GOLEM's score of B (d, d) on centred X (n, d) and its gradient (d, d) (the l1 term by
    its subgradient sign(B))."""
    from scipy.linalg import expm

    X, B = np.asarray(X, dtype=float), np.asarray(B, dtype=float)
    if X.ndim != 2 or B.shape != (X.shape[1], X.shape[1]):
        raise ValueError(f"X must be (n, d) and B (d, d); got X {X.shape}, B {B.shape}")
    d = X.shape[1]
    R = X - X @ B
    rss = (R ** 2).sum(axis=0)                                      # ||X_j - X B_j||^2
    inv = np.linalg.inv(np.eye(d) - B)
    _, logdet = np.linalg.slogdet(np.eye(d) - B)
    E = expm(B * B)
    if equal_variances:
        lik = 0.5 * d * np.log(rss.sum())                           # (d/2) log ||X - XB||^2
        d_lik = -d * (X.T @ R) / rss.sum()
    else:
        lik = 0.5 * np.log(rss).sum()                               # (1/2) sum_j log ||X_j - XB_j||^2
        d_lik = -(X.T @ R) / rss[None, :]
    score = lik - logdet + lambda_1 * np.abs(B).sum() + lambda_2 * (np.trace(E) - d)
    grad = d_lik + inv.T + lambda_1 * np.sign(B) + lambda_2 * 2 * B * E.T   # d(-log|det|) = (I-B)^-T
    return float(score), grad


def golem(X, *, equal_variances: bool = False, lambda_1: float | None = None,
          lambda_2: float = 5.0, w_threshold: float = 0.3, B_init: np.ndarray | None = None,
          max_iter: int = 5000) -> np.ndarray:
    """GOLEM-NV (default) or GOLEM-EV on X (n, d); returns the thresholded weighted adjacency
    (d, d), [i, j] = weight of i -> j. ``lambda_1`` defaults to 2e-3 (NV) or 2e-2 (EV); NV
    without ``B_init`` starts from the GOLEM-EV solution (unthresholded)."""
    from scipy.optimize import minimize

    Xc = _check(X)
    d = Xc.shape[1]
    if lambda_1 is None:
        lambda_1 = 2e-2 if equal_variances else 2e-3
    if lambda_1 < 0 or lambda_2 < 0 or w_threshold < 0:
        raise ValueError("lambda_1, lambda_2 and w_threshold must be non-negative, got "
                         f"{lambda_1!r}, {lambda_2!r}, {w_threshold!r}")
    if B_init is None:
        B_init = np.zeros((d, d)) if equal_variances else golem(
            Xc, equal_variances=True, lambda_2=lambda_2, w_threshold=0.0, max_iter=max_iter)
    B_init = np.asarray(B_init, dtype=float)
    if B_init.shape != (d, d):
        raise ValueError(f"B_init must have shape {(d, d)}, got {B_init.shape}")

    def fun(w):
        B = w[:d * d].reshape(d, d) - w[d * d:].reshape(d, d)
        s, g = golem_score(B, Xc, equal_variances=equal_variances, lambda_1=0.0,
                           lambda_2=lambda_2)
        s += lambda_1 * w.sum()                                     # ||B||_1 = sum(B+ + B-)
        g = g.ravel()
        return s, np.concatenate([g + lambda_1, -g + lambda_1])

    off = [(0.0, 0.0) if i == j else (0.0, None) for i in range(d) for j in range(d)]
    w0 = np.concatenate([np.maximum(B_init, 0).ravel(), np.maximum(-B_init, 0).ravel()])
    with single_threaded():                       # BLAS threads on d x d products: ~50x slower
        res = minimize(fun, w0, jac=True, method="L-BFGS-B", bounds=off + off,
                       options={"maxiter": max_iter})
    B = res.x[:d * d].reshape(d, d) - res.x[d * d:].reshape(d, d)
    B[np.abs(B) <= w_threshold] = 0.0
    return B
