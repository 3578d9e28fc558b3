"""A fused Monarch FFT convolution in Triton: FlashFFTConv's kernel (Fu et al., ICLR 2024, §3.1,
Alg. 1) written with ``tl.dot`` so it runs on GPU tensor cores.

What one program of :func:`monarch_conv_triton` computes, for one channel ``h`` and a block of
``PAIRS`` pairs of sequences of that channel, everything in registers/shared memory (u is read
once, y written once; FFT(k), the DFT matrices and twiddles are loaded once per program):

1. *real-input trick*: two real sequences of the same channel share one complex transform,
   ``z = u_{2g} + i·u_{2g+1}`` (k is real, so ``conv(z, k) = conv(u_{2g}, k) + i·conv(u_{2g+1},
   k)``: the real part of the output is sequence 2g, the imaginary part 2g+1); optional
   input gate ``u ⊙ g_in`` first;
2. order-2 Monarch DFT of size ``N = N_1·N_2`` (time ``n = N_2·n_1 + n_2``, frequency
   ``k = k_1 + N_1·k_2``): ``A[n_1, n_2] = z[N_2 n_1 + n_2]``, ``B = F_{N_1}·A`` (a ``tl.dot``),
   twiddle ``C = B ⊙ ω_N^{k_1 n_2}``, ``D = C·F_{N_2}`` (a ``tl.dot``), so ``D[k_1, k_2] =
   Z[k_1 + N_1 k_2]`` (Monarch order, never undone);
3. ``E = D ⊙ FFT(k)/N`` with FFT(k) stored in the same Monarch order;
4. the inverse with conjugate matrices and twiddles; only the rows ``n_1`` that hold the first
   L = N/2 outputs are computed (*implicit padding*: likewise the first stage only reads the
   columns of ``F_{N_1}`` that meet the non-zero first half of the input); optional output gate
   ``y ⊙ g_out``; the real part is stored as sequence 2g, the imaginary part as 2g+1.

Each complex matmul is four real ``tl.dot`` on separate real/imaginary planes,
``(X_r + iX_i)(Y_r + iY_i) = (X_r Y_r − X_i Y_i) + i(X_r Y_i + X_i Y_r)``, with operands in the
input's dtype (fp16/bf16: tensor cores; fp32: ``input_precision="ieee"``, exact fp32 FMA, not
TF32) and fp32 accumulation; twiddles, the product with FFT(k) and the gates are fp32
elementwise on the accumulators, which are cast to the operand dtype only to enter the next dot.
The spectrum ``D`` is never rounded to fp16 (it grows like N·|u| and would overflow); the 1/N of
the inverse is folded into FFT(k).

Supported sizes (:func:`triton_factors`): FFT size ``N = 2^8 … 2^13`` for float16/bfloat16
(sequence length L up to 4096) and ``2^8 … 2^12`` for float32 (L up to 2048), order 2 with
``N_1 = 2^ceil(e/2) >= N_2 = 2^floor(e/2) >= 16`` so every ``tl.dot`` has K >= 16 (the first
stage reads ``max(N_1/2, 16)`` input rows). u in float16, bfloat16 or float32 sets the operand
dtype (y comes back in u's dtype; k and gates any float dtype, read as fp32). The ceiling is the
shared memory of one program's dot operands, read off compiling the kernel ahead of time for
sm_90 (H100/H200) with Triton's bundled ptxas (no GPU needed): see :data:`MAX_TRITON_FFT_SIZE`.

What differs from the official CUDA kernels (HazyResearch/flash-fft-conv):

* order 2 only, one program per (channel, block of sequence pairs); the official kernels use
  order 3 from N = 4096 and order 4 (an outer stage through global memory) from 65536 up to
  N = 4M; longer sequences here fall back to the PyTorch path (``backend="auto"``);
* the real-input trick packs two sequences into one complex transform of size N (as this
  package's PyTorch path does), not one sequence into a half-size transform with a Hermitian
  unpack (the official kernels, N = 512/2048); both halve the complex work per sequence;
* FFT(k) is computed per call with ``torch.fft.fft`` (as the official Python wrapper computes
  ``rfft(k)`` before the kernel) and permuted to Monarch order; no backward kernel (use the
  PyTorch path for training); no partial / frequency-sparse variants;
* fp32 inputs are supported (exact fp32 dots), the official kernels take fp16/bf16 only;
* untuned: ``num_warps`` and pairs per program are heuristics; speed was not measured here
  (no GPU), see ``benchmarks/flashfftconv_gpu.py``. Exactness is tested with Triton's CPU
  interpreter (``TRITON_INTERPRET=1``). Triton 3.9's interpreter multiplies bfloat16 dot operands
  as their raw uint16 bits, so under the interpreter bf16 operands are rounded to bf16 and then
  multiplied in fp32 (the same products; on a GPU bf16 goes to the tensor cores).

Import: this module imports ``triton`` at the top; :mod:`.convolution` imports it lazily, so the
package works without Triton.
"""

