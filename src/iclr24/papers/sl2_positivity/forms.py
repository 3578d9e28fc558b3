"""Binary forms, Gram matrices and the SL(2, R) action (Lawrence & Harris, ICLR 2024, Sec. 2-3).

A binary form of degree 2d is p(x, y) = sum_k p_k x^k y^{2d-k} (index = power of x, as the
official code). With v = (y^d, x y^{d-1}, ..., x^d), a symmetric G represents p iff v^T G v = p,
i.e. sum_{i+j=k} G_ij = p_k (anti-diagonal sums). A in SL(2) acts by change of variables:
(p o A)(x, y) = p(a x + b y, c x + d y). With M_k(A) the induced matrix, v_k(A (x, y)) = M_k(A) v_k,
so p o A has coefficients M_{2d}(A)^T p and G transforms to M_d(A)^T G M_d(A).
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "act_on_form",
    "act_on_gram",
    "antidiagonal_sums",
    "check_form",
    "check_sl2",
    "induced_matrix",
    "random_sos_binary_forms",
    "sample_sl2",
]


def check_form(p) -> tuple[np.ndarray, int]:
    """(p as float64 (..., 2d + 1), d); raises unless p is a binary form of even degree >= 2."""
    p = np.asarray(p, dtype=np.float64)
    if p.ndim < 1 or p.shape[-1] < 3 or p.shape[-1] % 2 == 0 or not np.all(np.isfinite(p)):
        raise ValueError("p must hold the 2d + 1 coefficients of a binary form of even degree "
                         f"2d >= 2 (an odd count >= 3), got shape {p.shape}")
    return p, (p.shape[-1] - 1) // 2


def _check_int(name: str, v, low: int) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < low:
        raise ValueError(f"{name} must be an int >= {low}, got {v!r}")


def antidiagonal_sums(G) -> np.ndarray:
    """p_k = sum_{i+j=k} G_ij: (..., d+1, d+1) -> (..., 2d+1)."""
    G = np.asarray(G, dtype=np.float64)
    n = G.shape[-1]
    i, j = np.indices((n, n))
    out = np.zeros(G.shape[:-2] + (2 * n - 1,))
    np.add.at(out, (..., (i + j).ravel()), G.reshape(G.shape[:-2] + (-1,)))
    return out


def random_sos_binary_forms(n: int, d: int, rng: np.random.Generator) -> np.ndarray:
    """n certifiably positive forms of degree 2d (official generator): A ~ N(0, 1), G0 =
    A^T A + 1e-8 I, p = anti-diagonal sums of G0. Returns (n, 2d + 1)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    _check_int("n", n, 0)
    _check_int("d", d, 1)
    A = rng.standard_normal((n, d + 1, d + 1))
    G0 = np.swapaxes(A, 1, 2) @ A + 1e-8 * np.eye(d + 1)
    return antidiagonal_sums(G0)


def check_sl2(A, atol: float = 1e-8) -> np.ndarray:
    A = np.asarray(A, dtype=np.float64)
    if A.shape[-2:] != (2, 2):
        raise ValueError(f"A must be a 2x2 matrix (or a stack), got shape {A.shape}")
    det = np.linalg.det(A)
    if np.any(np.abs(det - 1) > atol):
        raise ValueError(f"A must be in SL(2): det(A) = 1 required, got {det}")
    return A


def induced_matrix(A, k: int) -> np.ndarray:
    """M_k(A) (k+1, k+1): row i holds the coefficients of (a x + b y)^i (c x + d y)^{k-i} in the
    basis x^j y^{k-j}. (Any invertible 2x2 A; SL(2) is checked by the actions.)"""
    A = np.asarray(A, dtype=np.float64)
    if A.shape != (2, 2):
        raise ValueError(f"A must be 2x2, got shape {A.shape}")
    (a, b), (c, d) = A
    M = np.zeros((k + 1, k + 1))
    for i in range(k + 1):
        # polynomials in x with y implicit: (b + a x)^i (d + c x)^{k-i}
        poly = np.array([1.0])
        for _ in range(i):
            poly = np.convolve(poly, [b, a])
        for _ in range(k - i):
            poly = np.convolve(poly, [d, c])
        M[i] = poly
    return M


def act_on_form(A, p) -> np.ndarray:
    """Coefficients of p o A: M_{2d}(A)^T p; p (2d+1,) or (n, 2d+1)."""
    A = check_sl2(A)
    p, d = check_form(p)
    return p @ induced_matrix(A, 2 * d)


def act_on_gram(A, G) -> np.ndarray:
    """M_d(A)^T G M_d(A) for G (d+1, d+1) or (n, d+1, d+1)."""
    A = check_sl2(A)
    G = np.asarray(G, dtype=np.float64)
    M = induced_matrix(A, G.shape[-1] - 1)
    return M.T @ G @ M


def sample_sl2(n: int, cond_range: tuple[float, float], rng: np.random.Generator) -> np.ndarray:
    """n matrices of SL(2) with condition number in ``cond_range`` (official sampler: Gaussian
    2x2, flip a row if det < 0, divide by sqrt(det); rejection on the condition number)."""
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy Generator, got {type(rng).__name__}")
    _check_int("n", n, 0)
    lo, hi = map(float, cond_range)
    if not 1 <= lo < hi:
        raise ValueError(f"cond_range must satisfy 1 <= low < high, got {cond_range}")
    out = []
    while len(out) < n:
        A = rng.standard_normal((4 * n + 16, 2, 2))
        det = np.linalg.det(A)
        A[det < 0, 0] *= -1
        A /= np.sqrt(np.abs(det))[:, None, None]
        cond = np.linalg.cond(A)
        out.extend(A[(cond >= lo) & (cond <= hi)])
    return np.array(out[:n])
