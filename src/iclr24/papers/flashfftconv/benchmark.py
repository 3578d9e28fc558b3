"""Cost model and timing for the honest CPU benchmark (spec, reproduction 2).

* :func:`monarch_conv_flops` counts the real floating-point operations our pipeline actually
  performs per sequence (matmul MACs as 2 flops per real MAC, 8 per complex MAC; twiddles and the
  frequency-domain product as 6 flops per complex multiply): order p costs ≈ ``p·8·M·M^{1/p}``
  per transform of size M, halved stages where implicit padding or the real trick apply.
* :func:`rfft_conv_flops` is the usual nominal count of an FFT convolution: ``2.5·N·log2 N`` per
  real FFT of size N (forward of u and inverse), plus ``6·(N/2+1)`` for the product; FFT(k) is
  precomputed for both methods.
* :func:`median_time` is ``torch.utils.benchmark.Timer(...).blocked_autorange`` (warm-up, then the
  median over blocks) with an explicit thread count that is restored afterwards.
* :func:`paired_median_times` times several functions in interleaved rounds (A, B, A, B, ...) and
  returns each one's median: on a shared machine whose load drifts, interleaving keeps the
  comparison fair where back-to-back ``blocked_autorange`` runs would not. ``clock="thread"``
  measures the calling thread's CPU time with one intra-op thread, which is insensitive to other
  processes preempting us (used to build the order table on a busy machine).
* :func:`measure_best_orders` times orders 2/3/4 per transform size at fixed work per call; its
  output is how :data:`.order_selection.BEST_ORDER` was made (and can be re-made on your machine).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from .convolution import MonarchFFTConv, PartialFFTConv

__all__ = [
    "measure_best_orders",
    "median_time",
    "monarch_conv_flops",
    "paired_median_times",
    "rfft_conv_flops",
]


def monarch_conv_flops(module: MonarchFFTConv, length: int | None = None) -> float:
    """Real flops per (batch, channel) sequence of one ``forward_spectrum`` call of ``module``.

    ``length`` is the sequence length L (default seqlen/2); it matters only for
    :class:`PartialFFTConv`, whose number of blocks is ceil(L / filter_len).
    """
    fac = module.factors
    m = module.transform_size
    f0, flast = fac[0], fac[-1]
    kept = module._n_kept
    cols = f0 // 2 if module._in_half else f0
    rest0 = m // f0
    flops = 0.0
    # forward stage 0
    if module.real_trick:
        flops += 8.0 * f0 * cols * rest0                       # complex F0[:, cols] · z
    else:
        flops += 2.0 * (2 * f0) * cols * rest0                 # real [ReF; ImF] · x
    for f in fac[1:-1]:
        flops += 2 * 8.0 * m * f                               # middle stages, fwd + inv
    flops += 2 * 8.0 * (m // flast) * flast * kept             # last fwd + first inv stage
    flops += 2 * 6.0 * m * (len(fac) - 1)                      # twiddles, fwd + inv
    if module.real_trick:
        flops += 14.0 * (m // flast) * kept                    # P ⊙ Z + Q ⊙ conj(Z_m)
    else:
        flops += 6.0 * (m // flast) * kept                     # X ⊙ K on kept blocks
    # inverse stage 0: half the rows (only one output half is kept)
    if module.real_trick:
        flops += 8.0 * (f0 // 2) * f0 * rest0
    else:
        flops += 2.0 * (f0 // 2) * (2 * f0) * rest0
    if isinstance(module, PartialFFTConv) and module.blockwise:
        length = module.seqlen // 2 if length is None else length
        flops *= -(-length // module.filter_len)               # one block transform per segment
    return flops


def rfft_conv_flops(fft_size: int) -> float:
    """Nominal flops per sequence of ``irfft(rfft(u, n=N) ⊙ K, n=N)``: 2·2.5·N·log2 N + 6·(N/2+1)."""
    if fft_size < 2:
        raise ValueError(f"fft_size must be >= 2, got {fft_size}")
    return 2 * 2.5 * fft_size * math.log2(fft_size) + 6.0 * (fft_size // 2 + 1)


def median_time(fn: Callable[[], object], *, min_run_time: float = 0.2,
                num_threads: int | None = None) -> float:
    """Median seconds per call of ``fn`` (``blocked_autorange`` after one warm-up call).

    ``num_threads`` pins torch's intra-op threads during the measurement and restores them.
    """
    from torch.utils import benchmark

    threads = torch.get_num_threads() if num_threads is None else int(num_threads)
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(threads)
        fn()
        timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads)
        return float(timer.blocked_autorange(min_run_time=min_run_time).median)
    finally:
        torch.set_num_threads(previous)


def paired_median_times(fns: Sequence[Callable[[], object]], *, rounds: int = 5,
                        number: int = 1, num_threads: int | None = None,
                        clock: str = "wall") -> list[float]:
    """Median seconds per call of each of ``fns``, timed in ``rounds`` interleaved rounds of
    ``number`` calls each, after one warm-up call each. ``clock`` is ``"wall"``
    (``time.perf_counter``) or ``"thread"`` (``time.thread_time``, forces one thread)."""
    import statistics
    import time

    if clock not in ("wall", "thread"):
        raise ValueError(f"clock must be 'wall' or 'thread', got {clock!r}")
    if rounds < 1 or number < 1:
        raise ValueError(f"rounds and number must be >= 1, got {rounds}, {number}")
    now = time.perf_counter if clock == "wall" else time.thread_time
    if clock == "thread":
        num_threads = 1
    previous = torch.get_num_threads()
    samples: list[list[float]] = [[] for _ in fns]
    try:
        if num_threads is not None:
            torch.set_num_threads(int(num_threads))
        for fn in fns:
            fn()
        for _ in range(rounds):
            for i, fn in enumerate(fns):
                t0 = now()
                for _ in range(number):
                    fn()
                samples[i].append((now() - t0) / number)
    finally:
        torch.set_num_threads(previous)
    return [statistics.median(s) for s in samples]


def measure_best_orders(transform_sizes: Sequence[int], *, work: int = 2**20,
                        orders: Sequence[int] = (2, 3, 4), rounds: int = 5,
                        num_threads: int | None = None, clock: str = "wall",
                        seed: int = 0) -> list[dict]:
    """Time the real-trick Monarch convolution for each transform size M (FFT size 2M) and order
    at fixed work per call (B·H·L = ``work`` real elements, L = M). Returns rows
    ``{"transform_size", "order", "ms"}``; :func:`.order_selection.best_order` uses the argmin.
    Orders whose factors would exceed 2048 are skipped (slower than higher orders by far).
    """
    gen = torch.Generator().manual_seed(seed)
    rows: list[dict] = []
    with torch.inference_mode():
        for m in transform_sizes:
            length = m
            bh = max(1, work // length)
            h = min(bh, 16)
            u = torch.randn(bh // h, h, length, generator=gen)
            k = torch.randn(h, length, generator=gen)
            candidates, fns = [], []
            for order in orders:
                if order > min(4, int(math.log2(m))) or max(_factors(m, order)) > 2048:
                    continue
                mod = MonarchFFTConv(2 * m, order=order, real_trick=True)
                spec = mod.filter_spectrum(k)
                candidates.append(order)
                fns.append(lambda mod=mod, spec=spec, u=u: mod.forward_spectrum(u, spec))
            times = paired_median_times(fns, rounds=rounds, num_threads=num_threads, clock=clock)
            for order, t in zip(candidates, times):
                rows.append({"transform_size": m, "order": order, "ms": 1e3 * t})
    return rows


def _factors(m: int, order: int) -> tuple[int, ...]:
    from .monarch_fft import monarch_factors

    return monarch_factors(m, order)
