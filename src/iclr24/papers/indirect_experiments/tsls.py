"""Weighted two-stage least squares and its influence function (Chandak et al., ICLR 2024,
Sec. 4; official ``bootstrap_IV_closedform.py``).

theta_hat = (X^T W Z (Z^T W Z)^{-1} Z^T W X)^{-1} X^T W Z (Z^T W Z)^{-1} Z^T W Y, a ridge of 1e-5
on both inverses. Influence of sample i = derivative of theta_hat in its weight w_i, from the
first-order condition G Z^T W (Y - X theta) = 0 with G = X^T W Z (Z^T W Z)^{-1}, A = G Z^T W X:
psi_i = A^{-1} [G z_i e_i + (x_i - G z_i) z_i^T gamma], e = Y - X theta_hat,
gamma = (Z^T W Z)^{-1} Z^T W e; removing sample i moves theta_hat by about -psi_i. The official
code keeps only the first term, -A^{-1} G z_i (x_i^T theta_hat - y_i); the second (the
instrument-level mean residual, O(1/sqrt(n)) relative) makes psi the exact derivative, so it
matches leave-one-out to first order at every n. Its influence on the squared error w.r.t. a reference
theta_ref, as in the official ``get_inf``: IF_i = psi_i^T (theta_hat - theta_ref) - ||psi_i||^2
(IF_i > 0: sample i increases the error).
"""

from __future__ import annotations

import numpy as np

__all__ = ["tsls", "tsls_influence"]


def _check(X, Y, Z, weights):
    X, Y, Z = (np.asarray(a, dtype=np.float64) for a in (X, Y, Z))
    if X.ndim != 2 or Z.ndim != 2 or Y.ndim != 1 or not X.shape[0] == Y.shape[0] == Z.shape[0]:
        raise ValueError(f"X (n, p), Y (n,) and Z (n, q) must share n; got {X.shape}, "
                         f"{Y.shape}, {Z.shape}")
    if Z.shape[1] < X.shape[1]:
        raise ValueError(f"need at least as many instruments as regressors: Z has "
                         f"{Z.shape[1]} columns, X has {X.shape[1]}")
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (X.shape[0],) or np.any(w < 0):
        raise ValueError("weights must be n non-negative numbers")
    return X, Y, Z, w


def _pieces(X, Z, w, ridge):
    ZtWZ = Z.T @ (w[:, None] * Z) + ridge * np.eye(Z.shape[1])
    XtWZ = X.T @ (w[:, None] * Z)
    G = np.linalg.solve(ZtWZ, XtWZ.T).T                       # X^T W Z (Z^T W Z)^{-1}
    A = G @ XtWZ.T + ridge * np.eye(X.shape[1])               # X^T W P_Z X
    return G, A


def tsls(X, Y, Z, weights=None, ridge: float = 1e-5) -> np.ndarray:
    """Weighted 2SLS estimate (p,). X: (n, p) regressors, Y: (n,), Z: (n, q) instruments."""
    X, Y, Z, w = _check(X, Y, Z, weights)
    G, A = _pieces(X, Z, w, ridge)
    return np.linalg.solve(A, G @ (Z.T @ (w * Y)))


def tsls_influence(theta_hat, X, Y, Z, weights=None, theta_ref=None, ridge: float = 1e-5):
    """(psi (n, p), IF (n,)): per-sample influence on theta_hat, and on the squared error with
    respect to ``theta_ref`` (IF is None when theta_ref is None)."""
    X, Y, Z, w = _check(X, Y, Z, weights)
    G, A = _pieces(X, Z, w, ridge)
    e = Y - X @ np.asarray(theta_hat, dtype=np.float64)       # y_i - x_i^T theta_hat
    ZtWZ = Z.T @ (w[:, None] * Z) + ridge * np.eye(Z.shape[1])
    gamma = np.linalg.solve(ZtWZ, Z.T @ (w * e))
    Gz = Z @ G.T                                              # G z_i, (n, p)
    inner = Gz * e[:, None] + (X - Gz) * (Z @ gamma)[:, None]
    psi = np.linalg.solve(A, inner.T).T                       # A^{-1} [...]
    if theta_ref is None:
        return psi, None
    diff = np.asarray(theta_hat, dtype=np.float64) - np.asarray(theta_ref, dtype=np.float64)
    return psi, psi @ diff - (psi ** 2).sum(axis=1)           # IF_i = psi^T (th - ref) - |psi|^2
