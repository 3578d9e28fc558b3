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

What differs from the paper: this module's PyTorch path (``backend="torch"``, the reference and
the only path on a CPU) has no fused kernel, no tensor cores, no fp16/bf16 (CPU has no fast path;
computation is float32 or float64, inputs of other float dtypes are cast), no backward kernels (the
module is differentiable through autograd on the matmuls). The fused GPU kernel is
:mod:`.triton_kernel` (``backend="triton"``, picked by ``"auto"`` for CUDA inputs it supports;
forward only).
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from .monarch_fft import complex_dtype_for, monarch_factors
from .monarch_stages import MonarchStage, build_stages, layout_frequencies, stages_forward, \
    stages_inverse
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
BACKENDS = ("auto", "torch", "triton")
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
        backend: ``"torch"`` (this module's PyTorch matmul pipeline, the reference),
            ``"triton"`` (the fused kernel of :mod:`.triton_kernel`: CUDA tensors, or any
            tensors under ``TRITON_INTERPRET=1``; FFT sizes 256…8192 in fp16/bf16, …4096 in fp32; u in float16/bfloat16/
            float32, whose dtype sets the kernel's operand dtype; ``order``/``real_trick`` do not
            apply to it) or ``"auto"`` (default): triton for CUDA inputs when Triton is importable
            and the size and dtype are supported, else torch. CPU inputs always take the torch
            path under ``"auto"``.

    ``forward(u, k, pregate=None, postgate=None)``: u (B, H, L) real with L ≤ N/2, k (H, L_k) real
    with L_k ≤ N/2; optional gates (B, H, L): ``y = conv(u ⊙ pregate, k) ⊙ postgate``. Returns
    (B, H, L) in u's dtype. ``in_gate``/``out_gate`` are accepted as keyword aliases.
    """

    def __init__(self, seqlen: int, order: int | None = None, real_trick: bool = True,
                 dtype: torch.dtype = torch.float32, backend: str = "auto") -> None:
        super().__init__()
        if isinstance(order, torch.dtype):          # the official call FlashFFTConv(seqlen, dtype)
            order, dtype = None, order
        _check_fft_size("seqlen", seqlen)
        if backend not in BACKENDS:
            raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
        self._setup(seqlen=seqlen, block=seqlen, order=order, real_trick=real_trick,
                    dtype=dtype, in_half=True, out_second=False, keep_top=None)
        self.backend = backend

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
        self.transform_size = block             # one complex transform of the full block
        if order is None:
            order = best_order(block)
        max_order = min(4, int(math.log2(block)))  # every factor >= 2
        if isinstance(order, bool) or not isinstance(order, int) or not 2 <= order <= max_order:
            raise ValueError(f"order must be 2, 3 or 4 (and <= log2 of the transform size "
                             f"{block}, i.e. <= {max_order}); got {order!r}")
        self.order = order
        self.factors = monarch_factors(block, order)
        self.backend = "torch"                  # subclasses (partial, sparse): torch only
        self._in_half = in_half
        self._out_second = out_second
        flast = self.factors[-1]
        kept = list(range(flast)) if keep_top is None else sorted(keep_top)
        self._n_kept = len(kept)
        reg = functools.partial(self.register_buffer, persistent=False)
        reg("kept_top", torch.tensor(kept, dtype=torch.int64))
        stages = build_stages(self.factors, complex_dtype_for(dtype), in_half=in_half,
                              out_second=out_second, kept=kept)
        self._folded = []
        for m, st in enumerate(stages):
            reg(f"fwd_mat_{m}", st.fwd)
            reg(f"inv_mat_{m}", st.inv)
            if st.fwd_tw is not None:
                reg(f"fwd_tw_{m}", st.fwd_tw)
                reg(f"inv_tw_{m}", st.inv_tw)
            self._folded.append(st.fwd_tw is None)
        reg("layout_freq", layout_frequencies(self.factors, kept))
        self._spec_mask: torch.Tensor | None = None

    def _stages(self) -> list[MonarchStage]:
        """The stage matrices as buffers on the module's current device."""
        out = []
        for m, f in enumerate(self.factors):
            prefix = math.prod(self.factors[:m]) if m else 1
            tw = (None, None) if self._folded[m] else (getattr(self, f"fwd_tw_{m}"),
                                                         getattr(self, f"inv_tw_{m}"))
            out.append(MonarchStage(prefix, f, getattr(self, f"fwd_mat_{m}"),
                                    getattr(self, f"inv_mat_{m}"), *tw))
        return out

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
    def _pack(self, x: torch.Tensor) -> tuple[torch.Tensor, int]:
        """(B, H, n) real -> (n_in, G·H) complex, time first. With the real-input trick two
        sequences of the same channel share one transform, ``z = u_{2g} + i·u_{2g+1}``
        (G = ceil(B/2)); without it ``z = u + 0i`` (G = B)."""
        b, h, length = x.shape
        in_len = self.block // 2 if self._in_half else self.block
        groups = -(-b // 2) if self.real_trick else b
        full = length == in_len and (b % 2 == 0 and self.real_trick)
        buf = (torch.empty if full else torch.zeros)(in_len, groups, h, 2, dtype=x.dtype,
                                                     device=x.device)
        if self.real_trick:
            buf[:length, :, :, 0] = x[0::2].permute(2, 0, 1)
            buf[:length, : b // 2, :, 1] = x[1::2].permute(2, 0, 1)
        else:
            buf[:length, :, :, 0] = x.permute(2, 0, 1)
        return torch.view_as_complex(buf).reshape(in_len, groups * h), groups

    def _unpack(self, y: torch.Tensor, b: int, h: int, length: int) -> torch.Tensor:
        """(n_out, G·H) complex -> (B, H, length) real (real part = even rows, imag = odd)."""
        n_out = y.shape[0]
        if self.real_trick:
            yr = torch.view_as_real(y.reshape(n_out, -1, h)).permute(1, 3, 2, 0)
            return yr.reshape(-1, h, n_out)[:b, :, :length]
        return y.real.reshape(n_out, b, h).permute(1, 2, 0)[..., :length].contiguous()

    def _transform_conv(self, x: torch.Tensor, spec: torch.Tensor, length: int) -> torch.Tensor:
        """x (B', H, n) real -> first ``length`` kept outputs (B', H, length)."""
        b, h, _ = x.shape
        stages = self._stages()
        z, groups = self._pack(x)
        zf = stages_forward(stages, z)                                # FFT(u) in Monarch layout
        yf = (zf.reshape(-1, groups, h) * spec[:, None, :]).reshape(zf.shape)   # ⊙ FFT(k)/N
        return self._unpack(stages_inverse(stages, yf), b, h, length)

    def _convolve(self, x: torch.Tensor, spec: torch.Tensor) -> torch.Tensor:
        return self._transform_conv(x, spec, x.shape[-1])

    def filter_spectrum(self, k: torch.Tensor) -> torch.Tensor:
        """FFT(k)/N in the Monarch layout the pipeline consumes, computed once per filter
        (reuse it across batches with :meth:`forward_spectrum`).

        k: (H, L_k) real, L_k <= block/2. Returns complex (N', H), N' = block·|kept|/N_p.
        """
        k = _check_real("k", k)
        if k.ndim != 2:
            raise ValueError(f"k must have shape (H, L), got {tuple(k.shape)}")
        if k.shape[-1] > self.block // 2:
            raise ValueError(f"k has length {k.shape[-1]}; at most {self.block // 2} for FFT "
                             f"size {self.block}")
        in_len = self.block // 2 if self._in_half else self.block
        kp = torch.zeros(in_len, k.shape[0], dtype=complex_dtype_for(self.dtype),
                         device=k.device)
        kp[: k.shape[-1]] = k.to(self.dtype).T
        spec = stages_forward(self._stages(), kp) / self.block
        if self._spec_mask is not None:
            spec = spec * self._spec_mask.to(device=spec.device)[:, None]
        return spec

    def forward_spectrum(self, u: torch.Tensor, k_f: torch.Tensor,
                         pregate: torch.Tensor | None = None,
                         postgate: torch.Tensor | None = None) -> torch.Tensor:
        """The convolution with a precomputed :meth:`filter_spectrum`. u: (B, H, L) -> (B, H, L)."""
        u = _check_real("u", u)
        if u.ndim != 3:
            raise ValueError(f"u must have shape (B, H, L), got {tuple(u.shape)}")
        if not isinstance(k_f, torch.Tensor) or k_f.ndim != 2 or k_f.shape[1] != u.shape[1]:
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

    def forward(self, u: torch.Tensor, k: torch.Tensor, pregate: torch.Tensor | None = None,
                postgate: torch.Tensor | None = None, *, in_gate: torch.Tensor | None = None,
                out_gate: torch.Tensor | None = None) -> torch.Tensor:
        u, k, pregate, postgate = self._prepare(u, k, pregate, postgate, in_gate, out_gate,
                                                self.seqlen // 2)
        if self.resolve_backend(u) == "triton":
            from .triton_kernel import monarch_conv_triton

            c = lambda t: None if t is None else t.contiguous()
            return monarch_conv_triton(c(u), c(k), c(pregate), c(postgate),
                                       fft_size=self.seqlen)
        return self._run(u, self.filter_spectrum(k), pregate, postgate)

    def resolve_backend(self, u: torch.Tensor) -> str:
        """``"torch"`` or ``"triton"``: what ``forward(u, ...)`` runs for this input (see
        ``backend`` in the class docstring). ``backend="triton"`` raises a clear error when Triton
        is missing or the size, dtype or device is unsupported."""
        if self.backend == "torch":
            return "torch"
        if self.backend == "auto" and u.device.type != "cuda":
            return "torch"                      # CPU results stay those of the torch path
        try:
            from . import triton_kernel
        except ImportError as err:
            if self.backend == "auto":
                return "torch"
            raise ImportError(f"backend='triton' needs the triton package ({err}); install "
                              f"triton or use backend='torch'") from err
        if self.backend == "auto":
            ok = triton_kernel.triton_supports(self.seqlen, u.dtype)
            return "triton" if ok else "torch"
        if u.dtype not in triton_kernel.TRITON_DTYPES:
            raise TypeError(f"backend='triton' takes u in float16, bfloat16 or float32, got "
                            f"{u.dtype}; use backend='torch'")
        triton_kernel.triton_factors(self.seqlen, u.dtype)     # ValueError naming the size
        if u.device.type != "cuda" and not triton_kernel.interpreting():
            raise ValueError(f"backend='triton' needs CUDA tensors (u is on {u.device}); on a "
                             f"CPU it runs only under Triton's interpreter (TRITON_INTERPRET=1)")
        return "triton"

    def extra_repr(self) -> str:
        return (f"seqlen={self.seqlen}, order={self.order}, factors={self.factors}, "
                f"real_trick={self.real_trick}, dtype={self.dtype}, backend={self.backend}")


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
        # on the second half, which is output block j. Segments are extra batch rows (they
        # share the channel's filter, so the real-input trick pairs them too).
        xp = F.pad(x, (nb, nseg * nb - length))
        seg = xp.unfold(-1, 2 * nb, nb).permute(0, 2, 1, 3).reshape(b * nseg, h, 2 * nb)
        y = self._transform_conv(seg, spec, nb)                  # (B·nseg, H, N′)
        return y.reshape(b, nseg, h, nb).permute(0, 2, 1, 3).reshape(b, h, -1)[..., :length]

    def extra_repr(self) -> str:
        return super().extra_repr() + f", filter_len={self.filter_len}, blockwise={self.blockwise}"


class FrequencySparseFFTConv(MonarchFFTConv):
    """Frequency-sparse convolution (§3.3), a low-pass as in the official ``sparse_conv.py``:
    FFT(k) is zeroed on whole blocks of the Monarch layout so that those rows of the last forward
    stage and columns of the first inverse stage are never computed (and the frequency-domain
    product shrinks alike).

    The blocks are indexed by the last stage's output digit ``t``, the most significant digit of
    the frequency (block width ``W = N/N_p`` bins); ``2c`` of its ``N_p`` values are kept,
    ``t ∈ {0..c−1} ∪ {N_p−c..N_p−1}``, ``c = round(keep_fraction·N_p/2)``, i.e. the low
    |frequencies|; ``kept_fraction = 2c/N_p`` is the realised keep. Inside the kept blocks the one
    bin ``N − c·W`` (whose mirror ``c·W`` lies in a dropped block) is zeroed too, so the mask is
    Hermitian and the output is exactly an rfft-domain low-pass:
    ``y = irfft(rfft(u_pad) ⊙ rfft(k_pad) ⊙ mask[:N/2+1])[:L]``, keeping rfft bins ``< c·W``.
    Both pipelines (``real_trick`` True or False) compute the same filter.

    ``mask`` (N,) bool over the full FFT in natural order is exposed; the reference
    :func:`frequency_sparse_reference` reproduces it with torch.fft.
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
        if order is None:
            order = best_order(seqlen)
        if isinstance(order, bool) or not isinstance(order, int) or \
                not 2 <= order <= min(4, int(math.log2(seqlen))):
            raise ValueError(f"order must be 2, 3 or 4 (<= log2 of the transform size "
                             f"{seqlen}); got {order!r}")
        flast = monarch_factors(seqlen, order)[-1]
        c = max(1, min(flast // 2, round(float(keep_fraction) * flast / 2)))
        keep = list(range(c)) + list(range(flast - c, flast))
        self._setup(seqlen=seqlen, block=seqlen, order=order, real_trick=real_trick, dtype=dtype,
                    in_half=True, out_second=False, keep_top=keep)
        self.keep_fraction = float(keep_fraction)
        self.kept_fraction = 2 * c / flast
        width = seqlen // flast
        freq = torch.arange(seqlen)
        mask = (freq < c * width) | (freq > seqlen - c * width)  # Hermitian low-pass
        if 2 * c == flast:
            mask[:] = True                                        # every block kept
        self.register_buffer("mask", mask, persistent=False)
        self._spec_mask = mask[self.layout_freq].to(self.dtype)   # zero the unpaired bin

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
