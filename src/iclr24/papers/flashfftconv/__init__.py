"""FlashFFTConv: Efficient Convolutions for Long Sequences with Tensor Cores (D. Y. Fu,
H. Kumbong, E. Nguyen, C. Ré; ICLR 2024; arXiv 2311.05908; official code
HazyResearch/flash-fft-conv).

What the paper does. Long-filter sequence models (Hyena, H3, M2-BERT, HyenaDNA) compute a
depthwise causal convolution ``y = u * k`` whose filter is as long as the sequence, by FFT:
``y = iFFT(FFT(u_pad) ⊙ FFT(k_pad))[:L]`` with FFT size N = 2L. FlashFFTConv rewrites every FFT
as an order-p Monarch (Cooley–Tukey four-step) decomposition — p dense DFT-matrix multiplies with
elementwise twiddles — so it runs on GPU tensor cores, fuses FFT, product and inverse FFT in one
kernel, and exploits real inputs (a half-size complex FFT), implicit zero padding and gating. Two
sparse variants skip blocks of the decomposition: partial convolutions (truncated filter, blockwise
over long inputs) and frequency-sparse convolutions (FFT(k) zeroed on whole Monarch blocks).

How the code maps to it.
- :mod:`.monarch_fft`: the order-p Monarch DFT (§3.1): :func:`monarch_factors`,
  :func:`monarch_dft_matrices`, :func:`monarch_fft` / :func:`monarch_ifft` (Monarch order out/in),
  :func:`monarch_order_to_natural` and :func:`monarch_permutation`.
- :mod:`.convolution`: :class:`MonarchFFTConv` (call-compatible with the official
  ``FlashFFTConv(seqlen, dtype)``: ``forward(u: (B,H,L), k: (H,L), pregate=None, postgate=None)``,
  ``seqlen`` = FFT size), with the real-input trick, implicit padding and gating;
  :class:`PartialFFTConv` and :class:`FrequencySparseFFTConv` (§3.3), both of which skip work;
  :func:`fft_conv` (functional); baselines :func:`fft_conv_reference` (rfft, the strongest CPU
  baseline), :func:`fft_conv_complex_reference` (the official benchmark's complex fft) and
  :func:`frequency_sparse_reference`.
- :mod:`.triton_kernel` (imported on demand, needs ``triton``): the fused GPU kernel
  :func:`~.triton_kernel.monarch_conv_triton` (order-2 Monarch FFT as ``tl.dot`` on
  fp16/bf16/fp32, ⊙ FFT(k), inverse, real-input trick and gates in one kernel per block of
  sequences), chosen by ``MonarchFFTConv(..., backend="auto")`` for CUDA inputs it supports;
  :func:`~.triton_kernel.gpu_throughput_table` times it on a GPU.
- :mod:`.order_selection`: ``order=None`` -> :func:`best_order`, a table measured on a CPU
  (how it was measured is in that module's docstring).
- :mod:`.synthetic_filters`: decaying-noise, smooth (Hyena-like) and white-noise filters.
- :mod:`.benchmark`: the FLOP model (:func:`monarch_conv_flops`, :func:`rfft_conv_flops`) and
  interleaved median timing (:func:`paired_median_times`, :func:`median_time`).
- ``claims.py``: ``exact`` (every order, with and without the real trick, float32 and float64,
  vs rfft convolution), ``cpu_throughput`` (time and FLOP-rate ratio vs rfft for L = 256…1M at fixed
  work per call), ``sparse_tradeoff`` (error vs skipped work for partial and frequency-sparse
  convolutions on smooth and white-noise filters).

What differs / is scaled down.
- No CUDA kernel, no kernel fusion, no tensor cores: every stage is a ``torch.matmul``/``bmm`` on
  the input's device (CPU BLAS here; the same code runs on CUDA tensors), computing in float32 or
  float64 (fp16/bf16 inputs and ``dtype=`` are accepted and computed in float32).
  ``cpu_throughput`` judges wall-clock speed as the paper does, single-threaded CPU time against
  ``torch.fft.rfft`` convolution; on a CPU Monarch is slower, which the verdict says.
- The CPU layout (:mod:`.monarch_stages`): the twiddles are folded into per-stage matrices (one
  GEMM, then one strided ``bmm`` per stage, no elementwise twiddle pass) and the real-input trick
  packs two real sequences of a channel into one complex transform of size N (the official
  kernels use a half-size complex transform with a Hermitian unpack instead). Against the
  previous mirror-gather pipeline this took 0.66 / 0.56 / 0.66 / 0.54 / 0.79 of its time at
  L = 256 / 1K / 4K / 16K / 64K (best order of each, one thread, thread CPU time). A batch of
  odd size B pads one zero sequence.
- Factor sizes are chosen by measured CPU speed (p = 2 up to FFT size 2^10, p = 3 for 2^11–2^12,
  p = 4 above), not the GPU's 16/32-wide tiles; any order 2–4 can be forced with ``order=``.
- Frequency-sparse convolution keeps whole blocks of the last Monarch stage, the low
  |frequencies| (the official ``sparse_conv.py`` low-pass), on either pipeline. Partial
  convolution uses overlap-save with FFT size 2N′. Backward passes come from autograd on the
  matmuls, not hand-written kernels.

Usage (a drop-in for ``flashfftconv.FlashFFTConv``)::

    import torch
    from iclr24.papers.flashfftconv import MonarchFFTConv
    conv = MonarchFFTConv(seqlen=2 * 4096)            # FFT size = 2L; order picked per length
    u, k = torch.randn(8, 64, 4096), torch.randn(64, 4096)
    y = conv(u, k)                                    # (8, 64, 4096), causal long convolution
    y = conv(u, k, pregate=torch.sigmoid(u), postgate=torch.tanh(u))   # gated (H3 / Hyena)
"""

from .benchmark import (
    measure_best_orders,
    median_time,
    monarch_conv_flops,
    paired_median_times,
    paired_times,
    rfft_conv_flops,
    time_against_ffts,
)
from .convolution import (
    MAX_FFT_SIZE,
    MIN_FFT_SIZE,
    FrequencySparseFFTConv,
    MonarchFFTConv,
    PartialFFTConv,
    fft_conv,
    fft_conv_complex_reference,
    fft_conv_reference,
    frequency_sparse_reference,
)
from .monarch_fft import (
    dft_matrix,
    monarch_dft_matrices,
    monarch_factors,
    monarch_fft,
    monarch_ifft,
    monarch_order_to_natural,
    monarch_permutation,
    natural_to_monarch_order,
    twiddle_factors,
)
from .order_selection import BEST_ORDER, best_order
from .synthetic_filters import decaying_noise_filter, smooth_filter, white_noise_filter

__all__ = [
    "BEST_ORDER",
    "MAX_FFT_SIZE",
    "MIN_FFT_SIZE",
    "FrequencySparseFFTConv",
    "MonarchFFTConv",
    "PartialFFTConv",
    "best_order",
    "decaying_noise_filter",
    "dft_matrix",
    "fft_conv",
    "fft_conv_complex_reference",
    "fft_conv_reference",
    "frequency_sparse_reference",
    "measure_best_orders",
    "median_time",
    "monarch_conv_flops",
    "monarch_dft_matrices",
    "monarch_factors",
    "monarch_fft",
    "monarch_ifft",
    "monarch_order_to_natural",
    "monarch_permutation",
    "natural_to_monarch_order",
    "paired_median_times",
    "paired_times",
    "rfft_conv_flops",
    "smooth_filter",
    "time_against_ffts",
    "twiddle_factors",
    "white_noise_filter",
]
