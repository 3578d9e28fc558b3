"""Cost model and timing for the honest CPU benchmark (spec, reproduction 2).

* :func:`monarch_conv_flops` counts the real floating-point operations our pipeline actually
  performs per sequence (8 flops per complex MAC; unfolded twiddles and the frequency-domain
  product as 6 flops per complex multiply): order p costs ≈ ``2·p·8·N·N^{1/p}`` per complex
  transform pair of size N, less where implicit padding applies, halved per sequence by the
  real-input trick (two sequences per transform).
* :func:`rfft_conv_flops` is the usual nominal count of an FFT convolution: ``2.5·N·log2 N`` per
  real FFT of size N (forward of u and inverse), plus ``6·(N/2+1)`` for the product; FFT(k) is
  precomputed for both methods.
* :func:`median_time` is ``torch.utils.benchmark.Timer(...).blocked_autorange`` (warm-up, then the
  median over blocks) with an explicit thread count that is restored afterwards.
* :func:`paired_median_times` times several functions in interleaved rounds (A, B, A, B, ...) and
  returns each one's median: on a shared machine whose load drifts, interleaving keeps the
  comparison fair where back-to-back ``blocked_autorange`` runs would not (optionally in a fresh
  random order per round, so no function always runs right after another). ``clock="thread"``
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
    "paired_times",
    "rfft_conv_flops",
    "time_against_ffts",
]


def monarch_conv_flops(module: MonarchFFTConv, length: int | None = None) -> float:
    """Real flops per (batch, channel) sequence of one ``forward_spectrum`` call of ``module``.

    Complex MACs count 8 flops, elementwise complex products 6. Per complex transform of size N:
    stage m costs ``(N/N_m)·out_m·in_m`` MACs each way (stage 1 reads N_1/2 inputs with implicit
    padding and its inverse writes N_1/2 outputs; the last stage has |kept| rows), unfolded
    twiddles N products each way, the spectrum product N' products. With the real-input trick
    one transform carries two sequences, so the count per sequence is halved. ``length`` is the
    sequence length L (default seqlen/2); it matters only for :class:`PartialFFTConv`, whose
    number of blocks is ceil(L / filter_len).
    """
    fac = module.factors
    n = module.transform_size
    kept = module._n_kept
    p = len(fac)
    flops = 0.0
    for m, f in enumerate(fac):
        cols = n // f
        if m == 0:
            fwd_in = f // 2 if module._in_half else f
            flops += 8.0 * cols * (f * fwd_in + (f // 2) * f)      # forward + kept inverse half
        else:
            rows = kept if m == p - 1 else f
            flops += 2 * 8.0 * cols * rows * f
            if not module._folded[m]:
                flops += 2 * 6.0 * n                              # twiddles, fwd + inv
    flops += 6.0 * (n // fac[-1]) * kept                          # ⊙ FFT(k) on the kept rows
    if module.real_trick:
        flops /= 2                                                # two sequences per transform
    if isinstance(module, PartialFFTConv) and module.blockwise:
        length = module.seqlen // 2 if length is None else length
        flops *= -(-length // module.filter_len)                  # one block transform per segment
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


def paired_times(fns: Sequence[Callable[[], object]], *, rounds: int = 5, number: int = 1,
                 num_threads: int | None = None, clock: str = "wall",
                 shuffle_seed: int | None = None) -> list[list[float]]:
    """Seconds per call of each of ``fns`` in each of ``rounds`` interleaved rounds (A, B, A, B,
    …) of ``number`` calls, after one warm-up call each: ``out[i][r]``. ``clock`` is ``"wall"``
    (``time.perf_counter``) or ``"thread"`` (``time.thread_time``, forces one thread).

    ``shuffle_seed``: run the functions of each round in a fresh random order (drawn from
    ``random.Random(shuffle_seed)``) instead of always A, B, C: with a fixed order one function
    always runs right after another (the baseline after the method, whose buffers evict its
    inputs from the cache), a bias that a random order spreads evenly over the functions."""
    import random
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
        rng = None if shuffle_seed is None else random.Random(shuffle_seed)
        for _ in range(rounds):
            order = list(range(len(fns)))
            if rng is not None:
                rng.shuffle(order)
            for i in order:
                fn = fns[i]
                t0 = now()
                for _ in range(number):
                    fn()
                samples[i].append((now() - t0) / number)
    finally:
        torch.set_num_threads(previous)
    return samples


def paired_median_times(fns: Sequence[Callable[[], object]], *, rounds: int = 5,
                        number: int = 1, num_threads: int | None = None,
                        clock: str = "wall", shuffle_seed: int | None = None) -> list[float]:
    """Median over the rounds of :func:`paired_times`, per function."""
    import statistics

    samples = paired_times(fns, rounds=rounds, number=number, num_threads=num_threads,
                           clock=clock, shuffle_seed=shuffle_seed)
    return [statistics.median(s) for s in samples]


def measure_best_orders(fft_sizes: Sequence[int], *, work: int = 2**20,
                        orders: Sequence[int] = (2, 3, 4), rounds: int = 5,
                        num_threads: int | None = None, clock: str = "wall",
                        seed: int = 0) -> list[dict]:
    """Time the default (real-input trick) Monarch convolution for each FFT size N (sequence
    length L = N/2) and order at fixed work per call (B·H·L = ``work`` real elements, B >= 2).
    Returns rows ``{"fft_size", "order", "ms"}``; :func:`.order_selection.best_order` uses the
    argmin. Orders whose factors would exceed 2048 are skipped (slower than higher orders by far).
    """
    gen = torch.Generator().manual_seed(seed)
    rows: list[dict] = []
    with torch.inference_mode():
        for n in fft_sizes:
            length = n // 2
            bh = max(2, work // length)
            h = max(1, min(bh // 2, 16))
            u = torch.randn(bh // h, h, length, generator=gen)
            k = torch.randn(h, length, generator=gen)
            candidates, fns = [], []
            for order in orders:
                if order > min(4, int(math.log2(n))) or max(_factors(n, order)) > 2048:
                    continue
                mod = MonarchFFTConv(n, order=order)
                spec = mod.filter_spectrum(k)
                candidates.append(order)
                fns.append(lambda mod=mod, spec=spec, u=u: mod.forward_spectrum(u, spec))
            times = paired_median_times(fns, rounds=rounds, num_threads=num_threads, clock=clock)
            for order, t in zip(candidates, times):
                rows.append({"fft_size": n, "order": order, "ms": 1e3 * t})
    return rows


def _factors(m: int, order: int) -> tuple[int, ...]:
    from .monarch_fft import monarch_factors

    return monarch_factors(m, order)


def time_against_ffts(lengths: Sequence[int], *, work: int, rounds: int,
                      make_method: Callable[[int], object] | None = None, seed: int = 0,
                      progress: Callable[..., None] | None = None,
                      null_arm: bool = False) -> list[dict]:
    """Causal convolution at fixed work per call (B·H·L = ``work``, float32, B >= 2, FFT(k)
    precomputed for all three): a method vs ``irfft(rfft(u) ⊙ K)`` (the strongest CPU baseline)
    vs complex ``ifft(fft(u) ⊙ K)`` (the official benchmark's baseline), timed in ``rounds``
    interleaved rounds of the calling thread's CPU time with one intra-op thread.

    ``make_method(fft_size)`` returns an object with ``filter_spectrum(k)`` and
    ``forward_spectrum(u, spec)`` (default: ``MonarchFFTConv(fft_size)``, its order picked by
    ``order=None``). Rows per length: medians (ms), per-round time ratios ``ratio_rfft`` /
    ``ratio_fft`` (lists, one per round), the output check against rfft and analytic flops.

    The functions run in a fresh random order in every round (seeded by ``seed``), so none of
    them always follows another. ``null_arm=True`` adds an A/A null: the rfft convolution
    itself, as a separate function timed in the same rounds, with its per-round ratio to the
    baseline in ``ratio_null`` and its median ratio in ``time_ratio_null_vs_rfft``. Identical
    work, so any bias of the timing protocol (or noise larger than its interval admits) shows
    up as a null ratio away from 1.
    """
    make_method = make_method or (lambda n: MonarchFFTConv(n))
    gen = torch.Generator().manual_seed(seed)
    rows = []
    with torch.inference_mode():
        for i, length in enumerate(lengths):
            n = 2 * length
            bh = max(2, work // length)
            h = max(1, min(bh // 2, 64))
            u = torch.randn(bh // h, h, length, generator=gen)
            k = torch.randn(h, length, generator=gen) * torch.exp(
                -3.0 * torch.arange(length) / length)
            kr, kc = torch.fft.rfft(k, n=n), torch.fft.fft(k, n=n)
            method = make_method(n)
            spec = method.filter_spectrum(k)

            def run_rfft(u=u, kr=kr, n=n, length=length):
                return torch.fft.irfft(torch.fft.rfft(u, n=n) * kr, n=n)[..., :length]

            def run_fft(u=u, kc=kc, n=n, length=length):
                return torch.fft.ifft(torch.fft.fft(u, n=n) * kc, n=n).real[..., :length]

            def run_method(method=method, spec=spec, u=u):
                return method.forward_spectrum(u, spec)

            def run_null(u=u, kr=kr, n=n, length=length):   # the baseline again (A/A null)
                return torch.fft.irfft(torch.fft.rfft(u, n=n) * kr, n=n)[..., :length]

            ref = run_rfft().double()
            err = float((run_method().double() - ref).abs().max() / ref.abs().max())
            fns = [run_method, run_rfft, run_fft]
            order_seed = seed * 1000 + i
            if null_arm:
                t_n, t_m, t_r, t_f = paired_times([run_null, *fns], rounds=rounds,
                                                  clock="thread", shuffle_seed=order_seed)
            else:
                t_m, t_r, t_f = paired_times(fns, rounds=rounds, clock="thread",
                                             shuffle_seed=order_seed)
            med = lambda xs: sorted(xs)[len(xs) // 2] if len(xs) % 2 else 0.5 * (
                sorted(xs)[len(xs) // 2 - 1] + sorted(xs)[len(xs) // 2])
            row = {"L": length, "N": n, "BH": bh, "order": getattr(method, "order", None),
                   "t_method_ms": 1e3 * med(t_m), "t_rfft_ms": 1e3 * med(t_r),
                   "t_fft_ms": 1e3 * med(t_f),
                   "ratio_rfft": [a / b for a, b in zip(t_m, t_r)],
                   "ratio_fft": [a / b for a, b in zip(t_m, t_f)], "check_err": err}
            row["time_ratio_vs_rfft"] = row["t_method_ms"] / row["t_rfft_ms"]
            row["time_ratio_vs_fft"] = row["t_method_ms"] / row["t_fft_ms"]
            if null_arm:
                row["t_null_ms"] = 1e3 * med(t_n)
                row["ratio_null"] = [a / b for a, b in zip(t_n, t_r)]
                row["time_ratio_null_vs_rfft"] = row["t_null_ms"] / row["t_rfft_ms"]
            if isinstance(method, MonarchFFTConv):
                fl_m, fl_r = monarch_conv_flops(method), rfft_conv_flops(n)
                row["flops_ratio"] = fl_m / fl_r
                row["flop_rate_ratio"] = (fl_m / med(t_m)) / (fl_r / med(t_r))
            rows.append(row)
            if progress is not None:
                progress((i + 1) / len(lengths), f"L={length}")
    return rows
