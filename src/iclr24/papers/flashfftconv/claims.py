"""FlashFFTConv claims: exactness, the honest CPU throughput benchmark, sparse trade-offs."""

from __future__ import annotations

import math
import statistics

import numpy as np
import torch

from iclr24.claims import Estimate, Measurement, Scale, claim, seed_metric, sizes

from .benchmark import monarch_conv_flops, paired_times, time_against_ffts
from .convolution import (
    FrequencySparseFFTConv,
    MonarchFFTConv,
    PartialFFTConv,
    fft_conv_reference,
)
from .monarch_fft import (
    dft_matrix,
    monarch_factors,
    monarch_fft,
    monarch_ifft,
    monarch_order_to_natural,
)
from .synthetic_filters import decaying_noise_filter, smooth_filter, white_noise_filter

# README H100 table (gated conv, B·H = 64×768): PyTorch / FlashFFTConv speed-up by FFT size N.
_PAPER_GPU_SPEEDUP = {256: 5.64, 1024: 7.93, 4096: 6.64, 8192: 5.42, 16384: 2.45, 32768: 3.22,
                      1048576: 1.74, 4194304: 1.30}


def _rel_err(y: torch.Tensor, ref: torch.Tensor) -> float:
    """max |y − ref| / max |ref| (the spec's exactness metric)."""
    return float((y.double() - ref).abs().max() / ref.abs().max())


def _rel_l2(y: torch.Tensor, ref: torch.Tensor) -> float:
    return float(torch.linalg.vector_norm(y.double() - ref) / torch.linalg.vector_norm(ref))


def _valid_orders(transform_size: int) -> list[int]:
    return [p for p in (2, 3, 4) if p <= min(4, int(math.log2(transform_size)))]


def _figure():
    from matplotlib.figure import Figure

    return Figure(figsize=(6.4, 4.0), layout="constrained")


# ---------------------------------------------------------------------------------------- exact
_NULL_FFT_SIZE = 2**10   # FFT size of exact's null arm (order 2, factors 32 x 32)


def _twiddle_free(n: int, dtype: torch.dtype) -> MonarchFFTConv:
    """The null arm of :func:`exact`: an order-2 Monarch convolution whose second stage is the
    plain DFT ``F_{N_2}``, i.e. the Cooley–Tukey twiddles ``ω_N^{k1·n2}`` dropped. It has the
    same shapes, stages and cost as the real module but is not the DFT."""
    mod = MonarchFFTConv(n, order=2, dtype=dtype)
    if not mod._folded[1]:
        raise RuntimeError(f"the null arm expects folded twiddles at N = {n}")
    f = dft_matrix(mod.factors[1], mod.fwd_mat_1.dtype)
    mod.fwd_mat_1 = f.expand_as(mod.fwd_mat_1).contiguous()
    mod.inv_mat_1 = f.conj().T.expand_as(mod.inv_mat_1).contiguous()
    return mod


