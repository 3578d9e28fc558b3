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

__all__ = ["certification_rate", "max_det_gram", "project_gram_constraints"]


@functools.lru_cache(maxsize=8)
def _problem(d: int):
    import cvxpy as cp

    G = cp.Variable((d + 1, d + 1), symmetric=True)
    p = cp.Parameter(2 * d + 1)
    cons = [sum(G[i, k - i] for i in range(max(0, k - d), min(k, d) + 1)) == p[k]
            for k in range(2 * d + 1)]
    return cp.Problem(cp.Maximize(cp.log_det(G)), cons), G, p


def max_det_gram(p, eps: float = 1e-6) -> np.ndarray:
    """G*(p) (d+1, d+1) for a strictly positive binary form p (2d + 1,) by SCS."""
    p, d = check_form(p)
    if p.ndim != 1:
        raise ValueError("max_det_gram solves one form at a time: p must be 1-D")
    prob, G, param = _problem(d)
    param.value = p
    prob.solve(solver="SCS", eps=eps, max_iters=100_000)
    if G.value is None or prob.status not in ("optimal", "optimal_inaccurate"):
        raise ValueError(f"SCS found no max-det Gram matrix (status {prob.status}); is p "
                         "strictly positive?")
    return (G.value + G.value.T) / 2


def project_gram_constraints(G_raw, p):
    """Enforce the anti-diagonal constraints exactly (torch, differentiable): for each k add
    (p_k - current sum) to entry (k/2, k/2) if k is even, else ((k+1)/2, (k-1)/2); then
    symmetrise (G + G^T)/2 (which keeps anti-diagonal sums). G_raw (n, d+1, d+1), p (n, 2d+1)."""
    import torch

    n1 = G_raw.shape[-1]
    idx = torch.arange(n1, device=G_raw.device)
    k_of = idx[:, None] + idx[None, :]
    sums = torch.stack([(G_raw * (k_of == k)).sum(dim=(-2, -1)) for k in range(2 * n1 - 1)],
                       dim=-1)
    fix = torch.zeros_like(G_raw)
    for k in range(2 * n1 - 1):
        i, j = (k // 2, k // 2) if k % 2 == 0 else ((k + 1) // 2, (k - 1) // 2)
        fix[..., i, j] = p[..., k] - sums[..., k]
    G = G_raw + fix
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
