"""Weighted two-stage least squares and its influence function (Chandak et al., ICLR 2024,
Sec. 4; official ``bootstrap_IV_closedform.py``).

theta_hat = (X^T W Z (Z^T W Z)^{-1} Z^T W X)^{-1} X^T W Z (Z^T W Z)^{-1} Z^T W Y, a ridge of 1e-5
on both inverses. Influence of sample i = derivative of theta_hat in its weight w_i, from the
first-order condition G Z^T W (Y - X theta) = 0 with G = X^T W Z (Z^T W Z)^{-1}, A = G Z^T W X:
psi_i = A^{-1} [G z_i e_i + (x_i - G z_i) z_i^T gamma], e = Y - X theta_hat,
gamma = (Z^T W Z)^{-1} Z^T W e; removing sample i moves theta_hat by about -psi_i. The official
code keeps only the first term, -A^{-1} G z_i (x_i^T theta_hat - y_i); the second (the
instrument-level mean residual, O(1/sqrt(n)) relative) makes psi the exact derivative, so it
matches leave-one-out to first order at every n. Its influence on the squared error w.r.t. a
reference theta_ref, d = theta_hat - theta_ref, in two forms (``form``):

- ``"official"`` (default, the official ``get_inf``): IF_i = psi_i^T d - ||psi_i||^2;
- ``"loo"``: the change of the squared error when sample i is left out, with the first-order
  leave-one-out estimate theta_hat_{-i} = theta_hat - psi_i:
  IF_i = ||d||^2 - ||d - psi_i||^2 = 2 psi_i^T d - ||psi_i||^2.

The official form halves the linear term, so it is not the leave-one-out influence; the
expected policy gradient built from it aligns less well with the true MSE gradient (the
``gradient_variance`` claim reports both cosines). IF_i > 0: sample i increases the error.

Differences from the official code: the fit raises ``ValueError`` when the instruments do not
identify theta (rank of X^T W Z (Z^T W Z)^+ Z^T W X below dim X, e.g. one instrument only),
where the official ridge would return a finite but meaningless estimate; the ridge is kept for
instruments absent from a sub-sample, which leave theta identified. Non-finite inputs raise.
"""

from __future__ import annotations

import numpy as np

__all__ = ["is_identified", "tsls", "tsls_influence"]

IF_FORMS = ("official", "loo")


