"""The DFT as a product of small dense matrices: the order-p Monarch decomposition (FlashFFTConv §3.1).

Paper mapping (Fu et al., "FlashFFTConv", ICLR 2024, §3.1 and App. A):

* ``N = N_1 · N_2 · … · N_p``. Write the input index as ``n = R_1·n_1 + r`` (``R_1 = N/N_1``) and
  the output index as ``k = k_1 + N_1·k'``. Then ``ω_N^{nk} = ω_{N_1}^{n_1 k_1} · ω_N^{k_1 r} ·
  ω_{R_1}^{r k'}`` so one DFT of size N is: a dense ``N_1 × N_1`` DFT matrix applied along ``n_1``
  (a batched matmul), an elementwise *twiddle* ``ω_N^{k_1 r}``, then a DFT of size ``R_1`` along
  ``r`` — done the same way, recursively, ``p`` matmul stages and ``p − 1`` twiddles in all.
* The output comes out in *Monarch order*: position ``k_1·R_1 + j`` holds natural frequency
  ``k_1 + N_1·κ_{R_1}(j)``. A convolution never has to undo this permutation: the filter's
  spectrum is kept in the same order and the inverse consumes it.
* The inverse runs the stages backwards with conjugate matrices and twiddles and scales by 1/N.

Matrices and twiddles are built in float64 from the integer product ``(k·n) mod N`` and only then
cast (an angle computed in float32 for N ≥ 2^16 loses digits), see the spec's pitfalls.

On a GPU the official kernels fuse all of this in one CUDA kernel using tensor cores; here every
stage is one ``torch.matmul`` on whatever device the input lives on (CPU BLAS here).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

__all__ = [
    "complex_dtype_for",
    "dft_matrix",
    "monarch_dft_matrices",
    "monarch_factors",
    "monarch_fft",
    "monarch_ifft",
    "monarch_order_to_natural",
    "monarch_permutation",
    "natural_to_monarch_order",
    "twiddle_factors",
]


def complex_dtype_for(dtype: torch.dtype) -> torch.dtype:
    """complex64 for float32 (and lower precisions), complex128 for float64."""
    if dtype in (torch.float64, torch.complex128):
        return torch.complex128
    if dtype in (torch.float32, torch.complex64, torch.float16, torch.bfloat16):
        return torch.complex64
    raise TypeError(f"dtype must be a floating or complex torch dtype, got {dtype}")


def _check_pow2(name: str, n: int, minimum: int = 1) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < minimum or n & (n - 1):
        raise ValueError(f"{name} must be a power of two >= {minimum}, got {n!r}")


def monarch_factors(n: int, order: int) -> tuple[int, ...]:
    """Split a power of two ``n`` into ``order`` power-of-two factors, as equal as possible.

    The remainder of ``log2 n`` goes to the inner (later) factors, e.g. ``monarch_factors(8192, 3)
    == (16, 16, 32)``. Every factor is at least 2.
    """
    _check_pow2("n", n, 2)
    if isinstance(order, bool) or not isinstance(order, int) or order < 1:
        raise ValueError(f"order must be a positive int, got {order!r}")
    e = int(math.log2(n))
    if order > e:
        raise ValueError(f"order={order} needs n >= 2**{order} (each factor >= 2); got n={n}")
    base, rem = divmod(e, order)
    exps = [base] * (order - rem) + [base + 1] * rem
    return tuple(2**x for x in exps)


def _check_factors(factors: Sequence[int]) -> tuple[int, ...]:
    factors = tuple(factors)
    if not factors:
        raise ValueError("factors must be a non-empty sequence of powers of two")
    for f in factors:
        _check_pow2("every factor", f, 2)
    return factors


def _unit_roots(products: torch.Tensor, n: int, dtype: torch.dtype, inverse: bool) -> torch.Tensor:
    """exp(∓2πi·m/n) for integer m, built in float64 from m mod n, then cast."""
    angle = (2.0 * math.pi / n) * torch.remainder(products, n).to(torch.float64)
    sign = 1.0 if inverse else -1.0
    out = torch.polar(torch.ones_like(angle), sign * angle)
    return out.to(complex_dtype_for(dtype))


def dft_matrix(n: int, dtype: torch.dtype = torch.complex64, inverse: bool = False,
               device: torch.device | str | None = None) -> torch.Tensor:
    """The unnormalized ``n × n`` DFT matrix ``F[k, m] = ω_n^{k m}``, ``ω_n = e^{−2πi/n}``
    (conjugate when ``inverse``). Returns complex (n, n)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    idx = torch.arange(n, dtype=torch.int64, device=device)
    return _unit_roots(idx[:, None] * idx[None, :], n, dtype, inverse)


def twiddle_factors(outer: int, inner: int, dtype: torch.dtype = torch.complex64,
                    inverse: bool = False, device: torch.device | str | None = None) -> torch.Tensor:
    """Twiddles ``T[k1, r] = ω_{outer·inner}^{k1·r}`` of shape (outer, inner) (conjugate when
    ``inverse``)."""
    k1 = torch.arange(outer, dtype=torch.int64, device=device)
    r = torch.arange(inner, dtype=torch.int64, device=device)
    return _unit_roots(k1[:, None] * r[None, :], outer * inner, dtype, inverse)


