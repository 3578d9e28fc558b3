"""Causal long convolution as Monarch matmuls: FlashFFTConv's module and its sparse variants.

Paper mapping (Fu et al., ICLR 2024):

* §2 / Alg. 1: ``y = iFFT(FFT(u_pad) ⊙ FFT(k_pad))[:L]`` with FFT size ``N = 2L`` (causal, zero
  padded), optionally gated: ``y = conv(u ⊙ g_in, k) ⊙ g_out`` — :class:`MonarchFFTConv`, a drop-in
  for the official ``FlashFFTConv(seqlen, dtype)`` (``forward(u: (B,H,L), k: (H,L), pregate,
  postgate)``; ``seqlen`` is the FFT size).
* §3.1: every FFT is an order-p Monarch decomposition (:mod:`.monarch_fft`), stages are matmuls.
* §3.1 "domain-specific optimizations":
  - *real-input trick*: a real length-N signal is packed as ``z[m] = x[2m] + i·x[2m+1]`` and
    transformed with a complex DFT of size N/2; the spectrum is unpacked with the Hermitian
    mirror ``Z[(N/2 − k) mod N/2]``. Here the unpack, the product with FFT(k) and the re-pack of the
    inverse are folded into one step ``Z_y = P ⊙ Z_u + Q ⊙ conj(Z_u[mirror])`` with ``P, Q``
    precomputed from FFT(k) (derivation in :meth:`MonarchFFTConv.filter_spectrum`);
  - *implicit padding*: the second half of the FFT input is zero, so the first forward stage uses
    only half the columns of ``F_{N_1}``; only the first L outputs are kept, so the last inverse
    stage computes only half its rows; without the real trick the first stage multiplies real
    data (2 real matmuls, not 4) and the last inverse stage only forms the real part.
* §3.3 *partial convolutions* (:class:`PartialFFTConv`): the filter is cut to ``N′`` taps and the
  sequence is processed in blocks with FFT size ``2N′`` (overlap-save), so the work per output
  grows with ``N′`` not with L.
* §3.3 *frequency-sparse convolutions* (:class:`FrequencySparseFFTConv`): FFT(k) is zeroed on
  whole blocks of the Monarch layout, namely every frequency whose most significant digit ``k_p``
  (the output index of the *last* forward stage) lies outside a kept set. Those columns of the last
  forward stage and rows of the first inverse stage are never computed. Keeping ``k_p`` near 0 and
  near ``N_p`` keeps low |frequency| on the complex pipeline (a low-pass, as in the official
  PyTorch example); on the real-trick pipeline it keeps the lowest and highest rfft bins.

What differs from the paper: no fused kernel, no tensor cores, no fp16/bf16 (CPU has no fast path;
computation is float32 or float64, inputs of other float dtypes are cast), no backward kernels (the
module is differentiable through autograd on the matmuls).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from .monarch_fft import (
    complex_dtype_for,
    dft_matrix,
    monarch_factors,
    monarch_fft,
    monarch_permutation,
    twiddle_factors,
)
from .order_selection import best_order

__all__ = [
    "MAX_FFT_SIZE",
    "MIN_FFT_SIZE",
    "FrequencySparseFFTConv",
    "MonarchFFTConv",
    "PartialFFTConv",
    "fft_conv",
    "fft_conv_complex_reference",
    "fft_conv_reference",
    "frequency_sparse_reference",
]

MIN_FFT_SIZE = 16
MAX_FFT_SIZE = 2**22  # the official kernels go up to N = 4,194,304


def _check_fft_size(name: str, n: int) -> None:
    if (isinstance(n, bool) or not isinstance(n, int) or n < MIN_FFT_SIZE or n > MAX_FFT_SIZE
            or n & (n - 1)):
        raise ValueError(f"{name} (the FFT size, 2x the sequence length for a causal conv) must "
                         f"be a power of two in [{MIN_FFT_SIZE}, {MAX_FFT_SIZE}], got {n!r}")


def _compute_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32/float64 compute as themselves; float16/bfloat16 (the official module's dtypes,
    which have no fast CPU path) compute in float32."""
    if dtype in (torch.float32, torch.float64):
        return dtype
    if dtype in (torch.float16, torch.bfloat16):
        return torch.float32
    raise TypeError(f"dtype must be torch.float32 or torch.float64 (or float16/bfloat16, which "
                    f"compute in float32), got {dtype!r}")