from __future__ import annotations

import functools
import os
import statistics
from collections.abc import Sequence

import torch
import triton
import triton.language as tl

from .monarch_fft import dft_matrix, twiddle_factors

__all__ = [
    "MAX_TRITON_FFT_SIZE",
    "MIN_TRITON_FFT_SIZE",
    "TRITON_DTYPES",
    "copy_bandwidth",
    "gpu_throughput_table",
    "interpreting",
    "monarch_conv_triton",
    "triton_factors",
    "triton_supports",
]

MIN_TRITON_FFT_SIZE = 256          # 16 x 16: the smallest legal tl.dot tiles (K >= 16)
#: largest FFT size per operand dtype: the shared memory a program needs for its dot operands,
#: from compiling for sm_90 (H100/H200, 227 KiB per block) with Triton's ptxas: fp16/bf16 use
#: 16 / 64 / 128 / 256 KiB at N = 1K / 4K / 8K / 16K, fp32 48 / 192 KiB at N = 1K / 4K
MAX_TRITON_FFT_SIZE = {torch.float16: 2**13, torch.bfloat16: 2**13, torch.float32: 2**12}
TRITON_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_TL_DTYPE = {torch.float16: tl.float16, torch.bfloat16: tl.bfloat16, torch.float32: tl.float32}


def interpreting() -> bool:
    """True when Triton's CPU interpreter is on (``TRITON_INTERPRET=1`` in the environment)."""
    return os.environ.get("TRITON_INTERPRET", "0").strip().lower() in ("1", "true", "on", "yes")


