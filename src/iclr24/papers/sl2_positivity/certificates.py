"""Max-det Gram matrices by SDP, the exact constraint projection, certification rate.

G*(p) = argmax log det G s.t. anti-diagonal sums of G = p (G PSD), the analytic centre of the
SOS spectrahedron; equivariant: G*(p o A) = M_d(A)^T G*(p) M_d(A) (det M_d(A) = 1 on SL(2)).
Solved with cvxpy + SCS (as the official code, which forces SCS), one problem per d with the
form as a ``cp.Parameter``, eps ~1e-6 so that label noise stays below model error. MOSEK is not
used (licence).
"""

from __future__ import annotations

import functools

import numpy as np

from .forms import check_form

__all__ = ["certification_rate", "max_det_gram", "max_det_gram_timed", "project_gram_constraints"]


@functools.lru_cache(maxsize=8)
def _problem(d: int):
    import cvxpy as cp

    G = cp.Variable((d + 1, d + 1), symmetric=True)
    p = cp.Parameter(2 * d + 1)
    cons = [sum(G[i, k - i] for i in range(max(0, k - d), min(k, d) + 1)) == p[k]
            for k in range(2 * d + 1)]
    return cp.Problem(cp.Maximize(cp.log_det(G)), cons), G, p


def max_det_gram_timed(p, eps: float = 1e-6) -> tuple[np.ndarray, float]:
    """(G*(p) (d+1, d+1), SCS's own solve time in seconds) for a strictly positive binary form
    p (2d + 1,). The solve time is ``solver_stats.solve_time`` (SCS's iterations only), which
    excludes cvxpy's per-call canonicalisation; time the call itself for the total."""
    p, d = check_form(p)
    if p.ndim != 1:
        raise ValueError("max_det_gram solves one form at a time: p must be 1-D")
    if not np.any(p):
        # the only PSD Gram matrix of the zero form is 0 (log det = -inf): no max-det centre
        raise ValueError("p is the zero form: it has no strictly positive max-det Gram matrix "
                         "(its only PSD Gram matrix is 0)")
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps < 1:
        raise ValueError(f"eps must be a number in (0, 1), got {eps!r}")
    prob, G, param = _problem(d)
    param.value = p
    prob.solve(solver="SCS", eps=eps, max_iters=100_000)
    if G.value is None or prob.status not in ("optimal", "optimal_inaccurate"):
        raise ValueError(f"SCS found no max-det Gram matrix (status {prob.status}); is p "
                         "strictly positive?")
    return (G.value + G.value.T) / 2, float(prob.solver_stats.solve_time)


def max_det_gram(p, eps: float = 1e-6) -> np.ndarray:
    """G*(p) (d+1, d+1) for a strictly positive binary form p (2d + 1,) by SCS."""
    return max_det_gram_timed(p, eps)[0]


@functools.lru_cache(maxsize=8)
def _constraint_maps(n1: int) -> tuple[np.ndarray, np.ndarray]:
    """S (2n1 - 1, n1^2): vec(G) -> anti-diagonal sums; E (2n1 - 1, n1^2): puts the k-th
    correction at (k/2, k/2) for even k, ((k+1)/2, (k-1)/2) for odd k (row-major vec)."""
    i, j = np.indices((n1, n1))
    k = np.arange(2 * n1 - 1)
    S = (i.ravel()[None, :] + j.ravel()[None, :] == k[:, None]).astype(np.float64)
    E = np.zeros_like(S)
    E[k, (k + 1) // 2 * n1 + k // 2] = 1.0
    return S, E


def project_gram_constraints(G_raw, p):
    """Enforce the anti-diagonal constraints exactly (torch, differentiable): for each k add
    (p_k - current sum) to entry (k/2, k/2) if k is even, else ((k+1)/2, (k-1)/2); then
    symmetrise (G + G^T)/2 (which keeps anti-diagonal sums). G_raw (n, d+1, d+1), p (n, 2d+1)."""
    import torch

    n1 = G_raw.shape[-1]
    S, E = (torch.from_numpy(m).to(G_raw) for m in _constraint_maps(n1))
    g = G_raw.reshape(*G_raw.shape[:-2], n1 * n1)
    G = (g + (p - g @ S.T) @ E).reshape(G_raw.shape)     # G_ij += p_k - sum_{i+j=k} G_ij
    return (G + G.transpose(-1, -2)) / 2


def certification_rate(G, p, tol: float = 1e-9) -> float:
    """Fraction of Gram matrices that certify nonnegativity: exact constraints (checked) and
    lambda_min(G) >= -tol ||p||. G (n, d+1, d+1), p (n, 2d+1)."""
    from .forms import antidiagonal_sums

    G = np.asarray(G, dtype=np.float64)
    p, _ = check_form(p)
    ok_cons = np.all(np.abs(antidiagonal_sums(G) - p) <= 1e-6 * np.abs(p).max(axis=-1,
                                                                               keepdims=True),
                     axis=-1)
    lam = np.linalg.eigvalsh(G)[..., 0]
    return float(np.mean(ok_cons & (lam >= -tol * np.linalg.norm(p, axis=-1))))
