"""FlashFFTConv claims: exactness, the honest CPU throughput benchmark, sparse trade-offs."""

from __future__ import annotations

import math

import torch

from iclr24.claims import Measurement, Scale, claim, sizes

from .benchmark import monarch_conv_flops, paired_median_times, rfft_conv_flops
from .convolution import (
    FrequencySparseFFTConv,
    MonarchFFTConv,
    PartialFFTConv,
    fft_conv_reference,
)
from .monarch_fft import monarch_factors, monarch_fft, monarch_ifft, monarch_order_to_natural
from .order_selection import best_order
from .synthetic_filters import decaying_noise_filter, smooth_filter, white_noise_filter

_THREADS = 2  # the spec's protocol: torch.set_num_threads(2), restored afterwards

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
@claim(
    rule="rel_err_f32 <= 1e-5 and rel_err_f64 <= 1e-12",
    paper="§3 / Alg. 1: FlashFFTConv computes the exact FFT convolution (no approximation); the "
          "Monarch decomposition is an exact factorization of the DFT matrix.",
)
def exact(scale: Scale, seed: int, progress=None) -> Measurement:
    """Monarch FFT convolution (orders 2, 3, 4; with and without the real-input trick; float32
    and float64) against rfft convolution computed in float64, for FFT sizes N = 2^8 … (2^14
    smoke, 2^20 small). Also the natural-order DFT against ``torch.fft.fft`` and the inverse
    round trip. Data: u ~ N(0, 1), Hyena-style decaying filter randn·exp(−α_h t/L)."""
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
                m = n // 2 if real_trick else n
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
            "n_configs": n_configs,
            "max_fft_size": max(fft_sizes),
        },
        figure=fig,
        tables={"error_by_size": rows},
        notes=("Errors are the worst over orders 2/3/4 with and without the real-input trick, "
               "against rfft convolution computed in float64; rfft_rel_err_f32 is torch's own "
               "float32 rfft convolution against the same reference, for scale. B·H = 4 up to "
               "N = 2^16, 2 above (to fit the budget)."),
    )