def _check_real(name: str, x: object) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {type(x).__name__}")
    if x.is_complex():
        raise TypeError(f"{name} must be real (a convolution of real signals), got complex "
                        f"dtype {x.dtype}")
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    return x


class MonarchFFTConv(nn.Module):
    """Causal depthwise long convolution ``y[b,h,t] = Σ_{s≤t} k[h,s]·u[b,h,t−s]`` by Monarch FFTs.

    Args:
        seqlen: FFT size N (= 2·L for sequences of length L), a power of two in
            [16, 2^22] (the official kernels support [256, 2^22]).
        order: number of Monarch matmul stages (2, 3 or 4); ``None`` picks the fastest order
            measured on a CPU for this transform size (:func:`.order_selection.best_order`).
        real_trick: pack the real input into a half-length complex transform (§3.1).
        dtype: computation dtype, ``torch.float32`` or ``torch.float64``; the official module's
            ``torch.float16``/``torch.bfloat16`` are accepted and compute in float32. As in the
            official constructor, ``MonarchFFTConv(seqlen, torch.bfloat16)`` works (a dtype
            passed second is taken as ``dtype``).

    ``forward(u, k, pregate=None, postgate=None)``: u (B, H, L) real with L ≤ N/2, k (H, L_k) real
    with L_k ≤ N/2; optional gates (B, H, L): ``y = conv(u ⊙ pregate, k) ⊙ postgate``. Returns
    (B, H, L) in u's dtype. ``in_gate``/``out_gate`` are accepted as keyword aliases.
    """

    def __init__(self, seqlen: int, order: int | None = None, real_trick: bool = True,
                 dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        if isinstance(order, torch.dtype):          # the official call FlashFFTConv(seqlen, dtype)
            order, dtype = None, order
        _check_fft_size("seqlen", seqlen)
        self._setup(seqlen=seqlen, block=seqlen, order=order, real_trick=real_trick,
                    dtype=dtype, in_half=True, out_second=False, keep_top=None)

    # ------------------------------------------------------------------ plan construction
    def _setup(self, *, seqlen: int, block: int, order: int | None, real_trick: bool,
               dtype: torch.dtype, in_half: bool, out_second: bool,
               keep_top: list[int] | None) -> None:
        dtype = _compute_dtype(dtype)
        if not isinstance(real_trick, bool):
            raise TypeError(f"real_trick must be a bool, got {real_trick!r}")
        self.seqlen = seqlen
        self.block = block                      # FFT size actually transformed
        self.dtype = dtype
        self.real_trick = real_trick
        self.transform_size = block // 2 if real_trick else block
        if order is None:
            order = best_order(self.transform_size)
        max_order = min(4, int(math.log2(self.transform_size)))  # every factor >= 2
        if isinstance(order, bool) or not isinstance(order, int) or not 2 <= order <= max_order:
            raise ValueError(f"order must be 2, 3 or 4 (and <= log2 of the transform size "
                             f"{self.transform_size}, i.e. <= {max_order}); got {order!r}")
        self.order = order
        self.factors = monarch_factors(self.transform_size, order)
        self._in_half = in_half
        self._out_second = out_second
        cd = complex_dtype_for(dtype)
        fac = self.factors
        p = len(fac)
        f0, flast = fac[0], fac[-1]
        h0 = f0 // 2
        reg = functools.partial(self.register_buffer, persistent=False)
        for i, f in enumerate(fac):
            rest = math.prod(fac[i + 1:])
            if 0 < i < p - 1:
                reg(f"fwd_mat_{i}", dft_matrix(f, cd))
                reg(f"inv_mat_{i}", dft_matrix(f, cd, inverse=True))
            if i < p - 1:
                reg(f"fwd_tw_{i}", twiddle_factors(f, rest, cd))
                reg(f"inv_tw_{i}", twiddle_factors(f, rest, cd, inverse=True))
        # first forward stage: implicit padding keeps only the first N_1/2 input digits
        F0 = dft_matrix(f0, cd)
        cols = slice(0, h0) if in_half else slice(0, f0)
        rows = slice(h0, f0) if out_second else slice(0, h0)
        G0 = dft_matrix(f0, cd, inverse=True)
        if real_trick:
            reg("fwd_mat_0", F0[:, cols].contiguous())
            reg("inv_mat_0", G0[rows, :].contiguous())
        else:
            # real input: [Re F; Im F] · x is one real matmul;  Re(conj(F)·C) = [Re F, Im F]·[Re C; Im C]
            reg("fwd_mat_0", torch.cat([F0.real[:, cols], F0.imag[:, cols]], 0).contiguous())
            reg("inv_mat_0", torch.cat([F0.real[rows, :], F0.imag[rows, :]], 1).contiguous())
        # last forward / first inverse stage (right-multiplies); frequency sparsity drops blocks
        Fl = dft_matrix(flast, cd)
        Gl = dft_matrix(flast, cd, inverse=True)
        if keep_top is None:
            kept = torch.arange(flast)
        else:
            kept = torch.tensor(sorted(keep_top), dtype=torch.int64)
        self._n_kept = int(kept.numel())
        reg("kept_top", kept)
        reg("fwd_mat_last", Fl[kept, :].T.contiguous())     # X[.., s] = Σ_n x[n] F[s, n], s ∈ S
        reg("inv_mat_last", Gl[:, kept].T.contiguous())     # x[n] = Σ_{s∈S} X[s] conj(F)[n, s]
        if real_trick:
            m = self.transform_size
            perm = monarch_permutation(fac)                 # natural index at each position
            pos_of = torch.empty_like(perm)
            pos_of[perm] = torch.arange(m)
            mirror = pos_of[(m - perm) % m]                 # position of (M − κ) mod M
            in_s = torch.zeros(flast, dtype=torch.bool)
            in_s[kept] = True
            top_kept = in_s[torch.arange(m) % flast]        # last digit of a position = top digit
            kept_pos = top_kept.nonzero().flatten()         # positions computed, in layout order
            compressed = torch.full((m,), -1, dtype=torch.int64)
            compressed[kept_pos] = torch.arange(kept_pos.numel())
            mirror_c = compressed[mirror[kept_pos]]
            # a kept position whose mirror block is skipped has P = Q = 0 (see filter_spectrum);
            # point it at itself so the gather stays in range
            mirror_c = torch.where(mirror_c < 0, torch.arange(kept_pos.numel()), mirror_c)
            # both κ and its mirror computed: the rfft bins this layout can keep
            pair_kept = top_kept & top_kept[mirror]
            reg("mirror", mirror_c.contiguous())
            reg("w_half", _unit_root_vector(perm, block, cd))     # W = ω_N^κ per position
            reg("kept_positions", kept_pos)
            reg("pair_kept", pair_kept)

    # ------------------------------------------------------------------ validation helpers
    def _prepare(self, u: torch.Tensor, k: torch.Tensor, pregate, postgate, in_gate, out_gate,
                 max_len: int | None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None,
                                               torch.Tensor | None]:
        if in_gate is not None:
            if pregate is not None:
                raise ValueError("pass the input gate once: pregate or in_gate, not both")
            pregate = in_gate
        if out_gate is not None:
            if postgate is not None:
                raise ValueError("pass the output gate once: postgate or out_gate, not both")
            postgate = out_gate
        u = _check_real("u", u)
        k = _check_real("k", k)
        if u.ndim != 3:
            raise ValueError(f"u must have shape (B, H, L), got {tuple(u.shape)}")
        if k.ndim != 2:
            raise ValueError(f"k must have shape (H, L), got {tuple(k.shape)}")
        if k.shape[0] != u.shape[1]:
            raise ValueError(f"k.shape[0] (H = {k.shape[0]}) must equal u.shape[1] "
                             f"(H = {u.shape[1]}); u: {tuple(u.shape)}, k: {tuple(k.shape)}")
        if k.device != u.device:
            raise ValueError(f"u and k must be on the same device, got {u.device} and {k.device}")
        if max_len is not None:
            if u.shape[-1] > max_len:
                raise ValueError(f"u has length {u.shape[-1]} but this module's FFT size "
                                 f"seqlen={self.seqlen} allows sequences of length <= {max_len} "
                                 f"(causal conv needs FFT size >= 2L)")
            if k.shape[-1] > max_len:
                raise ValueError(f"k has length {k.shape[-1]}; at most seqlen/2 = {max_len}")
        for name, g in (("pregate", pregate), ("postgate", postgate)):
            if g is not None:
                _check_real(name, g)
                if g.shape != u.shape:
                    raise ValueError(f"{name} must have u's shape {tuple(u.shape)}, got "
                                     f"{tuple(g.shape)}")
        return u, k, pregate, postgate

    # ------------------------------------------------------------------ the pipeline
    def _forward_transform(self, x: torch.Tensor) -> torch.Tensor:
        """x: (R, n) real with n <= block/2 when in_half else n == block -> (R, M') complex in
        Monarch order (M' = M·|S|/N_p)."""
        fac = self.factors
        f0 = fac[0]
        cols = f0 // 2 if self._in_half else f0
        in_len = self.block // 2 if self._in_half else self.block
        rows = x.shape[0]
        if x.shape[-1] < in_len:
            x = F.pad(x, (0, in_len - x.shape[-1]))      # zeros are implicit below: half columns
        x = x.contiguous()
        rest0 = self.transform_size // f0
        if self.real_trick:
            z = torch.view_as_complex(x.reshape(rows, -1, 2))   # z[m] = x[2m] + i x[2m+1]
            y = torch.matmul(self.fwd_mat_0, z.reshape(rows, cols, rest0))
        else:
            y = torch.matmul(self.fwd_mat_0, x.reshape(rows, cols, rest0))   # [ReF; ImF]·x
            y = torch.complex(y[:, :f0], y[:, f0:])
        y = y * self.fwd_tw_0                                    # ω_N^{k_1 r}
        outer = f0
        for i in range(1, len(fac) - 1):
            f = fac[i]
            y = torch.matmul(getattr(self, f"fwd_mat_{i}"), y.reshape(rows * outer, f, -1))
            y = y * getattr(self, f"fwd_tw_{i}")
            outer *= f
        y = y.reshape(-1, fac[-1]) @ self.fwd_mat_last          # last stage, kept blocks only
        return y.reshape(rows, -1)

    def _inverse_transform(self, y: torch.Tensor) -> torch.Tensor:
        """(R, M') complex Monarch order -> (R, block/2) real: the kept half of the output."""
        fac = self.factors
        rows = y.shape[0]
        y = y.reshape(-1, self._n_kept) @ self.inv_mat_last     # first inverse stage
        outer = self.transform_size // fac[-1]
        for i in range(len(fac) - 2, 0, -1):
            f = fac[i]
            outer //= f
            y = y.reshape(rows * outer, f, -1) * getattr(self, f"inv_tw_{i}")
            y = torch.matmul(getattr(self, f"inv_mat_{i}"), y)
        y = y.reshape(rows, fac[0], -1) * self.inv_tw_0
        if self.real_trick:
            y = torch.matmul(self.inv_mat_0, y)                  # rows of the kept output half
            return torch.view_as_real(y).reshape(rows, -1)       # y[2m] = Re z, y[2m+1] = Im z
        y = torch.matmul(self.inv_mat_0, torch.cat([y.real, y.imag], dim=1))   # Re(conj(F)·C)
        return y.reshape(rows, -1)

    def _apply_spectrum(self, y: torch.Tensor, spec: torch.Tensor, batch: int) -> torch.Tensor:
        """Pointwise product in the frequency domain. y: (B·H·S, M'); spec from filter_spectrum."""
        h = spec.shape[1]
        yv = y.reshape(batch, h, -1, y.shape[-1])
        if self.real_trick:
            P, Q = spec[0].unsqueeze(1), spec[1].unsqueeze(1)
            # Z_y = P ⊙ Z_u + Q ⊙ conj(Z_u[mirror])  (unpack, ⊙ FFT(k), re-pack, 1/M in one step)
            out = P * yv + Q * yv[..., self.mirror].conj()
        else:
            out = yv * spec[0].unsqueeze(1)                     # FFT(u) ⊙ FFT(k) / N
        return out.reshape(y.shape)

    def filter_spectrum(self, k: torch.Tensor) -> torch.Tensor:
        """FFT(k) in the layout the pipeline consumes, computed once per filter (reuse it across
        batches with :meth:`forward_spectrum`).

        k: (H, L_k) real, L_k <= block/2. Returns complex (2, H, M) with the real trick — ``P``
        and ``Q`` of ``Z_y = P ⊙ Z_u + Q ⊙ conj(Z_u[mirror])`` — else (1, H, M'), FFT(k)/N.

        Derivation (real trick): with ``Z`` the half-size DFT of the packed signal,
        ``E = (Z + conj(Z_m))/2``, ``O = (Z − conj(Z_m))/(2i)`` and ``W = ω_N^κ``, the rfft is
        ``X[κ] = E + W·O`` and ``X[N/2−κ] = conj(E − W·O)``. Multiplying by FFT(k) and packing
        the inverse gives ``Z_y = Z·(a + b·Im W) + conj(Z_m)·(i·b·Re W)`` with ``a = E_k`` and
        ``b = W·O_k`` from the filter's own packed transform.
        """
        k = _check_real("k", k)
        if k.ndim != 2:
            raise ValueError(f"k must have shape (H, L), got {tuple(k.shape)}")
        if k.shape[-1] > self.block // 2:
            raise ValueError(f"k has length {k.shape[-1]}; at most {self.block // 2} for FFT "
                             f"size {self.block}")
        k = k.to(self.dtype)
        kp = F.pad(k, (0, self.block - k.shape[-1]))
        if self.real_trick:
            m = self.transform_size
            zk = monarch_fft(torch.view_as_complex(kp.reshape(k.shape[0], m, 2).contiguous()),
                             self.factors)
            full_mirror = self._full_mirror()
            zm = zk[..., full_mirror].conj()
            e = (zk + zm) / 2
            o = (zk - zm) / 2j
            w = self.w_half
            kk = e + w * o                                      # rfft(k)[κ]
            kmc = e - w * o                                     # conj(rfft(k)[M − κ])
            if self._n_kept != self.factors[-1]:                # frequency-sparse: mask both bins
                keep = self.pair_kept.to(kk.real.dtype)
                kk, kmc = kk * keep, kmc * keep[full_mirror]
            a = (kk + kmc) / 2
            b = (kk - kmc) / 2                                  # = W·O_k when nothing is masked
            p_ = (a + b * w.imag) / m                           # a + b·Im W   (1/M of the iDFT)
            q_ = (1j * b * w.real) / m                          # i·b·Re W
            if self._n_kept != self.factors[-1]:
                p_, q_ = p_[..., self.kept_positions], q_[..., self.kept_positions]
            return torch.stack([p_, q_])
        kf = monarch_fft(kp, self.factors) / self.block
        if self._n_kept != self.factors[-1]:
            kf = kf.reshape(k.shape[0], -1, self.factors[-1])[..., self.kept_top]
        return kf.reshape(1, k.shape[0], -1)

    def _full_mirror(self) -> torch.Tensor:
        """Position of (M − κ) mod M for every Monarch position κ of the half-size transform."""
        perm = monarch_permutation(self.factors, device=self.w_half.device)
        m = self.transform_size
        pos_of = torch.empty_like(perm)
        pos_of[perm] = torch.arange(m, device=perm.device)
        return pos_of[(m - perm) % m]

    def forward_spectrum(self, u: torch.Tensor, k_f: torch.Tensor,
                         pregate: torch.Tensor | None = None,
                         postgate: torch.Tensor | None = None) -> torch.Tensor:
        """The convolution with a precomputed :meth:`filter_spectrum`. u: (B, H, L) -> (B, H, L)."""
        u = _check_real("u", u)
        if u.ndim != 3:
            raise ValueError(f"u must have shape (B, H, L), got {tuple(u.shape)}")
        if not isinstance(k_f, torch.Tensor) or k_f.ndim != 3 or k_f.shape[1] != u.shape[1]:
            raise ValueError("k_f must come from filter_spectrum(k) with k.shape[0] == H = "
                             f"{u.shape[1]}")
        if u.shape[-1] > self.seqlen // 2:
            raise ValueError(f"u has length {u.shape[-1]}; at most seqlen/2 = {self.seqlen // 2}")
        return self._run(u, k_f, pregate, postgate)

    def _run(self, u, spec, pregate, postgate) -> torch.Tensor:
        out_dtype = u.dtype
        x = u.to(self.dtype)
        if pregate is not None:
            x = x * pregate.to(self.dtype)                      # input gate u ⊙ g_in
        y = self._convolve(x, spec)
        if postgate is not None:
            y = y * postgate.to(self.dtype)                     # output gate y ⊙ g_out
        return y.to(out_dtype)

    def _convolve(self, x: torch.Tensor, spec: torch.Tensor) -> torch.Tensor:
        b, h, length = x.shape
        xf = self._forward_transform(x.reshape(b * h, length))
        yf = self._apply_spectrum(xf, spec, b)
        y = self._inverse_transform(yf)
        return y[:, :length].reshape(b, h, length)

    def forward(self, u: torch.Tensor, k: torch.Tensor, pregate: torch.Tensor | None = None,
                postgate: torch.Tensor | None = None, *, in_gate: torch.Tensor | None = None,
                out_gate: torch.Tensor | None = None) -> torch.Tensor:
        u, k, pregate, postgate = self._prepare(u, k, pregate, postgate, in_gate, out_gate,
                                                self.seqlen // 2)
        return self._run(u, self.filter_spectrum(k), pregate, postgate)

    def extra_repr(self) -> str:
        return (f"seqlen={self.seqlen}, order={self.order}, factors={self.factors}, "
                f"real_trick={self.real_trick}, dtype={self.dtype}")


def _unit_root_vector(idx: torch.Tensor, n: int, cd: torch.dtype) -> torch.Tensor:
    """ω_n^{idx} built in float64 from the integer index."""
    angle = (-2.0 * math.pi / n) * torch.remainder(idx, n).to(torch.float64)
    return torch.polar(torch.ones_like(angle), angle).to(cd)


class PartialFFTConv(MonarchFFTConv):
    """Partial convolution (§3.3): the filter is cut to its first ``filter_len`` taps,
    ``y = conv(u, k[:, :filter_len])``, computed blockwise by overlap-save with FFT size
    ``2·filter_len`` so the work per output no longer depends on the sequence length.

    Args: seqlen (maximum FFT size, sequences up to seqlen/2), filter_len N′ (a power of two with
    16 <= 2N′ <= seqlen), order/real_trick/dtype as :class:`MonarchFFTConv` (order for the block
    transform). Forward as :class:`MonarchFFTConv`; k may be longer than N′ (it is truncated).
    """

    def __init__(self, seqlen: int, filter_len: int, order: int | None = None,
                 real_trick: bool = True, dtype: torch.dtype = torch.float32) -> None:
        nn.Module.__init__(self)
        _check_fft_size("seqlen", seqlen)
        if (isinstance(filter_len, bool) or not isinstance(filter_len, int)
                or filter_len & (filter_len - 1) or not MIN_FFT_SIZE <= 2 * filter_len <= seqlen):
            raise ValueError(f"filter_len must be a power of two with {MIN_FFT_SIZE} <= "
                             f"2*filter_len <= seqlen={seqlen}, got {filter_len!r}")
        self.filter_len = filter_len
        blockwise = 2 * filter_len < seqlen
        self._setup(seqlen=seqlen, block=2 * filter_len, order=order, real_trick=real_trick,
                    dtype=dtype, in_half=not blockwise, out_second=blockwise, keep_top=None)
        self.blockwise = blockwise

    def filter_spectrum(self, k: torch.Tensor) -> torch.Tensor:
        k = _check_real("k", k)
        if k.ndim != 2:
            raise ValueError(f"k must have shape (H, L), got {tuple(k.shape)}")
        return super().filter_spectrum(k[:, : self.filter_len])

    def forward(self, u: torch.Tensor, k: torch.Tensor, pregate: torch.Tensor | None = None,
                postgate: torch.Tensor | None = None, *, in_gate: torch.Tensor | None = None,
                out_gate: torch.Tensor | None = None) -> torch.Tensor:
        u, k, pregate, postgate = self._prepare(u, k, pregate, postgate, in_gate, out_gate, None)
        if u.shape[-1] > self.seqlen // 2:
            raise ValueError(f"u has length {u.shape[-1]}; at most seqlen/2 = {self.seqlen // 2}")
        return self._run(u, self.filter_spectrum(k), pregate, postgate)

    def _convolve(self, x: torch.Tensor, spec: torch.Tensor) -> torch.Tensor:
        if not self.blockwise:
            return super()._convolve(x, spec)
        b, h, length = x.shape
        nb = self.filter_len
        nseg = -(-length // nb)
        # overlap-save: segment j = u[(j−1)N′ : (j+1)N′]; its circular conv of size 2N′ is exact
        # on the second half, which is output block j.
        xp = F.pad(x.reshape(b * h, length), (nb, nseg * nb - length))
        seg = xp.unfold(-1, 2 * nb, nb).reshape(b * h * nseg, 2 * nb)
        yf = self._apply_spectrum(self._forward_transform(seg), spec, b)
        y = self._inverse_transform(yf)                          # (B·H·nseg, N′)
        return y.reshape(b, h, nseg * nb)[..., :length]

    def extra_repr(self) -> str:
        return super().extra_repr() + f", filter_len={self.filter_len}, blockwise={self.blockwise}"


class FrequencySparseFFTConv(MonarchFFTConv):
    """Frequency-sparse convolution (§3.3): FFT(k) is zeroed on whole blocks of the Monarch layout
    so that those columns of the last forward stage and rows of the first inverse stage are never
    computed (and the frequency-domain product shrinks alike).

    The blocks are indexed by the last stage's output digit ``t``, the most significant digit of
    the frequency; ``2c`` of its ``N_p`` values are kept, ``t ∈ {0..c−1} ∪ {N_p−c..N_p−1}``,
    ``c = round(keep_fraction·N_p/2)``; ``kept_fraction = 2c/N_p`` is the realised keep.

    * ``real_trick=False`` (complex pipeline of size N): the kept frequencies are the low
      |frequencies| — the official example's low-pass filter. Semantics:
      ``y = Re(iFFT(FFT(u_pad) ⊙ FFT(k_pad) ⊙ mask))[:L]`` (the block boundary makes ``mask``
      asymmetric by one bin, hence the real part).
    * ``real_trick=True`` (default; the faster half-size pipeline): the packed transform pairs
      rfft bin κ with bin N/2 − κ, so a block-aligned set keeps rfft bins with *both* κ and
      N/2 − κ in kept blocks: the lowest and the highest frequencies (a band-stop of the middle).
      Semantics: ``y = irfft(rfft(u_pad) ⊙ rfft(k_pad) ⊙ mask[:N/2+1])[:L]``.

    ``mask`` (N,) bool over the full FFT in natural order is exposed for both; the references
    :func:`frequency_sparse_reference` reproduces either with torch.fft.
    """

    def __init__(self, seqlen: int, keep_fraction: float, order: int | None = None,
                 real_trick: bool = True, dtype: torch.dtype = torch.float32) -> None:
        nn.Module.__init__(self)
        _check_fft_size("seqlen", seqlen)
        if isinstance(keep_fraction, bool) or not isinstance(keep_fraction, (int, float)) or \
                not 0.0 < float(keep_fraction) <= 1.0:
            raise ValueError(f"keep_fraction must be a number in (0, 1], got {keep_fraction!r}")
        if not isinstance(real_trick, bool):
            raise TypeError(f"real_trick must be a bool, got {real_trick!r}")
        m = seqlen // 2 if real_trick else seqlen
        if order is None:
            order = best_order(m)
        if isinstance(order, bool) or not isinstance(order, int) or \
                not 2 <= order <= min(4, int(math.log2(m))):
            raise ValueError(f"order must be 2, 3 or 4 (<= log2 of the transform size {m}); "
                             f"got {order!r}")
        flast = monarch_factors(m, order)[-1]
        c = max(1, min(flast // 2, round(float(keep_fraction) * flast / 2)))
        keep = list(range(c)) + list(range(flast - c, flast))
        self._setup(seqlen=seqlen, block=seqlen, order=order, real_trick=real_trick, dtype=dtype,
                    in_half=True, out_second=False, keep_top=keep)
        self.keep_fraction = float(keep_fraction)
        self.kept_fraction = 2 * c / flast
        if real_trick:
            perm = monarch_permutation(self.factors)
            pair_nat = torch.empty(m, dtype=torch.bool)
            pair_nat[perm] = self.pair_kept                  # rfft bins κ < N/2 that survive
            rmask = torch.cat([pair_nat, pair_nat[:1]])      # bin N/2 pairs with bin 0
            mask = torch.cat([rmask, rmask[1:-1].flip(0)])   # Hermitian extension to N bins
        else:
            kept = torch.zeros(flast, dtype=torch.bool)
            kept[keep] = True
            mask = kept[torch.arange(seqlen) // (seqlen // flast)]
        self.register_buffer("mask", mask, persistent=False)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", kept_fraction={self.kept_fraction}"


# ---------------------------------------------------------------------- functional API + references
@functools.lru_cache(maxsize=32)
def _cached_module(seqlen: int, order: int | None, real_trick: bool, dtype: torch.dtype,
                   device: str) -> MonarchFFTConv:
    return MonarchFFTConv(seqlen, order=order, real_trick=real_trick, dtype=dtype).to(device)


def fft_conv(u: torch.Tensor, k: torch.Tensor, *, fft_size: int | None = None,
             order: int | None = None, real_trick: bool = True,
             pregate: torch.Tensor | None = None, postgate: torch.Tensor | None = None
             ) -> torch.Tensor:
    """Functional causal convolution by Monarch FFTs. u: (B, H, L), k: (H, L_k) -> (B, H, L).

    ``fft_size`` defaults to the smallest power of two >= max(2L, 16); computation in float64
    when u is float64, else float32. Modules are cached per (size, order, trick, dtype, device).
    """
    u = _check_real("u", u)
    if u.ndim != 3:
        raise ValueError(f"u must have shape (B, H, L), got {tuple(u.shape)}")
    if fft_size is None:
        fft_size = max(MIN_FFT_SIZE, 1 << max(0, (2 * u.shape[-1] - 1).bit_length()))
    dtype = torch.float64 if u.dtype == torch.float64 else torch.float32
    mod = _cached_module(fft_size, order, real_trick, dtype, str(u.device))
    return mod(u, k, pregate, postgate)


def _ref_args(u: torch.Tensor, k: torch.Tensor, fft_size: int | None) -> int:
    _check_real("u", u)
    _check_real("k", k)
    if u.ndim != 3 or k.ndim != 2 or k.shape[0] != u.shape[1]:
        raise ValueError(f"expected u (B, H, L) and k (H, L_k); got {tuple(u.shape)} and "
                         f"{tuple(k.shape)}")
    return 2 * u.shape[-1] if fft_size is None else fft_size


def fft_conv_reference(u: torch.Tensor, k: torch.Tensor, fft_size: int | None = None
                       ) -> torch.Tensor:
    """The strongest CPU baseline: ``irfft(rfft(u, n=N) ⊙ rfft(k, n=N), n=N)[..., :L]``, N = 2L."""
    n = _ref_args(u, k, fft_size)
    length = u.shape[-1]
    y = torch.fft.irfft(torch.fft.rfft(u, n=n) * torch.fft.rfft(k, n=n), n=n)
    return y[..., :length]


def fft_conv_complex_reference(u: torch.Tensor, k: torch.Tensor, fft_size: int | None = None
                               ) -> torch.Tensor:
    """The official benchmark's baseline: complex ``fft``/``ifft`` (a weaker baseline than rfft)."""
    n = _ref_args(u, k, fft_size)
    length = u.shape[-1]
    y = torch.fft.ifft(torch.fft.fft(u, n=n) * torch.fft.fft(k, n=n), n=n)
    return y.real[..., :length]


def frequency_sparse_reference(u: torch.Tensor, k: torch.Tensor, mask: torch.Tensor
                               ) -> torch.Tensor:
    """``Re(ifft(fft(u_pad) ⊙ fft(k_pad) ⊙ mask))[..., :L]`` with torch.fft, N = mask.numel()."""
    n = mask.numel()
    _ref_args(u, k, n)
    y = torch.fft.ifft(torch.fft.fft(u, n=n) * torch.fft.fft(k, n=n) * mask.to(u.device), n=n)
    return y.real[..., : u.shape[-1]]
