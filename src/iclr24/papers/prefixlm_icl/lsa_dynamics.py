"""Exact multi-layer linear-self-attention (LSA) dynamics of in-context linear regression.

Paper: Ding et al., "CausalLM is not optimal for in-context learning" (ICLR 2024), Sec. 4
(Theorems on multi-layer LSA) and the official ``theory_plots.py``.

With the construction in which every LSA layer performs one gradient step on the in-context
examples, the prediction of an L-layer stack for a query x_q is

    y_hat_q^(L) = sum_i a_i^(L) x_i^T x_q,
    a_j^(l) = a_j^(l-1) + eta * (y_j - sum_{k in S(j)} a_k^(l-1) x_k^T x_j),   a^(0) = 0,

with S(j) = {1..n} for prefixLM and S(j) = {1..j} for causalLM. In matrix form, with the Gram
matrix G = X X^T, a <- a + eta (y - M a) where M = G (prefix) or tril(G) (causal, diagonal
included). The fixed points are (closed forms in :func:`stationary_point`):

- prefix: G a = y, i.e. w = X^T G^+ y, the minimum-norm least-squares solution;
- causal: tril(G) a = y, i.e. w_j = w_{j-1} + (y_j - w_{j-1}^T x_j) x_j / ||x_j||^2, one pass
  of normalised online gradient descent (Kaczmarz); the query uses w_n.

The recursion converges linearly when 0 < eta < 2 / lambda_max(G) (prefix) or
eta < 2 / max_j ||x_j||^2 (causal; the eigenvalues of I - eta tril(G) are 1 - eta ||x_j||^2).
Nothing is scaled down here: these are the paper's exact recursions (float64 numpy).
"""

from __future__ import annotations

from typing import Literal

import numpy as np

__all__ = [
    "lsa_icl_coefficients",
    "lsa_icl_predict",
    "lsa_stability_bound",
    "stationary_point",
    "stationary_weights",
]

Mode = Literal["prefix", "causal"]


def _check_mode(mode: str) -> str:
    if mode not in ("prefix", "causal"):
        raise ValueError(f"mode must be 'prefix' or 'causal', got {mode!r}")
    return mode