@claim(
    rule="rel_err_f32 <= 1e-5 and rel_err_f64 <= 1e-12",
    control="null_rel_err_f32 > 1e-5 and null_rel_err_f64 > 1e-12",
    paper="§3 / Alg. 1: FlashFFTConv computes the exact FFT convolution (no approximation); the "
          "Monarch decomposition is an exact factorization of the DFT matrix.",
    against=("float64 torch.fft.rfft convolution (torch.fft.fft for the DFT check); torch's "
             "float32 rfft convolution error reported for scale; null arm: the same Monarch "
             "convolution with the twiddles dropped"),
)
def exact(scale: Scale, seed: int, progress=None) -> Measurement:
    """Monarch FFT convolution (orders 2, 3, 4; with and without the real-input trick; float32
    and float64) against rfft convolution computed in float64, for FFT sizes N = 2^8 … (2^14
    smoke, 2^20 small). Also the natural-order DFT against ``torch.fft.fft`` and the inverse
    round trip. Data: u ~ N(0, 1), Hyena-style decaying filter randn·exp(−α_h t/L).

    A closed-form check, not a comparison with a baseline: the exact answer is known (computed
    in float64), the metric is the worst error over every size, order and option, and the
    tolerances are float32's and float64's rounding levels, so no interval over seeds is formed.
    Fails when any configuration misses its tolerance (a wrong permutation, twiddle, padding or
    Hermitian index gives errors of order 1). Control: the null arm -- the same order-2
    convolution with the twiddles dropped (:func:`_twiddle_free`, N = 2^10), run on the same
    kind of data in the same measurement -- must miss both tolerances, showing that the data and
    the metric can tell a near-miss factorization from the DFT."""
    progress = progress or (lambda *a, **k: None)
    fft_sizes = sizes(scale, smoke=[2**8, 2**10, 2**12, 2**14],
                      small=[2**e for e in range(8, 21)])
    dft_max = sizes(scale, smoke=2**14, small=2**18)
    gen = torch.Generator().manual_seed(seed)
    worst = {torch.float32: 0.0, torch.float64: 0.0}
    dft_err = {torch.float32: 0.0, torch.float64: 0.0}
    trip_err = {torch.float32: 0.0, torch.float64: 0.0}
    rfft32_err = 0.0
    rows, n_configs = [], 0
    for i, n in enumerate(fft_sizes):
        length = n // 2
        b, h = (2, 2) if n <= 2**16 else (1, 2)
        u = torch.randn(b, h, length, generator=gen, dtype=torch.float64)
        k = decaying_noise_filter(h, length, gen)
        ref = fft_conv_reference(u, k)                                  # float64 rfft
        base = _rel_err(fft_conv_reference(u.float(), k.float()), ref)  # the baseline's own error
        rfft32_err = max(rfft32_err, base)
        row = {"N": n, "L": length, "rfft_f32_err": base}
        for dtype in (torch.float32, torch.float64):
            for real_trick in (True, False):
                m = n
                for order in _valid_orders(m):
                    mod = MonarchFFTConv(n, order=order, real_trick=real_trick, dtype=dtype)
                    with torch.inference_mode():
                        err = _rel_err(mod(u.to(dtype), k.to(dtype)), ref)
                    worst[dtype] = max(worst[dtype], err)
                    tag = "f32" if dtype == torch.float32 else "f64"
                    key = f"max_err_{tag}"
                    row[key] = max(row.get(key, 0.0), err)
                    n_configs += 1
            if n <= dft_max:                                            # natural-order DFT check
                x = torch.randn(1, n, generator=gen, dtype=torch.float64)
                x = torch.complex(x, torch.randn(1, n, generator=gen, dtype=torch.float64))
                ref_f = torch.fft.fft(x)
                for order in _valid_orders(n):
                    fac = monarch_factors(n, order)
                    xd = x.to(torch.complex64 if dtype == torch.float32 else torch.complex128)
                    with torch.inference_mode():
                        X = monarch_fft(xd, fac)
                        e = _rel_err(torch.view_as_real(monarch_order_to_natural(X, fac)),
                                     torch.view_as_real(ref_f))
                        r = _rel_err(torch.view_as_real(monarch_ifft(X, fac)),
                                     torch.view_as_real(x))
                    dft_err[dtype] = max(dft_err[dtype], e)
                    trip_err[dtype] = max(trip_err[dtype], r)
        rows.append(row)
        progress((i + 1) / len(fft_sizes), f"N={n}")
    null_err = {}
    length = _NULL_FFT_SIZE // 2
    u = torch.randn(2, 2, length, generator=gen, dtype=torch.float64)
    k = decaying_noise_filter(2, length, gen)
    ref = fft_conv_reference(u, k)
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        with torch.inference_mode():
            null_err[tag] = _rel_err(_twiddle_free(_NULL_FFT_SIZE, dtype)(u.to(dtype),
                                                                          k.to(dtype)), ref)
    fig = _figure()
    ax = fig.add_subplot()
    ns = [r["N"] for r in rows]
    ax.loglog(ns, [r["max_err_f32"] for r in rows], "o-", base=2, label="Monarch float32")
    ax.loglog(ns, [r["max_err_f64"] for r in rows], "s-", base=2, label="Monarch float64")
    ax.loglog(ns, [r["rfft_f32_err"] for r in rows], "x--", base=2, label="torch rfft float32")
    ax.axhline(1e-5, color="gray", lw=0.8, ls=":")
    ax.axhline(1e-12, color="gray", lw=0.8, ls=":")
    ax.set_xlabel("FFT size N (= 2L)")
    ax.set_ylabel("max |y − y_ref| / max |y_ref|")
    ax.set_title("Exactness vs float64 rfft convolution (worst over orders 2–4, ± real trick)")
    ax.legend()
    return Measurement(
        metrics={
            "rel_err_f32": worst[torch.float32],
            "rel_err_f64": worst[torch.float64],
            "rfft_rel_err_f32": rfft32_err,
            "dft_err_f32": dft_err[torch.float32],
            "dft_err_f64": dft_err[torch.float64],
            "roundtrip_err_f32": trip_err[torch.float32],
            "roundtrip_err_f64": trip_err[torch.float64],
            "null_rel_err_f32": null_err["f32"],
            "null_rel_err_f64": null_err["f64"],
            "n_configs": n_configs,
            "max_fft_size": max(fft_sizes),
        },
        figure=fig,
        tables={"error_by_size": rows},
        notes=("Errors are the worst over orders 2/3/4 with and without the real-input trick, "
               "against rfft convolution computed in float64; rfft_rel_err_f32 is torch's own "
               "float32 rfft convolution against the same reference, for scale. B·H = 4 up to "
               "N = 2^16, 2 above (to fit the budget). null_rel_err_*: the null arm, order 2 "
               f"at N = {_NULL_FFT_SIZE} with the twiddles dropped, against the same kind of "
               "reference (it must miss the tolerances for the verdict to mean anything)."),
    )