# ------------------------------------------------------------------------------- cpu_throughput
@claim(
    rule="flop_rate_ratio_median >= 2",
    paper="Up to 7.93x faster than PyTorch FFT convolution on H100 (README: 5.64x at N=256, "
          "7.93x at 1K, 6.64x at 4K, 5.42x at 8K, 2.45x at 16K, 3.22x at 32K, 1.74x at 1M); on a "
          "GPU because matmuls run on tensor cores. On a CPU the spec expects no wall-clock win "
          "but a several-fold higher achieved FLOP rate than the FFT (verdict: FLOP-rate ratio "
          ">= 2; time ratio shown, not judged).",
    paper_numbers={"speedup_max": 7.93},
)
def cpu_throughput(scale: Scale, seed: int, progress=None) -> Measurement:
    """Causal convolution at fixed work per call (B·H·L = 2^20 smoke / 2^22 small, float32,
    2 threads, inference mode, FFT(k) precomputed for both): Monarch (each order 2/3/4; best
    measured reported) vs ``irfft(rfft(u) ⊙ K)``, timed in interleaved rounds (median).
    FLOPs: our pipeline's exact count vs the nominal 2·2.5·N·log2 N + 6·(N/2+1) of the rfft conv.
    """
    progress = progress or (lambda *a, **k: None)
    lengths = sizes(scale, smoke=[256, 4096], small=[2**e for e in range(8, 21)])
    work = sizes(scale, smoke=2**20, small=2**22)
    rounds = sizes(scale, smoke=1, small=5)
    gen = torch.Generator().manual_seed(seed)
    previous_threads = torch.get_num_threads()
    rows = []
    check_err = 0.0
    try:
        torch.set_num_threads(_THREADS)
        threads = torch.get_num_threads()
        for i, length in enumerate(lengths):
            n = 2 * length
            bh = max(1, work // length)
            h = min(bh, 64)
            b = bh // h
            u = torch.randn(b, h, length, generator=gen)
            k = decaying_noise_filter(h, length, gen).float()
            with torch.inference_mode():
                kf = torch.fft.rfft(k, n=n)
                y_ref = torch.fft.irfft(torch.fft.rfft(u, n=n) * kf, n=n)[..., :length]

                def run_rfft(u=u, kf=kf, n=n, length=length):
                    return torch.fft.irfft(torch.fft.rfft(u, n=n) * kf, n=n)[..., :length]

                # order 2 beyond transform size 2^16 is 5–15x slower than 3/4 (see
                # order_selection) and would dominate the budget; it is not timed there.
                orders = [p for p in _valid_orders(length) if not (p == 2 and length > 2**16)]
                mods, fns = {}, [run_rfft]
                for p in orders:
                    mod = MonarchFFTConv(n, order=p, real_trick=True)
                    spec = mod.filter_spectrum(k)
                    check_err = max(check_err, _rel_err(mod.forward_spectrum(u, spec),
                                                        y_ref.double()))
                    mods[p] = mod
                    fns.append(lambda mod=mod, spec=spec, u=u: mod.forward_spectrum(u, spec))
                times = paired_median_times(fns, rounds=rounds, num_threads=_THREADS)
            t_rfft = times[0]
            t_by_order = dict(zip(orders, times[1:]))
            best = min(t_by_order, key=t_by_order.get)
            t_mon = t_by_order[best]
            fl_rfft = rfft_conv_flops(n) * bh
            fl_mon = monarch_conv_flops(mods[best]) * bh
            auto = best_order(length)
            rows.append({
                "L": length, "N": n, "BH": bh, "best_order": best, "auto_order": auto,
                "t_rfft_ms": 1e3 * t_rfft, "t_monarch_ms": 1e3 * t_mon,
                "time_ratio": t_mon / t_rfft,
                "gflops_rfft": fl_rfft / t_rfft / 1e9, "gflops_monarch": fl_mon / t_mon / 1e9,
                "flop_rate_ratio": (fl_mon / t_mon) / (fl_rfft / t_rfft),
                "flops_ratio": fl_mon / fl_rfft,
                "t_auto_order_ms": 1e3 * t_by_order.get(auto, float("nan")),
                **{f"t_order{p}_ms": 1e3 * t for p, t in t_by_order.items()},
                "paper_gpu_speedup": _PAPER_GPU_SPEEDUP.get(n),
            })
            progress((i + 1) / len(lengths), f"L={length}")
    finally:
        torch.set_num_threads(previous_threads)
    ratios = sorted(r["flop_rate_ratio"] for r in rows)
    tr = sorted(r["time_ratio"] for r in rows)
    fig = _figure()
    ax = fig.add_subplot()
    ls = [r["L"] for r in rows]
    ax.semilogx(ls, [r["time_ratio"] for r in rows], "o-", base=2,
                label="time ratio t_monarch / t_rfft")
    ax.semilogx(ls, [r["flop_rate_ratio"] for r in rows], "s-", base=2,
                label="FLOP-rate ratio monarch / rfft")
    ax.axhline(1.0, color="gray", lw=0.8, ls=":")
    ax.axhline(2.0, color="tab:orange", lw=0.8, ls="--", label="verdict threshold (FLOP rate)")
    ax.set_xlabel("sequence length L (FFT size 2L)")
    ax.set_ylabel("ratio")
    ax.set_title(f"Monarch FFT conv vs torch rfft conv, CPU, {threads} threads")
    ax.legend()
    med = lambda xs: xs[len(xs) // 2] if len(xs) % 2 else 0.5 * (xs[len(xs) // 2 - 1]
                                                                  + xs[len(xs) // 2])
    return Measurement(
        metrics={
            "flop_rate_ratio_median": med(ratios),
            "flop_rate_ratio_min": ratios[0],
            "flop_rate_ratio_max": ratios[-1],
            "time_ratio_median": med(tr),
            "time_ratio_min": tr[0],
            "time_ratio_max": tr[-1],
            "speedup_max": 1.0 / tr[0],
            "n_lengths_monarch_faster": sum(r["time_ratio"] < 1.0 for r in rows),
            "auto_order_agreement": sum(r["best_order"] == r["auto_order"] for r in rows)
            / len(rows),
            "gflops_rfft_median": med(sorted(r["gflops_rfft"] for r in rows)),
            "gflops_monarch_median": med(sorted(r["gflops_monarch"] for r in rows)),
            "max_check_err": check_err,
            "threads": threads,
            "work_per_call": work,
        },
        figure=fig,
        tables={"throughput_by_length": rows},
        notes=("CPU wall-clock, float32, medians over interleaved rounds (rfft and each order "
               "alternate, so load drift on a shared machine hits both alike). The Monarch "
               "column is the fastest order measured in this run; auto_order is what order=None "
               "picks from the stored table. FLOP rates use our pipeline's exact flop count and "
               "the nominal 2.5·N·log2 N for the real FFT. The paper's speed-ups are H100 "
               "tensor-core results (FFT size N), shown beside, not judged. Peak memory is not "
               "profiled here. "
               f"In this run Monarch was faster than rfft at "
               f"{sum(r['time_ratio'] < 1.0 for r in rows)} of {len(rows)} lengths; the measured "
               f"fastest order matched the stored table at "
               f"{sum(r['best_order'] == r['auto_order'] for r in rows)} of {len(rows)}."),
    )


# ------------------------------------------------------------------------------ sparse_tradeoff
@claim(
    rule=("freq_sparse_time_ratio_keep50 <= 0.8 and freq_sparse_err_smooth_keep50 <= 0.05 "
          "and partial_err_smooth <= 0.05"),
    paper="§3.3: partial convolutions (filter truncated to N′ taps) and frequency-sparse "
          "convolutions (FFT(k) zeroed on Monarch blocks) skip matmul blocks; frequency-sparse "
          "speeds up pretrained models while keeping quality. Spec: error < 5% for decaying "
          "(smooth) filters, large for white-noise filters; frequency-sparse at keep 0.5 should "
          "take <= 0.8 of dense Monarch time.",
)
def sparse_tradeoff(scale: Scale, seed: int, progress=None) -> Measurement:
    """Error (relative L2 vs the exact dense convolution) against kept fraction for partial
    (N′ = L/2 … L/16 taps) and frequency-sparse (keep 0.75 … 0.125 of frequencies) convolutions,
    on smooth Hyena-like filters and on white-noise filters; and time of frequency-sparse
    (keep 0.5, 0.25) vs the same pipeline dense, and of partial (N′ = N/8) vs dense Monarch."""
    progress = progress or (lambda *a, **k: None)
    err_len = sizes(scale, smoke=4096, small=16384)
    time_lengths = sizes(scale, smoke=[4096], small=[1024, 4096])
    work = sizes(scale, smoke=2**20, small=2**22)
    rounds = sizes(scale, smoke=3, small=5)
    gen = torch.Generator().manual_seed(seed)
    n = 2 * err_len
    b, h = 2, 8
    u = torch.randn(b, h, err_len, generator=gen, dtype=torch.float64)
    filters = {"smooth": smooth_filter(h, err_len, gen),
               "white": white_noise_filter(h, err_len, gen)}
    err_rows = []
    with torch.inference_mode():
        for name, k in filters.items():
            dense = fft_conv_reference(u, k)
            for div in (2, 4, 8, 16):
                mod = PartialFFTConv(n, err_len // div, dtype=torch.float64)
                err_rows.append({"variant": "partial", "filter": name, "kept_fraction": 1 / div,
                                 "rel_l2_err": _rel_l2(mod(u, k), dense)})
            for keep in (0.75, 0.5, 0.25, 0.125):
                for variant, rt in (("freq_sparse", True), ("freq_sparse_lowpass", False)):
                    mod = FrequencySparseFFTConv(n, keep, real_trick=rt, dtype=torch.float64)
                    err_rows.append({"variant": variant, "filter": name,
                                     "kept_fraction": mod.kept_fraction,
                                     "rel_l2_err": _rel_l2(mod(u, k), dense)})
    progress(0.3, "errors")

    def err(variant, name, frac):
        return next(r["rel_l2_err"] for r in err_rows if r["variant"] == variant
                    and r["filter"] == name and abs(r["kept_fraction"] - frac) < 1e-9)

    time_rows = []
    previous_threads = torch.get_num_threads()
    try:
        torch.set_num_threads(_THREADS)
        for i, length in enumerate(time_lengths):
            nn_ = 2 * length
            bh = max(1, work // length)
            hh = min(bh, 16)
            ut = torch.randn(bh // hh, hh, length, generator=gen)
            kt = smooth_filter(hh, length, gen).float()
            mods = {
                "dense_default": MonarchFFTConv(nn_),
                "freq_sparse_50": FrequencySparseFFTConv(nn_, 0.5),
                "freq_sparse_25": FrequencySparseFFTConv(nn_, 0.25),
                "dense_complex": FrequencySparseFFTConv(nn_, 1.0, real_trick=False),
                "lowpass_50": FrequencySparseFFTConv(nn_, 0.5, real_trick=False),
                "partial_N8": PartialFFTConv(nn_, nn_ // 8),
            }
            with torch.inference_mode():
                specs = {key: m.filter_spectrum(kt) for key, m in mods.items()}
                fns = [lambda m=m, s=specs[key], ut=ut: m.forward_spectrum(ut, s)
                       for key, m in mods.items()]
                times = dict(zip(mods, paired_median_times(fns, rounds=rounds,
                                                           num_threads=_THREADS)))
            flops = {key: monarch_conv_flops(m, length) for key, m in mods.items()}
            time_rows.append({
                "L": length, "BH": bh, "order": mods["dense_default"].order,
                "factors": str(mods["dense_default"].factors),
                **{f"t_{key}_ms": 1e3 * t for key, t in times.items()},
                "time_ratio_keep50": times["freq_sparse_50"] / times["dense_default"],
                "time_ratio_keep25": times["freq_sparse_25"] / times["dense_default"],
                "flops_ratio_keep50": flops["freq_sparse_50"] / flops["dense_default"],
                "flops_ratio_keep25": flops["freq_sparse_25"] / flops["dense_default"],
                "time_ratio_lowpass50": times["lowpass_50"] / times["dense_complex"],
                "flops_ratio_lowpass50": flops["lowpass_50"] / flops["dense_complex"],
                "time_ratio_partial": times["partial_N8"] / times["dense_default"],
                "flops_ratio_partial": flops["partial_N8"] / flops["dense_default"],
            })
            progress(0.3 + 0.7 * (i + 1) / len(time_lengths), f"timing L={length}")
    finally:
        torch.set_num_threads(previous_threads)
    fig = _figure()
    ax = fig.add_subplot()
    styles = {"partial": "o", "freq_sparse": "s", "freq_sparse_lowpass": "^"}
    for variant, marker in styles.items():
        for name, ls in (("smooth", "-"), ("white", "--")):
            pts = sorted((r["kept_fraction"], r["rel_l2_err"]) for r in err_rows
                         if r["variant"] == variant and r["filter"] == name)
            ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker + ls, base=2,
                      label=f"{variant}, {name} filter")
    ax.axhline(0.05, color="gray", lw=0.8, ls=":")
    ax.set_xlabel("kept fraction (filter taps for partial, frequencies for freq-sparse)")
    ax.set_ylabel("relative L2 error vs dense conv")
    ax.set_title(f"Sparse convolutions: error vs kept work (L = {err_len})")
    ax.legend(fontsize=8)
    return Measurement(
        metrics={
            "freq_sparse_time_ratio_keep50": max(r["time_ratio_keep50"] for r in time_rows),
            "freq_sparse_time_ratio_keep25": max(r["time_ratio_keep25"] for r in time_rows),
            "freq_sparse_flops_ratio_keep50": max(r["flops_ratio_keep50"] for r in time_rows),
            "lowpass_time_ratio_keep50": max(r["time_ratio_lowpass50"] for r in time_rows),
            "partial_time_ratio": max(r["time_ratio_partial"] for r in time_rows),
            "partial_flops_ratio": max(r["flops_ratio_partial"] for r in time_rows),
            "freq_sparse_err_smooth_keep50": err("freq_sparse", "smooth", 0.5),
            "freq_sparse_err_white_keep50": err("freq_sparse", "white", 0.5),
            "freq_sparse_err_smooth_keep25": err("freq_sparse", "smooth", 0.25),
            "freq_sparse_err_white_keep25": err("freq_sparse", "white", 0.25),
            "lowpass_err_smooth_keep50": err("freq_sparse_lowpass", "smooth", 0.5),
            "lowpass_err_white_keep50": err("freq_sparse_lowpass", "white", 0.5),
            "partial_err_smooth": err("partial", "smooth", 0.25),
            "partial_err_white": err("partial", "white", 0.25),
            "threads": _THREADS,
        },
        figure=fig,
        tables={"error_vs_kept_fraction": err_rows, "timing": time_rows},
        notes=("Errors: relative L2 vs the exact dense convolution (float64), partial at "
               "N′ = L/4 = N/8 taps; frequency-sparse (default, real-trick pipeline) keeps "
               "whole Monarch blocks, i.e. the lowest and highest frequencies (a band-stop of "
               "the middle, forced by the real trick's pairing of bins κ and N/2 − κ); "
               "freq_sparse_lowpass is the complex pipeline's low-pass (the official example). "
               "Times: worst (max) ratio over the timed lengths, medians of interleaved rounds "
               "on a CPU with 2 threads; frequency-sparse is compared with the dense module of "
               "the same pipeline and order (only the skipped blocks differ), low-pass with the "
               "dense complex pipeline, at lengths whose auto order is 2, where the last forward "
               "and first inverse stages (the ones that shrink) carry half the matmul work; "
               "partial (overlap-save with FFT size N/4) vs the default dense module. Smooth "
               "filters: "
               "Hyena-style sinusoids (<= 16 cycles over L) under Hyena's default exponential "
               "decay (1% at 30%..150% of L); white: i.i.d. taps. Partial truncation error is "
               "dominated by the slowly decaying channels (1% only at 1.5 L), whose taps beyond "
               "L/4 carry much of their energy. Memory-bound passes (twiddles, re/im packing, "
               "padding, the overlap-save copy) do not shrink with the skipped blocks, so time "
               "ratios stay above the FLOP ratios shown beside them."),
    )
