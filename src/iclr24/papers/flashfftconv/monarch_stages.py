"""The Monarch DFT as p batched matmuls with the twiddles folded into the stage matrices.

This is the fast layout behind :class:`~.convolution.MonarchFFTConv` (FlashFFTConv §3.1, written
for a CPU's BLAS instead of tensor cores). With ``N = N_1·…·N_p``, time index
``n = Σ_m n_m S_m`` (``S_m = N_{m+1}⋯N_p``, ``n_1`` most significant) and frequency
``k = Σ_j k_j C_j`` (``C_j = N_1⋯N_{j−1}``, ``k_1`` least significant), the DFT kernel factorizes
exactly as

    ω_N^{nk} = Π_m G_m(k_1..k_m, n_m),   G_m = ω_{N_m}^{n_m k_m} · Π_{j<m} ω_{N_j⋯N_m}^{n_m k_j}

(every pair j > m contributes a multiple of N to the exponent). Stage m contracts the digit n_m
with a matrix that depends only on the already computed digits ``k_1..k_{m−1}``: the Cooley–Tukey
twiddle is part of that matrix, so no separate elementwise pass is needed. Data live as
``(P, N_m, X)`` with ``P = N_1⋯N_{m−1}`` (the computed digits, outermost) and ``X`` = the remaining
time digits times the rows R (innermost): stage 1 is one GEMM, stage m a strided ``bmm`` of P
matrices, and the spectrum comes out in the layout ``(k_1, …, k_p)`` row-major (Monarch order;
a convolution never undoes it). The inverse runs the stages backwards with the conjugate
transposes (``G_m`` is ``N_m`` times unitary; the 1/N is left to the caller).

Folding costs memory: stage m stores ``P·N_m²`` entries (``N·N_p`` for the last stage). Above
:data:`FOLD_CAP` entries a stage keeps the shared ``F_{N_m}`` and multiplies the twiddle
``Π_{j<m} ω^{n_m k_j}`` of shape (P, N_m, 1) elementwise instead.

Domain-specific savings (§3.1): with ``in_half`` only the first ``N_1/2`` columns of ``F_{N_1}``
are used (the second half of a causal conv's input is zero padding); the last inverse stage
computes only the output half that is kept (``out_second`` picks the second half, for
overlap-save). ``kept`` restricts the last stage to frequencies whose most significant digit
``k_p`` lies in a set (frequency-sparse convolution, §3.3): those rows are never computed.
Matrices are built in float64 from integer exponents, then cast.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["FOLD_CAP", "MonarchStage", "build_stages", "layout_frequencies", "stages_forward",
           "stages_inverse"]

#: most matrix entries a stage may hold with its twiddles folded in (2^22 = 32 MB complex64)
FOLD_CAP = 2**22


@dataclass
class MonarchStage:
    """One stage: ``fwd``/``inv`` are (P, out, in) folded matrices, or shared (out, in) matrices
    with twiddles ``fwd_tw``/``inv_tw`` of shape (P, N_m, 1)."""

    prefix: int
    size: int
    fwd: torch.Tensor
    inv: torch.Tensor
    fwd_tw: torch.Tensor | None = None
    inv_tw: torch.Tensor | None = None


def _roots(exponent: torch.Tensor, denominator: int, cd: torch.dtype) -> torch.Tensor:
    """ω_D^e = exp(−2πi·e/D) from integer exponents, in float64, then cast."""
    angle = (-2.0 * math.pi / denominator) * torch.remainder(exponent, denominator).double()
    return torch.polar(torch.ones_like(angle), angle).to(cd)


def build_stages(factors: Sequence[int], cd: torch.dtype, *, in_half: bool = True,
                 out_second: bool = False, kept: Sequence[int] | None = None,
                 fold_cap: int = FOLD_CAP) -> list[MonarchStage]:
    """The p stages for transform size ``prod(factors)`` (see the module docstring)."""
    factors = tuple(int(f) for f in factors)
    if len(factors) < 2:
        raise ValueError(f"need at least 2 factors, got {factors}")
    p = len(factors)
    f_last = factors[-1]
    kept_t = torch.arange(f_last) if kept is None else torch.as_tensor(sorted(kept))
    stages = []
    for m, f in enumerate(factors):
        prefix = math.prod(factors[:m])
        denom = math.prod(factors[:m + 1])                    # N_1⋯N_m
        idx = torch.arange(f, dtype=torch.int64)
        dft_e = (idx[:, None] * idx[None, :]) * (denom // f)   # ω_{N_m}^{k n} over N_1⋯N_m
        # twiddle exponent per prefix (k_1..k_{m−1}, row-major, k_1 outermost) over N_1⋯N_m
        tw_e = torch.zeros(prefix, dtype=torch.int64)
        if m:
            grids = torch.meshgrid(*[torch.arange(g) for g in factors[:m]], indexing="ij")
            for j in range(m):
                tw_e = tw_e + grids[j].reshape(-1) * (denom // math.prod(factors[j:m + 1]))
        rows = kept_t if m == p - 1 else idx                  # k_m computed
        if m == 0:
            f0 = _roots(dft_e, denom, cd)
            cols = slice(0, f // 2) if in_half else slice(0, f)
            out_rows = slice(f // 2, f) if out_second else slice(0, f // 2)
            stages.append(MonarchStage(1, f, f0[:, cols].contiguous(),
                                       f0.conj()[out_rows, :].contiguous()))
        elif prefix * f * f <= fold_cap:
            g = _roots(dft_e[None] + tw_e[:, None, None] * idx[None, None, :], denom, cd)
            g = g[:, rows, :]                                 # (P, out, N_m)
            stages.append(MonarchStage(prefix, f, g.contiguous(),
                                       g.conj().transpose(1, 2).contiguous()))
        else:
            fm = _roots(dft_e, denom, cd)[rows, :]
            tw = _roots(tw_e[:, None] * idx[None, :], denom, cd)[:, :, None]   # (P, N_m, 1)
            stages.append(MonarchStage(prefix, f, fm.contiguous(), fm.conj().T.contiguous(),
                                       tw.contiguous(), tw.conj().contiguous()))
    return stages


def stages_forward(stages: Sequence[MonarchStage], z: torch.Tensor) -> torch.Tensor:
    """z: (n_in, R) complex, time on dim 0 (n_in = N/2 with ``in_half``) -> (N', R) spectrum in
    Monarch layout (N' = N·|kept|/N_p)."""
    rows = z.shape[-1]
    first = stages[0]
    y = first.fwd @ z.reshape(first.fwd.shape[1], -1)          # stage 1: one GEMM
    for st in stages[1:]:
        y = y.reshape(st.prefix, st.size, -1)
        if st.fwd_tw is None:
            y = torch.bmm(st.fwd, y)                           # G_m[k_<m] · A
        else:
            y = _shared_matmul(st.fwd, y * st.fwd_tw)          # F_{N_m} · (twiddle ⊙ A)
    return y.reshape(-1, rows)


def _shared_matmul(mat: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """``mat @ y[p]`` for every p; y: (P, n, X). With few columns X (long sequences, few rows)
    P small GEMMs would be matrix-vector products, so compute one GEMM ``(P·X, n) @ matᵀ``."""
    if y.shape[-1] >= mat.shape[0]:
        return torch.matmul(mat, y)
    return torch.matmul(y.transpose(1, 2), mat.T).transpose(1, 2)


def stages_inverse(stages: Sequence[MonarchStage], y: torch.Tensor) -> torch.Tensor:
    """Inverse of :func:`stages_forward` without the 1/N: (N', R) -> (N/2, R) time half."""
    rows = y.shape[-1]
    for st in reversed(stages[1:]):
        y = y.reshape(st.prefix, st.inv.shape[-1], -1)
        if st.inv_tw is None:
            y = torch.bmm(st.inv, y)                           # G_m^H
        else:
            y = _shared_matmul(st.inv, y) * st.inv_tw          # conj twiddle ⊙ (F^H · Y)
    first = stages[0]
    y = first.inv @ y.reshape(first.size, -1)                  # kept half of the time digit n_1
    return y.reshape(-1, rows)


def layout_frequencies(factors: Sequence[int], kept: Sequence[int] | None = None
                       ) -> torch.Tensor:
    """Natural frequency index at each position of the Monarch layout (kept rows only)."""
    factors = tuple(factors)
    grids = torch.meshgrid(*[torch.arange(g) for g in factors], indexing="ij")
    freq = torch.zeros_like(grids[0])
    for j, g in enumerate(grids):
        freq = freq + g * math.prod(factors[:j])
    if kept is not None:
        freq = freq[..., torch.as_tensor(sorted(kept))]
    return freq.reshape(-1)