def triton_factors(fft_size: int, dtype: torch.dtype = torch.float16) -> tuple[int, int]:
    """``(N_1, N_2)`` of the order-2 kernel for FFT size ``fft_size`` (``N_1 >= N_2``) with
    operands of ``dtype``.

    Raises ValueError for sizes the kernel does not support: powers of two in [256, 8192] for
    float16/bfloat16, [256, 4096] for float32 (:data:`MAX_TRITON_FFT_SIZE`).
    """
    if dtype not in MAX_TRITON_FFT_SIZE:
        raise TypeError(f"the Triton kernel takes float16, bfloat16 or float32, got {dtype}")
    top = MAX_TRITON_FFT_SIZE[dtype]
    if (isinstance(fft_size, bool) or not isinstance(fft_size, int) or fft_size < 1
            or fft_size & (fft_size - 1) or not MIN_TRITON_FFT_SIZE <= fft_size <= top):
        raise ValueError(
            f"the Triton kernel supports FFT sizes N (= 2x the sequence length) that are powers of "
            f"two in [{MIN_TRITON_FFT_SIZE}, {top}] for {str(dtype).split('.')[-1]} (order-2 "
            f"Monarch N = N1*N2 with N1, N2 >= 16; the ceiling is the GPU's shared memory), i.e. "
            f"sequence lengths up to {top // 2}; got N = {fft_size!r}. Use backend='torch' for "
            f"other sizes.")
    e = fft_size.bit_length() - 1
    return 2 ** (e - e // 2), 2 ** (e // 2)


def triton_supports(fft_size: int, dtype: torch.dtype = torch.float16) -> bool:
    """Whether :func:`triton_factors` accepts ``fft_size`` with operands of ``dtype``."""
    try:
        triton_factors(fft_size, dtype)
    except (TypeError, ValueError):
        return False
    return True


# ---------------------------------------------------------------------------------- the kernel
# Plain function, turned into a Triton kernel by _kernel(): triton.jit reads TRITON_INTERPRET when
# it decorates, so the kernel is decorated lazily, once per mode (compiled / interpreted).
def _monarch_conv_kernel(
        u_ptr, pre_ptr, post_ptr, y_ptr, kf_re_ptr, kf_im_ptr,
        f1_re_ptr, f1_im_ptr, g1_re_ptr, g1_im_ptr, f2_re_ptr, f2_im_ptr, g2_re_ptr, g2_im_ptr,
        tw_re_ptr, tw_im_ptr,
        n_batch, n_chan, length,
        N1: tl.constexpr, N2: tl.constexpr, R1: tl.constexpr, PAIRS: tl.constexpr,
        HAS_PRE: tl.constexpr, HAS_POST: tl.constexpr,
        ROUND: tl.constexpr, DOT: tl.constexpr, PREC: tl.constexpr):
    h = tl.program_id(0)                       # channel: shares FFT(k) across the block
    blk = tl.program_id(1)                     # block of PAIRS pairs of sequences
    i1 = tl.arange(0, N1)
    j1 = tl.arange(0, R1)                      # time digit n_1 rows that can be non-zero / kept
    i2 = tl.arange(0, N2)
    # F_{N1}[:, :R1] (N1, R1): implicit padding, rows n_1 >= N1/2 of the input are zero
    f1_off = i1[:, None] * R1 + j1[None, :]
    f1r = tl.load(f1_re_ptr + f1_off).to(DOT)
    f1i = tl.load(f1_im_ptr + f1_off).to(DOT)
    # conj(F_{N1})[:R1, :] (R1, N1): the last inverse stage computes only the kept output rows
    g1_off = j1[:, None] * N1 + i1[None, :]
    g1r = tl.load(g1_re_ptr + g1_off).to(DOT)
    g1i = tl.load(g1_im_ptr + g1_off).to(DOT)
    f2_off = i2[:, None] * N2 + i2[None, :]
    f2r = tl.load(f2_re_ptr + f2_off).to(DOT)   # F_{N2} (symmetric)
    f2i = tl.load(f2_im_ptr + f2_off).to(DOT)
    g2r = tl.load(g2_re_ptr + f2_off).to(DOT)   # conj(F_{N2})
    g2i = tl.load(g2_im_ptr + f2_off).to(DOT)
    s_off = i1[:, None] * N2 + i2[None, :]     # (k_1, n_2) / (k_1, k_2) tiles
    twr = tl.load(tw_re_ptr + s_off)           # ω_N^{k_1 n_2}, fp32
    twi = tl.load(tw_im_ptr + s_off)
    kfr = tl.load(kf_re_ptr + h * (N1 * N2) + s_off)   # FFT(k)[k_1 + N_1 k_2] / N, fp32
    kfi = tl.load(kf_im_ptr + h * (N1 * N2) + s_off)

    t_off = j1[:, None] * N2 + i2[None, :]     # time n = N_2·n_1 + n_2 on the R1 kept rows
    for p in range(PAIRS):
        b0 = 2 * (blk * PAIRS + p)             # the pair (b0, b0 + 1) of channel h
        # valid samples: n < L of existing sequences (odd B: the last transform has a zero
        # partner; the last block may run past B)
        m0 = t_off < tl.where(b0 < n_batch, length, 0)
        m1 = t_off < tl.where(b0 + 1 < n_batch, length, 0)
        off0 = (b0.to(tl.int64) * n_chan + h) * length + t_off
        off1 = off0 + n_chan * length
        x0 = tl.load(u_ptr + off0, mask=m0, other=0.0).to(tl.float32)
        x1 = tl.load(u_ptr + off1, mask=m1, other=0.0).to(tl.float32)
        if HAS_PRE:                            # input gate u ⊙ g_in
            x0 = x0 * tl.load(pre_ptr + off0, mask=m0, other=0.0).to(tl.float32)
            x1 = x1 * tl.load(pre_ptr + off1, mask=m1, other=0.0).to(tl.float32)
        ar = x0.to(ROUND).to(DOT)              # z = u_{2g} + i·u_{2g+1}, A[n_1, n_2]
        ai = x1.to(ROUND).to(DOT)
        # stage 1: B = F_{N1} · A  (DFT along n_1)
        br = tl.dot(f1r, ar, input_precision=PREC) - tl.dot(f1i, ai, input_precision=PREC)
        bi = tl.dot(f1r, ai, input_precision=PREC) + tl.dot(f1i, ar, input_precision=PREC)
        # twiddle: C[k_1, n_2] = B[k_1, n_2] · ω_N^{k_1 n_2}
        cr = (br * twr - bi * twi).to(ROUND).to(DOT)
        ci = (br * twi + bi * twr).to(ROUND).to(DOT)
        # stage 2: D = C · F_{N2}  (DFT along n_2): D[k_1, k_2] = Z[k_1 + N_1 k_2]
        dr = tl.dot(cr, f2r, input_precision=PREC) - tl.dot(ci, f2i, input_precision=PREC)
        di = tl.dot(cr, f2i, input_precision=PREC) + tl.dot(ci, f2r, input_precision=PREC)
        # E = D ⊙ FFT(k)/N  (pointwise product in the frequency domain, fp32)
        er = (dr * kfr - di * kfi).to(ROUND).to(DOT)
        ei = (dr * kfi + di * kfr).to(ROUND).to(DOT)
        # inverse stage 2: C' = E · conj(F_{N2})  (k_2 -> n_2)
        cr2 = tl.dot(er, g2r, input_precision=PREC) - tl.dot(ei, g2i, input_precision=PREC)
        ci2 = tl.dot(er, g2i, input_precision=PREC) + tl.dot(ei, g2r, input_precision=PREC)
        # conjugate twiddle: B' = C' ⊙ ω_N^{−k_1 n_2}
        br2 = (cr2 * twr + ci2 * twi).to(ROUND).to(DOT)
        bi2 = (ci2 * twr - cr2 * twi).to(ROUND).to(DOT)
        # inverse stage 1, kept rows only: y[N_2 n_1 + n_2] = (conj(F_{N1})[:R1] · B')[n_1, n_2]
        yr = tl.dot(g1r, br2, input_precision=PREC) - tl.dot(g1i, bi2, input_precision=PREC)
        yi = tl.dot(g1r, bi2, input_precision=PREC) + tl.dot(g1i, br2, input_precision=PREC)
        if HAS_POST:                           # output gate y ⊙ g_out
            yr = yr * tl.load(post_ptr + off0, mask=m0, other=0.0).to(tl.float32)
            yi = yi * tl.load(post_ptr + off1, mask=m1, other=0.0).to(tl.float32)
        # Re -> sequence 2g, Im -> sequence 2g + 1
        tl.store(y_ptr + off0, yr.to(y_ptr.dtype.element_ty), mask=m0)
        tl.store(y_ptr + off1, yi.to(y_ptr.dtype.element_ty), mask=m1)


@functools.lru_cache(maxsize=2)
def _kernel(interpret: bool):
    # triton.jit picks InterpretedFunction or JITFunction from TRITON_INTERPRET at decoration
    del interpret                              # (the cache key: the mode it was decorated in)
    return triton.jit(_monarch_conv_kernel)


# ---------------------------------------------------------------------------------- host side
@functools.lru_cache(maxsize=32)
def _constants(n1: int, n2: int, r1: int, store: torch.dtype, device: str
               ) -> tuple[torch.Tensor, ...]:
    """DFT matrices (in the operand dtype) and twiddles (fp32), built in float64 from integer
    exponents ``(k·n) mod N`` and then cast (see monarch_fft)."""
    f1 = dft_matrix(n1, torch.complex128)
    f2 = dft_matrix(n2, torch.complex128)
    tw = twiddle_factors(n1, n2, torch.complex128)             # ω_N^{k_1 n_2}, (N1, N2)
    mats = [f1[:, :r1], f1.conj()[:r1, :], f2, f2.conj()]
    out = []
    for m in mats:
        out += [m.real.to(store).contiguous(), m.imag.to(store).contiguous()]
    out += [tw.real.float().contiguous(), tw.imag.float().contiguous()]
    return tuple(t.to(device) for t in out)


def filter_spectrum_monarch(k: torch.Tensor, fft_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """FFT(k)/N in the kernel's Monarch order: real and imaginary planes, fp32 (H, N_1, N_2),
    ``K[h, k_1, k_2] = FFT(k_pad)[h, k_1 + N_1 k_2] / N``. k: (H, L_k), L_k <= N/2."""
    e = fft_size.bit_length() - 1
    n1, n2 = 2 ** (e - e // 2), 2 ** (e // 2)                             # as triton_factors
    spec = torch.fft.fft(k.to(torch.float32), n=fft_size) / fft_size      # 1/N of the inverse
    spec = spec.reshape(k.shape[0], n2, n1).transpose(1, 2)               # [h, k_1, k_2]
    return spec.real.contiguous(), spec.imag.contiguous()


def _check_tensor(name: str, x: object, ndim: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.is_complex() or not x.is_floating_point():
        raise TypeError(f"{name} must be a real floating-point tensor, got {x.dtype}")
    if x.ndim != ndim:
        shape = "(B, H, L)" if ndim == 3 else "(H, L)"
        raise ValueError(f"{name} must have shape {shape}, got {tuple(x.shape)}")
    if not x.is_contiguous():
        raise ValueError(f"{name} must be contiguous for the Triton kernel (call .contiguous())")
    return x


def _default_pairs(groups: int, chans: int) -> int:
    """Pairs per program: enough programs to fill a GPU (~4 per SM of 132), then reuse the loaded
    DFT matrices / FFT(k) over up to 8 pairs."""
    per = max(1, (groups * chans) // 512)
    return int(min(8, 1 << (per.bit_length() - 1), triton.next_power_of_2(groups)))


def monarch_conv_triton(u: torch.Tensor, k: torch.Tensor, pregate: torch.Tensor | None = None,
                        postgate: torch.Tensor | None = None, *, fft_size: int | None = None,
                        pairs_per_program: int | None = None, num_warps: int | None = None
                        ) -> torch.Tensor:
    """Causal convolution ``y = conv(u ⊙ pregate, k)[:L] ⊙ postgate`` by the fused kernel.

    u: (B, H, L) float16/bfloat16/float32, contiguous; k: (H, L_k) real, L_k <= N/2; gates
    (B, H, L) or None. ``fft_size`` N defaults to the smallest power of two >= max(2L, 256).
    Returns (B, H, L) in u's dtype. u must be a CUDA tensor, or any device with
    ``TRITON_INTERPRET=1`` (Triton's CPU interpreter: exact, slow).
    """
    u = _check_tensor("u", u, 3)
    k = _check_tensor("k", k, 2)
    if u.dtype not in TRITON_DTYPES:
        raise TypeError(f"u must be float16, bfloat16 or float32 for the Triton kernel, got "
                        f"{u.dtype} (use backend='torch' for float64)")
    b, h, length = u.shape
    if k.shape[0] != h:
        raise ValueError(f"k.shape[0] (H = {k.shape[0]}) must equal u.shape[1] (H = {h})")
    gates = {"pregate": pregate, "postgate": postgate}
    for name, g in gates.items():
        if g is not None:
            _check_tensor(name, g, 3)
            if g.shape != u.shape:
                raise ValueError(f"{name} must have u's shape {tuple(u.shape)}, got "
                                 f"{tuple(g.shape)}")
    for name, t in (("k", k), *gates.items()):
        if t is not None and t.device != u.device:
            raise ValueError(f"{name} must be on u's device {u.device}, got {t.device}")
    if fft_size is None:
        fft_size = max(MIN_TRITON_FFT_SIZE, triton.next_power_of_2(max(1, 2 * length)))
    n1, n2 = triton_factors(fft_size, u.dtype)
    if length > fft_size // 2 or k.shape[1] > fft_size // 2:
        raise ValueError(f"u and k may have at most N/2 = {fft_size // 2} samples for FFT size "
                         f"N = {fft_size} (causal conv); got L = {length}, L_k = {k.shape[1]}")
    interpret = interpreting()
    if u.device.type != "cuda" and not interpret:
        raise ValueError(f"the Triton kernel needs CUDA tensors (u is on {u.device}); on a CPU "
                         f"it runs only under Triton's interpreter: set TRITON_INTERPRET=1")
    if pairs_per_program is not None and (isinstance(pairs_per_program, bool) or not isinstance(
            pairs_per_program, int) or pairs_per_program < 1):
        raise ValueError(f"pairs_per_program must be a positive int, got {pairs_per_program!r}")
    y = torch.empty_like(u)
    if b == 0 or h == 0 or length == 0:
        return y
    r1 = max(n1 // 2, 16)                      # input rows that can be non-zero (K >= 16)
    store = u.dtype
    dot = _TL_DTYPE[store]
    if interpret and store == torch.bfloat16:
        dot = tl.float32                       # interpreter bug: bf16 dots on raw bits
    consts = _constants(n1, n2, r1, store, str(u.device))
    kf_re, kf_im = filter_spectrum_monarch(k, fft_size)
    groups = -(-b // 2)
    pairs = pairs_per_program or _default_pairs(groups, h)
    grid = (h, triton.cdiv(groups, pairs))
    _kernel(interpret)[grid](
        u, pregate if pregate is not None else u, postgate if postgate is not None else u, y,
        kf_re, kf_im, *consts, b, h, length,
        N1=n1, N2=n2, R1=r1, PAIRS=pairs, HAS_PRE=pregate is not None,
        HAS_POST=postgate is not None, ROUND=_TL_DTYPE[store], DOT=dot,
        PREC="ieee" if dot == tl.float32 else "tf32",
        num_warps=num_warps or (4 if fft_size <= 1024 else 8))
    return y


# ---------------------------------------------------------------------------------- GPU timing
def _cuda_median_ms(fn, repeats: int) -> float:
    """Median of ``repeats`` CUDA-event timings of ``fn()`` (after two warm-up calls)."""
    fn()
    fn()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def copy_bandwidth(nbytes: int = 2**30, repeats: int = 15, device: str = "cuda") -> float:
    """Measured device copy bandwidth in bytes/s: ``torch.empty_like(x).copy_(x)`` of ``nbytes``
    (read + write counted), median of ``repeats`` CUDA-event timings."""
    x = torch.empty(nbytes // 4, dtype=torch.float32, device=device).uniform_()
    ms = _cuda_median_ms(lambda: torch.empty_like(x).copy_(x), repeats)
    return 2.0 * nbytes / (ms * 1e-3)


def gpu_throughput_table(lengths: Sequence[int], dtype: torch.dtype = torch.float16,
                         repeats: int = 15, *, work: int = 2**25, max_chans: int = 512,
                         bandwidth: float | None = None, seed: int = 0) -> list[dict]:
    """Gated-free causal convolution at fixed work B·H·L = ``work`` on the current CUDA device.

    Per sequence length L (FFT size 2L), median CUDA-event times (ms, ``repeats`` calls) of:
    ``t_triton_ms`` (:func:`monarch_conv_triton`, None where the size is unsupported),
    ``t_torch_ms`` (:class:`~.convolution.MonarchFFTConv` with ``backend="torch"``),
    ``t_rfft_ms`` (``irfft(rfft(u) ⊙ rfft(k))``, in u's dtype where cuFFT takes it, else in fp32
    with casts, as the official benchmark does; recorded in ``rfft_dtype``); each call includes
    the filter's FFT, as the official module does. ``t_floor_ms``: read u, k and write y once at
    the copy bandwidth (:func:`copy_bandwidth` unless ``bandwidth`` bytes/s is given);
    ``err_triton``/``err_torch``: max |y − y_ref| / max |y_ref| against the fp32 rfft conv.
    ``speedup_vs_rfft`` = t_rfft / t_triton. Raises RuntimeError without CUDA.
    """
    from .convolution import MonarchFFTConv

    if not torch.cuda.is_available():
        raise RuntimeError("gpu_throughput_table needs a CUDA device (torch.cuda.is_available() "
                           "is False)")
    if dtype not in TRITON_DTYPES:
        raise TypeError(f"dtype must be one of {TRITON_DTYPES}, got {dtype}")
    dev = "cuda"
    bw = copy_bandwidth(device=dev) if bandwidth is None else float(bandwidth)
    gen = torch.Generator(device=dev).manual_seed(seed)
    esize = torch.empty((), dtype=dtype).element_size()
    rows = []
    for length in lengths:
        n = 2 * length
        bh = max(1, work // length)
        h = min(bh, max_chans)
        b = max(1, bh // h)
        u = torch.randn(b, h, length, device=dev, generator=gen).to(dtype)
        decay = torch.exp(-3.0 * torch.arange(length, device=dev) / length)
        k = (torch.randn(h, length, device=dev, generator=gen) * decay).to(dtype)
        row: dict = {"L": length, "N": n, "B": b, "H": h, "dtype": str(dtype).split(".")[-1]}
        rfft_dtype = dtype

        def rfft_conv(u=u, k=k, n=n, length=length):
            nonlocal rfft_dtype
            if rfft_dtype != torch.float32:
                try:
                    y = torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n), n=n)
                    return y[..., :length]
                except RuntimeError:
                    rfft_dtype = torch.float32
            y = torch.fft.irfft(torch.fft.rfft(u.float(), n=n) * torch.fft.rfft(k.float(), n=n),
                                n=n)
            return y[..., :length].to(u.dtype)

        with torch.inference_mode():
            ref = torch.fft.irfft(torch.fft.rfft(u[:2].float(), n=n) * torch.fft.rfft(
                k.float(), n=n), n=n)[..., :length]
            scale = float(ref.abs().max())
            row["t_rfft_ms"] = _cuda_median_ms(rfft_conv, repeats)
            row["rfft_dtype"] = str(rfft_dtype).split(".")[-1]
            mod = MonarchFFTConv(n, backend="torch").to(dev)
            row["t_torch_ms"] = _cuda_median_ms(lambda mod=mod, u=u, k=k: mod(u, k), repeats)
            row["err_torch"] = float((mod(u[:2], k).float() - ref).abs().max()) / scale
            del mod
            torch.cuda.empty_cache()
            if triton_supports(n, dtype):
                row["t_triton_ms"] = _cuda_median_ms(
                    lambda u=u, k=k: monarch_conv_triton(u, k), repeats)
                row["err_triton"] = float(
                    (monarch_conv_triton(u[:2], k).float() - ref).abs().max()) / scale
                row["speedup_vs_rfft"] = row["t_rfft_ms"] / row["t_triton_ms"]
            else:
                row["t_triton_ms"] = row["err_triton"] = row["speedup_vs_rfft"] = None
        moved = (2 * b * h * length + h * length) * esize       # read u, k; write y
        row["t_floor_ms"] = 1e3 * moved / bw
        row["copy_GBps"] = bw / 1e9
        rows.append(row)
        del u, k
        torch.cuda.empty_cache()
    return rows