def _check(X, Y, Z, weights):
    X, Y, Z = (np.asarray(a, dtype=np.float64) for a in (X, Y, Z))
    if X.ndim != 2 or Z.ndim != 2 or Y.ndim != 1 or not X.shape[0] == Y.shape[0] == Z.shape[0]:
        raise ValueError(f"X (n, p), Y (n,) and Z (n, q) must share n; got {X.shape}, "
                         f"{Y.shape}, {Z.shape}")
    if Z.shape[1] < X.shape[1]:
        raise ValueError(f"need at least as many instruments as regressors: Z has "
                         f"{Z.shape[1]} columns, X has {X.shape[1]}")
    for name, a in (("X", X), ("Y", Y), ("Z", Z)):
        if not np.all(np.isfinite(a)):
            raise ValueError(f"{name} must be finite, got {int(np.sum(~np.isfinite(a)))} "
                             f"NaN/inf entries")
    w = np.ones(X.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    if w.shape != (X.shape[0],) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("weights must be n finite non-negative numbers")
    return X, Y, Z, w


def _identified(X, Z, w) -> bool:
    """rank X^T W Z (Z^T W Z)^+ Z^T W X = dim X: the instruments identify theta without ridge."""
    XtWZ = X.T @ (w[:, None] * Z)
    A0 = XtWZ @ np.linalg.pinv(Z.T @ (w[:, None] * Z), hermitian=True) @ XtWZ.T
    return bool(np.linalg.matrix_rank(A0, hermitian=True) == X.shape[1])


def is_identified(X, Z, weights=None) -> bool:
    """Whether instruments Z (n, q) identify the coefficients of X (n, p) under ``weights``."""
    X, _, Z, w = _check(X, np.zeros(np.asarray(X).shape[0]), Z, weights)
    return _identified(X, Z, w)


def _require_identified(X, Z, w):
    if not _identified(X, Z, w):
        raise ValueError(f"the instruments Z do not identify the {X.shape[1]} coefficients of X "
                         f"(rank-deficient first stage, e.g. a single instrument observed); "
                         f"the ridge would hide this")


def _pieces(X, Z, w, ridge):
    ZtWZ = Z.T @ (w[:, None] * Z) + ridge * np.eye(Z.shape[1])
    XtWZ = X.T @ (w[:, None] * Z)
    G = np.linalg.solve(ZtWZ, XtWZ.T).T                       # X^T W Z (Z^T W Z)^{-1}
    A = G @ XtWZ.T + ridge * np.eye(X.shape[1])               # X^T W P_Z X
    return G, A


def _fit(X, Y, Z, w, ridge):
    G, A = _pieces(X, Z, w, ridge)
    return np.linalg.solve(A, G @ (Z.T @ (w * Y)))          # A^{-1} G Z^T W Y


def _influence(theta_hat, X, Y, Z, w, theta_ref, ridge, form):
    G, A = _pieces(X, Z, w, ridge)
    e = Y - X @ theta_hat                                     # y_i - x_i^T theta_hat
    ZtWZ = Z.T @ (w[:, None] * Z) + ridge * np.eye(Z.shape[1])
    gamma = np.linalg.solve(ZtWZ, Z.T @ (w * e))
    Gz = Z @ G.T                                              # G z_i, (n, p)
    inner = Gz * e[:, None] + (X - Gz) * (Z @ gamma)[:, None]
    psi = np.linalg.solve(A, inner.T).T                       # A^{-1} [...]
    if theta_ref is None:
        return psi, None
    diff = theta_hat - theta_ref
    if form == "official":
        return psi, psi @ diff - (psi ** 2).sum(axis=1)       # IF_i = psi^T d - |psi|^2
    return psi, 2 * psi @ diff - (psi ** 2).sum(axis=1)       # |d|^2 - |d - psi|^2


def tsls(X, Y, Z, weights=None, ridge: float = 1e-5) -> np.ndarray:
    """Weighted 2SLS estimate (p,). X: (n, p) regressors, Y: (n,), Z: (n, q) instruments.
    Raises ``ValueError`` on non-finite inputs and on instruments that do not identify theta."""
    X, Y, Z, w = _check(X, Y, Z, weights)
    _require_identified(X, Z, w)
    return _fit(X, Y, Z, w, ridge)


def tsls_influence(theta_hat, X, Y, Z, weights=None, theta_ref=None, ridge: float = 1e-5,
                   form: str = "official") -> tuple[np.ndarray, np.ndarray | None]:
    """(psi (n, p), IF (n,)): per-sample influence on theta_hat, and on the squared error with
    respect to ``theta_ref`` (IF is None when theta_ref is None); ``form`` "official" (the
    official ``get_inf``) or "loo" (leave-one-out), see the module docstring."""
    if form not in IF_FORMS:
        raise ValueError(f"form must be one of {IF_FORMS}, got {form!r}")
    X, Y, Z, w = _check(X, Y, Z, weights)
    theta_hat = np.asarray(theta_hat, dtype=np.float64)
    if theta_hat.shape != (X.shape[1],) or not np.all(np.isfinite(theta_hat)):
        raise ValueError(f"theta_hat must be {X.shape[1]} finite numbers, got {theta_hat!r}")
    if theta_ref is not None:
        theta_ref = np.asarray(theta_ref, dtype=np.float64)
        if theta_ref.shape != theta_hat.shape or not np.all(np.isfinite(theta_ref)):
            raise ValueError(f"theta_ref must be {X.shape[1]} finite numbers, got {theta_ref!r}")
    _require_identified(X, Z, w)
    return _influence(theta_hat, X, Y, Z, w, theta_ref, ridge, form)