# ------------------------------------------------------------------------------- cpu_throughput
def _log_ratio_estimate(rows: list[dict], key: str) -> Estimate:
    """Geometric mean over lengths of the method/baseline time ratio, with a t interval over
    the timing rounds (round r's ratios at every length form one replicate)."""
    per_round = np.log(np.array([r[key] for r in rows])).mean(axis=0)   # (rounds,)
    e = Estimate.mean_of(per_round)
    return Estimate(math.exp(e.value), math.exp(e.low), math.exp(e.high), e.n, e.confidence,
                    "t over timing rounds, geometric mean over lengths")


@claim(
    rule="time_ratio_vs_rfft < 1",
    control=("max_check_err <= 1e-4 and (time_ratio_vs_rfft < null_time_ratio_vs_rfft "
             "or time_ratio_vs_rfft > null_time_ratio_vs_rfft)"),
    paper="Up to 7.93x faster than PyTorch FFT convolution on H100 (README: 5.64x at N=256, "
          "7.93x at 1K, 6.64x at 4K, 5.42x at 8K, 2.45x at 16K, 3.22x at 32K, 1.74x at 1M), "
          "faster at every length of that table. CPU analogue judged here: the Monarch module "
          "(its default order) takes less time than torch.fft.rfft convolution, geometric mean "
          "over L = 256…1M, single-threaded CPU time, the whole 95% interval over timing rounds "
          "below 1. The speed-up comes from tensor cores, which a CPU lacks.",
    paper_numbers={"speedup_max": 7.93},
    against=("torch.fft rfft/irfft convolution with precomputed FFT(k) (judged) and complex "
             "fft/ifft convolution, same work, one thread; null arm: the rfft convolution "
             "timed again as a separate function in the same rounds (A/A)"),
)
def cpu_throughput(scale: Scale, seed: int, progress=None) -> Measurement:
    """Causal convolution at fixed work per call (B·H·L = 2^18 smoke / 2^21 small, float32,
    FFT(k) precomputed for all): the Monarch module with ``order=None`` vs ``irfft(rfft(u) ⊙ K)``
    and vs the official benchmark's complex ``ifft(fft(u) ⊙ K)``, timed in interleaved rounds of
    thread CPU time with one intra-op thread (:func:`.benchmark.time_against_ffts`). The FLOP
    rate is a diagnostic only: it rewards doing more work.

    Decides on the paper's terms (time): the geometric mean over lengths of t_monarch / t_rfft,
    with a 95% t interval over the timing rounds (5 at small). Fails when the whole interval is
    at or above 1 (Monarch no faster than rfft), holds when it is wholly below 1.
    The functions run in a fresh random order in each round, so the baseline does not always
    follow the method. Control (the test bed can tell): the outputs agree with rfft to 1e-4
    before timing (a method that computes less or something else cannot win), and the method's
    interval is separated from that of an A/A null -- the rfft convolution timed again as a
    separate function in the same rounds, whose true ratio is 1. Where the two overlap, the
    protocol cannot tell the method from rfft against itself, and a ratio below 1 would mean
    nothing (on this shared machine the A/A null's interval has excluded 1 by ~3%, so a
    method within a few percent of rfft is left inconclusive rather than judged)."""
    lengths = sizes(scale, smoke=[256, 4096], small=[2**e for e in range(8, 21)])
    work = sizes(scale, smoke=2**18, small=2**21)
    rounds = sizes(scale, smoke=3, small=5)
    rows = time_against_ffts(lengths, work=work, rounds=rounds, seed=seed, progress=progress,
                             null_arm=True)
    vs_rfft = _log_ratio_estimate(rows, "ratio_rfft")
    vs_fft = _log_ratio_estimate(rows, "ratio_fft")
    vs_null = _log_ratio_estimate(rows, "ratio_null")
    tr = [r["time_ratio_vs_rfft"] for r in rows]
    tf = [r["time_ratio_vs_fft"] for r in rows]
    fr = sorted(r["flop_rate_ratio"] for r in rows)
    table = [{key: (round(v, 4) if isinstance(v, float) else v) for key, v in r.items()
              if key not in ("ratio_rfft", "ratio_fft", "ratio_null")}
             | {"paper_gpu_speedup": _PAPER_GPU_SPEEDUP.get(r["N"])} for r in rows]
    fig = _figure()
    ax = fig.add_subplot()
    ls = [r["L"] for r in rows]
    ax.semilogx(ls, tr, "o-", base=2, label="t_monarch / t_rfft")
    ax.semilogx(ls, tf, "s-", base=2, label="t_monarch / t_fft (complex, official baseline)")
    ax.semilogx(ls, [r["time_ratio_null_vs_rfft"] for r in rows], "^:", base=2,
                label="A/A null: t_rfft (again) / t_rfft")
    ax.semilogx(ls, [r["flop_rate_ratio"] for r in rows], "x:", base=2,
                label="FLOP-rate ratio (diagnostic)")
    ax.axhline(1.0, color="gray", lw=0.8, ls="--", label="verdict: time ratio < 1")
    ax.set_xlabel("sequence length L (FFT size 2L)")
    ax.set_ylabel("ratio")
    ax.set_title("Monarch FFT conv vs torch FFT convs, CPU, 1 thread (CPU time)")
    ax.legend(fontsize=8)
    return Measurement(
        metrics={
            "time_ratio_vs_rfft": vs_rfft,
            "time_ratio_vs_fft": vs_fft,
            "null_time_ratio_vs_rfft": vs_null,
            "time_ratio_vs_rfft_min": min(tr),
            "time_ratio_vs_rfft_max": max(tr),
            "time_ratio_vs_fft_min": min(tf),
            "n_lengths_faster_than_rfft": sum(t < 1.0 for t in tr),
            "n_lengths_faster_than_fft": sum(t < 1.0 for t in tf),
            "speedup_max": 1.0 / min(tr),
            "flop_rate_ratio_median": fr[len(fr) // 2],
            "max_check_err": max(r["check_err"] for r in rows),
            "threads": 1,
            "work_per_call": work,
            "rounds": rounds,
        },
        figure=fig,
        tables={"time_by_length": table},
        notes=("Thread CPU time of the calling thread with torch.set_num_threads(1) (two "
               "threads on this shared 2-core machine are pathological), medians of "
               f"{rounds} interleaved rounds (A/A null, method, rfft, fft in a random order "
               "per round), float32, B >= 2 "
               "(the real-input trick pairs two sequences of a channel per transform). "
               "time_ratio_vs_* = geometric mean over lengths with a t interval over rounds; "
               "null_time_ratio_vs_rfft is the same for the rfft convolution timed again as a "
               "separate function (A/A null, ~1 on a fair protocol). "
               f"Monarch was faster than rfft at {sum(t < 1.0 for t in tr)} of {len(rows)} "
               f"lengths and faster than the complex fft at {sum(t < 1.0 for t in tf)}. The "
               "paper's speed-ups are H100 tensor-core results (by FFT size N), shown beside, "
               "not judged. FLOP rates (our exact count vs the nominal 2.5·N·log2 N of the real "
               "FFT) are a diagnostic: a method doing more flops in the same time scores higher, "
               "so they cannot decide a speed claim."),
    )


# ------------------------------------------------------------------------------ sparse_tradeoff
def _sparse_errors(length: int, seed: int) -> list[dict]:
    """Relative L2 error vs the exact float64 dense convolution of partial (N′ = L/2 … L/16
    taps) and frequency-sparse (keep 0.75 … 0.125) convolutions, smooth and white filters."""
    gen = torch.Generator().manual_seed(seed)
    n = 2 * length
    b, h = 2, 8
    u = torch.randn(b, h, length, generator=gen, dtype=torch.float64)
    filters = {"smooth": smooth_filter(h, length, gen),
               "white": white_noise_filter(h, length, gen)}
    rows = []
    with torch.inference_mode():
        for name, k in filters.items():
            dense = fft_conv_reference(u, k)
            for div in (2, 4, 8, 16):
                mod = PartialFFTConv(n, length // div, dtype=torch.float64)
                rows.append({"seed": seed, "variant": "partial", "filter": name,
                             "kept_fraction": 1 / div, "rel_l2_err": _rel_l2(mod(u, k), dense)})
            for keep in (0.75, 0.5, 0.25, 0.125):
                mod = FrequencySparseFFTConv(n, keep, dtype=torch.float64)   # low-pass
                rows.append({"seed": seed, "variant": "freq_sparse", "filter": name,
                             "kept_fraction": mod.kept_fraction,
                             "rel_l2_err": _rel_l2(mod(u, k), dense)})
    return rows


@claim(
    rule=("freq_sparse_time_ratio_keep50 <= 0.8 and freq_sparse_err_smooth_keep50 <= 0.05 "
          "and partial_err_smooth <= 0.05"),
    control=("null_time_ratio_keep100 > 0.8 and freq_sparse_err_white_keep50 > 0.05 "
             "and partial_err_white > 0.05"),
    paper="§3.3: partial convolutions (filter truncated to N′ taps) and frequency-sparse "
          "convolutions (FFT(k) zeroed on Monarch blocks) skip matmul blocks; frequency-sparse "
          "speeds up pretrained models while keeping quality. Spec: error < 5% for decaying "
          "(smooth) filters, large for white-noise filters; frequency-sparse at keep 0.5 should "
          "take <= 0.8 of dense Monarch time.",
    against=("the dense Monarch module (time) and the exact float64 dense convolution (error); "
             "null arms: the frequency-sparse module with every block kept (time) and "
             "white-noise filters (error)"),
)
def sparse_tradeoff(scale: Scale, seed: int, progress=None) -> Measurement:
    """Error (relative L2 vs the exact dense convolution) against kept fraction for partial
    (N′ = L/2 … L/16 taps) and frequency-sparse (keep 0.75 … 0.125 of frequencies) convolutions,
    on smooth Hyena-like filters and on white-noise filters; and time of frequency-sparse
    (keep 0.5, 0.25) vs the same pipeline dense, and of partial (N′ = N/8) vs dense Monarch.

    Rule: at keep 0.5 the frequency-sparse module takes <= 0.8 of the dense module's time (the
    geometric mean over the timed lengths of each interleaved round's ratio, a 95% t interval
    over 7 rounds at small; thread CPU time, one thread, a random order per round), and on
    smooth filters both the low-pass at keep 0.5 and the partial convolution at N′ = L/4 stay
    within 5% relative error (mean over 3 seeds at small, t interval). Fails when the sparse
    module is not that much faster or an error is above 5%.
    Control (the test bed can tell): the null arm for time -- the same frequency-sparse module
    with every block kept (keep 1.0: the skipping switched off), timed in the same rounds --
    is shown not to pass (its interval above 0.8); the null arm for error -- white-noise
    filters, whose energy is spread over every tap and frequency -- misses the 5% level for
    both variants, so the error metric can see what skipping removes."""
    progress = progress or (lambda *a, **k: None)
    err_len = sizes(scale, smoke=4096, small=16384)
    n_seeds = sizes(scale, smoke=1, small=3)
    time_lengths = sizes(scale, smoke=[4096], small=[1024, 4096])
    work = sizes(scale, smoke=2**20, small=2**22)
    rounds = sizes(scale, smoke=3, small=7)
    err_rows = []
    for s in range(n_seeds):
        err_rows += _sparse_errors(err_len, seed + s)
        progress(0.3 * (s + 1) / n_seeds, f"errors, seed {seed + s}")

    def errs(variant, name, frac):
        return [r["rel_l2_err"] for r in err_rows if r["variant"] == variant
                and r["filter"] == name and abs(r["kept_fraction"] - frac) < 1e-9]

    def err(variant, name, frac):
        return seed_metric(errs(variant, name, frac))

    gen = torch.Generator().manual_seed(seed)
    time_rows, samples = [], []
    for i, length in enumerate(time_lengths):
        nn_ = 2 * length
        bh = max(2, work // length)
        hh = min(bh // 2, 16)
        ut = torch.randn(bh // hh, hh, length, generator=gen)
        kt = smooth_filter(hh, length, gen).float()
        mods = {
            "dense_default": MonarchFFTConv(nn_),
            "freq_sparse_50": FrequencySparseFFTConv(nn_, 0.5),
            "freq_sparse_25": FrequencySparseFFTConv(nn_, 0.25),
            "partial_N8": PartialFFTConv(nn_, nn_ // 8),
            "null_keep100": FrequencySparseFFTConv(nn_, 1.0),   # skipping switched off
        }
        with torch.inference_mode():
            specs = {key: m.filter_spectrum(kt) for key, m in mods.items()}
            fns = [lambda m=m, s=specs[key], ut=ut: m.forward_spectrum(ut, s)
                   for key, m in mods.items()]
            per_round = dict(zip(mods, paired_times(fns, rounds=rounds, clock="thread",
                                                    shuffle_seed=seed * 1000 + i)))
        times = {key: statistics.median(ts) for key, ts in per_round.items()}
        dense = per_round["dense_default"]

        def ratios(key, per_round=per_round, dense=dense):
            return [a / b for a, b in zip(per_round[key], dense)]

        samples.append({"keep50": ratios("freq_sparse_50"), "keep25": ratios("freq_sparse_25"),
                        "partial": ratios("partial_N8"), "null": ratios("null_keep100")})
        flops = {key: monarch_conv_flops(m, length) for key, m in mods.items()}
        time_rows.append({
            "L": length, "BH": bh, "order": mods["dense_default"].order,
            "factors": str(mods["dense_default"].factors),
            **{f"t_{key}_ms": 1e3 * t for key, t in times.items()},
            "time_ratio_keep50": times["freq_sparse_50"] / times["dense_default"],
            "time_ratio_keep25": times["freq_sparse_25"] / times["dense_default"],
            "flops_ratio_keep50": flops["freq_sparse_50"] / flops["dense_default"],
            "flops_ratio_keep25": flops["freq_sparse_25"] / flops["dense_default"],
            "time_ratio_partial": times["partial_N8"] / times["dense_default"],
            "flops_ratio_partial": flops["partial_N8"] / flops["dense_default"],
            "time_ratio_null_keep100": times["null_keep100"] / times["dense_default"],
        })
        progress(0.3 + 0.7 * (i + 1) / len(time_lengths), f"timing L={length}")
    fig = _figure()
    ax = fig.add_subplot()
    styles = {"partial": "o", "freq_sparse": "s"}
    for variant, marker in styles.items():
        for name, ls in (("smooth", "-"), ("white", "--")):
            fracs = sorted({r["kept_fraction"] for r in err_rows if r["variant"] == variant})
            ax.loglog(fracs, [float(np.mean(errs(variant, name, f))) for f in fracs],
                      marker + ls, base=2, label=f"{variant}, {name} filter")
    ax.axhline(0.05, color="gray", lw=0.8, ls=":")
    ax.set_xlabel("kept fraction (filter taps for partial, frequencies for freq-sparse)")
    ax.set_ylabel("relative L2 error vs dense conv")
    ax.set_title(f"Sparse convolutions: error vs kept work (L = {err_len}, "
                 f"mean of {n_seeds} seed{'s' if n_seeds > 1 else ''})")
    ax.legend(fontsize=8)
    return Measurement(
        metrics={
            "freq_sparse_time_ratio_keep50": _log_ratio_estimate(samples, "keep50"),
            "freq_sparse_time_ratio_keep25": _log_ratio_estimate(samples, "keep25"),
            "null_time_ratio_keep100": _log_ratio_estimate(samples, "null"),
            "freq_sparse_flops_ratio_keep50": max(r["flops_ratio_keep50"] for r in time_rows),
            "partial_time_ratio": _log_ratio_estimate(samples, "partial"),
            "partial_flops_ratio": max(r["flops_ratio_partial"] for r in time_rows),
            "freq_sparse_err_smooth_keep50": err("freq_sparse", "smooth", 0.5),
            "freq_sparse_err_white_keep50": err("freq_sparse", "white", 0.5),
            "freq_sparse_err_smooth_keep25": err("freq_sparse", "smooth", 0.25),
            "freq_sparse_err_white_keep25": err("freq_sparse", "white", 0.25),
            "partial_err_smooth": err("partial", "smooth", 0.25),
            "partial_err_white": err("partial", "white", 0.25),
            "n_seeds": n_seeds,
            "rounds": rounds,
            "threads": 1,
        },
        figure=fig,
        tables={"error_vs_kept_fraction": err_rows, "timing": time_rows},
        notes=("Errors: relative L2 vs the exact dense convolution (float64), partial at "
               "N′ = L/4 = N/8 taps; frequency-sparse keeps whole Monarch blocks of the low "
               "|frequencies| (the official sparse_conv.py low-pass; one unpaired bin is zeroed "
               f"so the mask is Hermitian); mean over {n_seeds} seed(s) (each: its own input "
               "and filters), with a t interval when there are several. "
               "Times: thread CPU time with one intra-op thread, interleaved rounds in a random "
               "order per round; a time "
               "ratio metric is the geometric mean over the timed lengths of each round's ratio, "
               f"with a t interval over the {rounds} rounds (the table shows per-length medians). "
               "Frequency-sparse is compared with the dense module of the same order (only the "
               "skipped blocks differ: the last forward and first inverse stage, 1/p of the "
               "matmul work at order p); null_time_ratio_keep100 is the frequency-sparse module "
               "with every block kept (nothing skipped), the null arm; partial (overlap-save "
               "with FFT size N/4) vs the default dense module. Smooth filters: "
               "Hyena-style sinusoids (<= 16 cycles over L) under Hyena's default exponential "
               "decay (1% at 30%..150% of L); white: i.i.d. taps. Partial truncation error is "
               "dominated by the slowly decaying channels (1% only at 1.5 L), whose taps beyond "
               "L/4 carry much of their energy. Memory-bound passes (packing, padding, the "
               "overlap-save copy) do not shrink with the skipped blocks, so time "
               "ratios stay above the FLOP ratios shown beside them."),
    )


@claim(
    rule="speedup_min >= 2 and floor_ratio_max <= 3 and err_max < 3e-3",
    control="cuda_devices >= 1 and triton_available == 1",
    paper="FlashFFTConv's fused kernel speeds exact long convolutions up to 7.93x over "
          "PyTorch's FFT convolution (fp16/bf16 on tensor cores, A100/H100); this project's "
          "goal on an H100/H200: >= 2x the rfft convolution at L = 1K-4K and within 3x of the "
          "memory-traffic floor.",
    paper_numbers={"speedup_max": 7.93},
    scales=("small", "full"),
    resources={"gpus": 1},
    against=("torch.fft rfft convolution (the FFT of the filter inside every call, as the "
             "official module), the project's torch Monarch path, and the memory-traffic floor "
             "(read u and k, write y once at the measured copy bandwidth)"),
)
def gpu_throughput(scale: Scale, seed: int, progress=None) -> Measurement:
    """The paper's own terms: time on a GPU. Per L (FFT size 2L) at fixed work B*H*L = 2^25
    fp16 elements, :func:`.triton_kernel.gpu_throughput_table` times the fused Triton Monarch
    convolution (:func:`.triton_kernel.monarch_conv_triton`), our torch path and the rfft
    convolution with CUDA events (median of 15 calls at small, 31 at full), and the traffic
    floor. ``speedup_min`` is the smallest rfft / Triton time ratio over the lengths the kernel
    supports (L = 1K, 2K, 4K in fp16: order-2 Monarch held in shared memory; longer L need
    order 3 and fall back to torch), ``floor_ratio_max`` the largest Triton / floor ratio,
    ``err_max`` the largest relative error against the fp32 rfft convolution.

    Rule, fixed before any GPU run (none was lent to the session that wrote it): >= 2x and
    within 3x of the floor at every supported length, exact to fp16 tolerance. Control: a CUDA
    device and Triton are present; without them the claim is *inconclusive* ("the test bed
    cannot tell"), never *fails*: on a CPU the paper's claim cannot be tested (the CPU times
    are ``cpu_throughput``'s)."""
    progress = progress or (lambda *a, **k: None)
    try:
        from . import triton_kernel  # noqa: F401  (needs triton)
        has_triton = 1
    except ImportError:
        has_triton = 0
    devices = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if not (devices and has_triton):
        why = "no CUDA device" if not devices else "Triton is not installed"
        nan = float("nan")
        return Measurement(
            metrics={"cuda_devices": devices, "triton_available": has_triton,
                     "speedup_min": nan, "floor_ratio_max": nan, "err_max": nan},
            notes=f"not run: {why}. The claim times the fused Triton kernel on a GPU "
                  "(benchmarks/flashfftconv_gpu.py prints the full table).")
    from .triton_kernel import gpu_throughput_table

    lengths = [1024, 2048, 4096]
    rows = gpu_throughput_table(lengths, torch.float16,
                                repeats=sizes(scale, smoke=7, small=15, full=31), seed=seed)
    progress(1.0, "timed")
    ok = [r for r in rows if r.get("t_triton_ms") is not None]
    if not ok:
        nan = float("nan")
        return Measurement(metrics={"cuda_devices": devices, "triton_available": has_triton,
                                    "speedup_min": nan, "floor_ratio_max": nan, "err_max": nan},
                           tables={"throughput": rows},
                           notes="the kernel supports none of the timed lengths")
    speed = [r["t_rfft_ms"] / r["t_triton_ms"] for r in ok]
    floor = [r["t_triton_ms"] / r["t_floor_ms"] for r in ok]
    return Measurement(
        metrics={"cuda_devices": devices, "triton_available": has_triton,
                 "speedup_min": min(speed), "speedup_max": max(speed),
                 "floor_ratio_max": max(floor),
                 "err_max": max(float(r["err_triton"]) for r in ok)},
        tables={"throughput": rows},
        notes=f"{torch.cuda.get_device_name(0)}; fp16, B*H*L = 2^25; times in ms (CUDA events, "
              "medians).")