def monarch_dft_matrices(factors: Sequence[int], dtype: torch.dtype = torch.complex64,
                         inverse: bool = False, device: torch.device | str | None = None
                         ) -> list[tuple[torch.Tensor, torch.Tensor | None]]:
    """Per stage ``i``: ``(F_{N_i}, T_i)`` with ``T_i`` of shape (N_i, N_{i+1}·…·N_p) (``None``
    for the last stage). Conjugated when ``inverse`` (the 1/N is not included)."""
    factors = _check_factors(factors)
    out = []
    for i, f in enumerate(factors):
        rest = math.prod(factors[i + 1:])
        tw = twiddle_factors(f, rest, dtype, inverse, device) if rest > 1 else None
        out.append((dft_matrix(f, dtype, inverse, device), tw))
    return out


def monarch_permutation(factors: Sequence[int], device: torch.device | str | None = None
                        ) -> torch.Tensor:
    """``perm[j]`` = natural frequency index held at Monarch position ``j`` (int64, (N,)).

    Position ``k_1·R_1 + j'`` holds ``k_1 + N_1·κ_{R_1}(j')`` (recursively)."""
    factors = _check_factors(factors)
    perm = torch.arange(factors[-1], dtype=torch.int64, device=device)
    for f in reversed(factors[:-1]):
        k1 = torch.arange(f, dtype=torch.int64, device=device)
        perm = (k1[:, None] + f * perm[None, :]).reshape(-1)
    return perm


def _check_transform_input(x: torch.Tensor, factors: tuple[int, ...], name: str) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    n = math.prod(factors)
    if x.ndim < 1 or x.shape[-1] != n:
        raise ValueError(f"{name}.shape[-1] must equal prod(factors) = {n}, got shape "
                         f"{tuple(x.shape)}")
    if not (x.is_floating_point() or x.is_complex()):
        raise TypeError(f"{name} must be a floating or complex tensor, got {x.dtype}")
    return x.to(complex_dtype_for(x.dtype))


def monarch_fft(x: torch.Tensor, factors: Sequence[int]) -> torch.Tensor:
    """DFT of ``x`` along its last dim (size ``prod(factors)``), output in Monarch order.

    x: (..., N) real or complex. Returns complex (..., N); ``monarch_order_to_natural`` of it
    equals ``torch.fft.fft(x)``. Cost: ``p`` batched matmuls (N·N_i complex MACs each) and
    ``p − 1`` twiddle products.
    """
    factors = _check_factors(factors)
    x = _check_transform_input(x, factors, "x")
    batch = x.shape[:-1]
    n = x.shape[-1]
    mats = monarch_dft_matrices(factors, x.dtype, device=x.device)
    y = x.reshape(-1, n)
    rows = y.shape[0]
    outer = 1
    for f, (mat, tw) in zip(factors, mats):
        rest = n // (outer * f)
        y = y.reshape(rows * outer, f, rest)
        y = torch.matmul(mat, y)                  # X_i = F_{N_i} · A  (DFT along digit n_i)
        if tw is not None:
            y = y * tw                            # · ω_{N_i R_i}^{k_i r}
        outer *= f
    return y.reshape(*batch, n)


def monarch_ifft(X: torch.Tensor, factors: Sequence[int]) -> torch.Tensor:
    """Inverse of :func:`monarch_fft`: ``X`` (..., N) in Monarch order -> natural-order signal
    (complex, includes the 1/N)."""
    factors = _check_factors(factors)
    X = _check_transform_input(X, factors, "X")
    batch = X.shape[:-1]
    n = X.shape[-1]
    mats = monarch_dft_matrices(factors, X.dtype, inverse=True, device=X.device)
    y = X.reshape(-1, n)
    rows = y.shape[0]
    outer = n
    for f, (mat, tw) in reversed(list(zip(factors, mats))):
        outer //= f
        rest = n // (outer * f)
        y = y.reshape(rows * outer, f, rest)
        if tw is not None:
            y = y * tw                            # undo twiddle: ω^{−k_i r}
        y = torch.matmul(mat, y)                  # conj(F_{N_i}) along k_i -> n_i
    return (y / n).reshape(*batch, n)


def monarch_order_to_natural(X: torch.Tensor, factors: Sequence[int]) -> torch.Tensor:
    """Permute the last dim from Monarch order to natural frequency order."""
    factors = _check_factors(factors)
    perm = monarch_permutation(factors, device=X.device)
    if X.shape[-1] != perm.numel():
        raise ValueError(f"X.shape[-1] must equal prod(factors) = {perm.numel()}, got "
                         f"{X.shape[-1]}")
    out = torch.empty_like(X)
    out[..., perm] = X
    return out


def natural_to_monarch_order(X: torch.Tensor, factors: Sequence[int]) -> torch.Tensor:
    """Permute the last dim from natural frequency order to Monarch order."""
    factors = _check_factors(factors)
    perm = monarch_permutation(factors, device=X.device)
    if X.shape[-1] != perm.numel():
        raise ValueError(f"X.shape[-1] must equal prod(factors) = {perm.numel()}, got "
                         f"{X.shape[-1]}")
    return X[..., perm]