def _as_prompts(X, y) -> tuple[np.ndarray, np.ndarray, bool]:
    """X: (n, d) or (B, n, d); y: (n,) or (B, n). Returns batched float64 arrays."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim not in (2, 3):
        raise ValueError(f"X must have shape (n, d) or (batch, n, d), got {X.shape}")
    if y.shape != X.shape[:-1]:
        raise ValueError(f"y must have shape {X.shape[:-1]} (one target per in-context "
                         f"example of X {X.shape}), got {y.shape}")
    single = X.ndim == 2
    if single:
        X, y = X[None], y[None]
    if X.shape[1] < 1:
        raise ValueError("X needs at least one in-context example")
    if not (np.all(np.isfinite(X)) and np.all(np.isfinite(y))):
        raise ValueError("X and y must be finite")
    return X, y, single


def _operator(X: np.ndarray, mode: str) -> np.ndarray:
    G = X @ np.swapaxes(X, -1, -2)  # G_jk = x_j^T x_k, (B, n, n)
    return G if mode == "prefix" else np.tril(G)  # S(j) = {1..j}: the diagonal is included


def lsa_stability_bound(X, mode: Mode = "prefix") -> float:
    """Largest step size eta (exclusive) for which the recursion converges on every prompt.

    prefix: 2 / lambda_max(X X^T); causal: 2 / max_j ||x_j||^2 (min over the batch).
    X: (n, d) or (batch, n, d).
    """
    _check_mode(mode)
    X, _, _ = _as_prompts(X, np.zeros(np.shape(X)[:-1]))
    if mode == "prefix":
        lam = np.linalg.eigvalsh(X @ np.swapaxes(X, -1, -2))[..., -1]
        top = float(lam.max())
    else:
        top = float(np.max(np.sum(X**2, axis=-1)))
    return np.inf if top == 0 else 2.0 / top


def lsa_icl_coefficients(X, y, n_layers: int, eta: float, mode: Mode = "prefix",
                         check_stability: bool = True) -> np.ndarray:
    """Coefficients a^(l) of the L-layer LSA stack, l = 0..L.

    X: (n, d) or (batch, n, d) in-context inputs; y: (n,) or (batch, n) targets.
    Returns a: (L + 1, n) or (batch, L + 1, n), with a[..., 0, :] = 0.
    Raises ValueError if eta is not below the stability bound of ``mode`` (the message gives
    the bound); pass ``check_stability=False`` to study divergence on purpose.
    """
    _check_mode(mode)
    X, y, single = _as_prompts(X, y)
    if isinstance(n_layers, bool) or not isinstance(n_layers, (int, np.integer)) or n_layers < 0:
        raise ValueError(f"n_layers must be an int >= 0, got {n_layers!r}")
    if isinstance(eta, bool) or not isinstance(eta, (int, float, np.floating)) or not eta > 0:
        raise ValueError(f"eta must be a positive number, got {eta!r}")
    if check_stability:
        bound = lsa_stability_bound(X, mode)
        if not eta < bound:
            rule = "2/lambda_max(XX^T)" if mode == "prefix" else "2/max_j ||x_j||^2"
            raise ValueError(f"eta = {eta:g} is not below the {mode} stability bound "
                             f"{rule} = {bound:.6g}; the recursion would not converge")
    M = _operator(X, mode)
    a = np.zeros((X.shape[0], n_layers + 1, X.shape[1]))
    cur = np.zeros(X.shape[:2])
    for layer in range(1, n_layers + 1):
        # a_j <- a_j + eta (y_j - sum_{k in S(j)} a_k x_k^T x_j)
        cur = cur + eta * (y - np.einsum("bjk,bk->bj", M, cur))
        a[:, layer] = cur
    return a[0] if single else a


def lsa_icl_predict(X, y, Xq, n_layers: int, eta: float, mode: Mode = "prefix",
                    check_stability: bool = True) -> np.ndarray:
    """Query predictions y_hat_q^(l) = sum_i a_i^(l) x_i^T x_q for every layer l = 0..L.

    X: (n, d) or (batch, n, d); y: (n,) or (batch, n); Xq: (m, d) or (batch, m, d).
    Returns (L + 1, m) or (batch, L + 1, m).
    """
    a = lsa_icl_coefficients(X, y, n_layers, eta, mode, check_stability)
    X, _, single = _as_prompts(X, y)
    Xq = np.asarray(Xq, dtype=np.float64)
    Xq = Xq[None] if single and Xq.ndim == 2 else Xq
    if Xq.ndim != 3 or Xq.shape[0] != X.shape[0] or Xq.shape[2] != X.shape[2]:
        raise ValueError(f"Xq must have shape (m, {X.shape[2]}) matching X, got "
                         f"{np.shape(Xq) if not single else Xq.shape[1:]}")
    a = a[None] if single else a
    kern = X @ np.swapaxes(Xq, -1, -2)  # (B, n, m): x_i^T x_q
    out = np.einsum("bln,bnm->blm", a, kern)
    return out[0] if single else out


def stationary_point(X, y, mode: Mode = "prefix") -> np.ndarray:
    """Closed-form fixed point a* of the recursion.

    prefix: a* = (X X^T)^+ y (so X^T a* is the minimum-norm least-squares solution);
    causal: tril(X X^T) a* = y by forward substitution,
            a*_j = (y_j - sum_{i<j} a*_i x_i^T x_j) / ||x_j||^2 (one pass of Kaczmarz).
    X: (n, d) or (batch, n, d); y: (n,) or (batch, n). Returns (n,) or (batch, n).
    Raises ValueError for a causal prompt with a zero example (||x_j|| = 0 has no fixed point).
    """
    _check_mode(mode)
    X, y, single = _as_prompts(X, y)
    if mode == "prefix":
        # (X X^T)^+ = (X^+)^T X^+; the SVD of X avoids squaring its condition number
        Xp = np.linalg.pinv(X)  # (B, d, n)
        a = np.einsum("bdj,bd->bj", Xp, np.einsum("bdk,bk->bd", Xp, y))
    else:
        G = X @ np.swapaxes(X, -1, -2)
        diag = np.diagonal(G, axis1=1, axis2=2)
        if np.any(diag == 0):
            raise ValueError("causal stationary point needs ||x_j|| > 0 for every example")
        a = np.zeros_like(y)
        for j in range(X.shape[1]):
            # a_j = (y_j - sum_{i<j} a_i x_i^T x_j) / ||x_j||^2
            a[:, j] = (y[:, j] - np.einsum("bi,bi->b", a[:, :j], G[:, j, :j])) / diag[:, j]
    return a[0] if single else a


def stationary_weights(X, y, mode: Mode = "prefix") -> np.ndarray:
    """The linear predictor w* = X^T a* of the stationary point: (d,) or (batch, d).

    prefix: min-norm least squares; causal: w_n of one pass of normalised online GD.
    """
    Xb, yb, single = _as_prompts(X, y)
    if mode == "prefix":
        w = np.einsum("bdn,bn->bd", np.linalg.pinv(Xb), yb)  # w = X^+ y
        return w[0] if single else w
    a = stationary_point(X, y, mode)
    w = np.einsum("bn,bnd->bd", a[None] if single else a, Xb)
    return w[0] if single else w
