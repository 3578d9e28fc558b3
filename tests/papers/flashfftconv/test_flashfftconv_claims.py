"""Every claim runs at smoke scale and yields the metrics its rule names; and every claim's rule,
evaluated on the metrics of a broken or null method, does not hold (negative controls)."""

import math

import torch

from iclr24.claims import Estimate, Scale, evaluate_rule
from iclr24.papers.flashfftconv import (
    FrequencySparseFFTConv,
    MonarchFFTConv,
    PartialFFTConv,
    dft_matrix,
    fft_conv_reference,
    paired_median_times,
    smooth_filter,
    time_against_ffts,
)
from iclr24.papers.flashfftconv.claims import (
    _log_ratio_estimate,
    _twiddle_free,
    cpu_throughput,
    exact,
    gpu_throughput,
    sparse_tradeoff,
)


def _check(claim_obj, m):
    assert m.metrics and all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert m.figure is not None and m.tables


def test_exact_smoke_runs_and_is_deterministic():
    a = exact(Scale.SMOKE, 3)
    _check(exact, a)
    assert a.metrics["n_configs"] > 0 and a.metrics["max_fft_size"] == 2**14
    b = exact(Scale.SMOKE, 3)
    assert a.metrics == b.metrics                  # same seed, same numbers


def test_exact_negative_control_without_twiddles():
    """Key step removed: the Cooley–Tukey twiddles dropped from the folded stage matrices."""
    g = torch.Generator().manual_seed(0)
    u = torch.randn(2, 3, 128, generator=g, dtype=torch.float64)
    k = torch.randn(3, 128, generator=g, dtype=torch.float64)
    ref = fft_conv_reference(u, k)
    errs = {}
    for dtype, tag in ((torch.float32, "f32"), (torch.float64, "f64")):
        mod = MonarchFFTConv(256, order=2, dtype=dtype)
        assert mod._folded[1]
        f = dft_matrix(mod.factors[1], mod.fwd_mat_1.dtype)
        mod.fwd_mat_1 = f.expand_as(mod.fwd_mat_1).contiguous()
        mod.inv_mat_1 = f.conj().T.expand_as(mod.inv_mat_1).contiguous()
        y = mod(u.to(dtype), k.to(dtype)).double()
        errs[f"rel_err_{tag}"] = float((y - ref).abs().max() / ref.abs().max())
    assert min(errs.values()) > 1e-2
    # the same null, as the claim's own null arm measures it: the test bed can tell
    errs |= {"null_rel_err_f32": errs["rel_err_f32"], "null_rel_err_f64": errs["rel_err_f64"]}
    assert exact.verdict(errs, Scale.SMALL) == "fails"


def test_exact_null_arm_in_the_smoke_run_does_not_hold():
    """The null arm the claim measures (twiddles dropped, :func:`_twiddle_free`) misses both
    tolerances in the smoke run itself: judged as the method, it fails; and a test bed whose
    null passed (a metric blind to a wrong factorization) would make the verdict inconclusive."""
    m = exact(Scale.SMOKE, 0)
    assert exact.judge(m.metrics, Scale.SMOKE).verdict == "holds"
    assert m.metrics["null_rel_err_f32"] > 1e-2 and m.metrics["null_rel_err_f64"] > 1e-2
    as_method = dict(m.metrics, rel_err_f32=m.metrics["null_rel_err_f32"],
                     rel_err_f64=m.metrics["null_rel_err_f64"])
    assert exact.verdict(as_method, Scale.SMALL) == "fails"
    blind = dict(m.metrics, null_rel_err_f32=m.metrics["rel_err_f32"],
                 null_rel_err_f64=m.metrics["rel_err_f64"])
    j = exact.judge(blind, Scale.SMALL)
    assert j.verdict == "inconclusive" and "cannot tell" in j.reason
    # the null module is the real one with only the twiddles changed
    null = _twiddle_free(2**10, torch.float64)
    assert null.factors == MonarchFFTConv(2**10, order=2).factors


def test_cpu_throughput_smoke_reports_time_ratios_against_both_baselines():
    m = cpu_throughput(Scale.SMOKE, 0)
    _check(cpu_throughput, m)
    rows = m.tables["time_by_length"]
    assert [r["L"] for r in rows] == [256, 4096]
    for r in rows:
        for key in ("t_rfft_ms", "t_fft_ms", "t_method_ms", "time_ratio_vs_rfft",
                    "time_ratio_vs_fft", "flop_rate_ratio", "t_null_ms"):
            assert r[key] > 0
    est = m.metrics["time_ratio_vs_rfft"]
    assert est.low <= est.value <= est.high and est.n == 3
    null = m.metrics["null_time_ratio_vs_rfft"]
    assert null.n == 3 and 0.5 < null.value < 2     # rfft against itself: about 1
    assert m.metrics["max_check_err"] < 1e-4       # outputs checked equal before timing
    assert m.metrics["threads"] == 1


def _throughput_metrics(rows):
    return {"time_ratio_vs_rfft": _log_ratio_estimate(rows, "ratio_rfft"),
            "null_time_ratio_vs_rfft": _log_ratio_estimate(rows, "ratio_null"),
            "max_check_err": max(r["check_err"] for r in rows)}


class _IdentityConv:
    """A null that computes less: returns its input (the convolution skipped). Faster than any
    FFT, and wrong."""

    def filter_spectrum(self, k):
        return k

    def forward_spectrum(self, u, spec):
        return u.clone()


class _DenseDFTConv:
    """The null method: the same convolution as one dense DFT matmul each way (no Monarch
    factorization, O(N·L) per sequence) — the FLOP-rate metric used to reward it."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.fwd = dft_matrix(n, torch.complex64)[:, : n // 2].T.contiguous()   # (L, N)
        self.inv = dft_matrix(n, torch.complex64, inverse=True)[: n // 2].T.contiguous()

    def filter_spectrum(self, k):
        return torch.fft.fft(k, n=self.n) / self.n

    def forward_spectrum(self, u, spec):
        uf = u.to(torch.complex64) @ self.fwd                         # (B, H, N)
        return ((uf * spec) @ self.inv).real


def test_cpu_throughput_negative_control_dense_dft_is_not_faster():
    rows = time_against_ffts([256, 1024], work=2**15, rounds=3, make_method=_DenseDFTConv,
                             null_arm=True)
    assert max(r["check_err"] for r in rows) < 1e-4                  # it is the same conv
    assert cpu_throughput.verdict(_throughput_metrics(rows), Scale.SMALL) != "holds"


def test_cpu_throughput_control_catches_a_method_that_skips_the_work():
    """The null that computes less (identity, no convolution) is faster than rfft, so the rule
    alone would hold; the control's output check makes the verdict inconclusive."""
    rows = time_against_ffts([256, 4096], work=2**15, rounds=3,
                             make_method=lambda n: _IdentityConv(), null_arm=True)
    metrics = _throughput_metrics(rows)
    assert metrics["max_check_err"] > 0.1
    j = cpu_throughput.judge(metrics, Scale.SMALL)
    assert j.verdict != "holds" and "cannot tell" in j.reason


def test_cpu_throughput_control_needs_the_method_apart_from_the_aa_null():
    """A method whose interval overlaps the A/A null's (rfft against itself) cannot be told
    from rfft by this protocol: inconclusive, even below 1. Separated, the rule decides."""
    base = {"max_check_err": 1e-7, "null_time_ratio_vs_rfft": Estimate(0.97, 0.955, 0.99, 5)}
    overlapping = dict(base, time_ratio_vs_rfft=Estimate(0.96, 0.94, 0.98, 5))
    j = cpu_throughput.judge(overlapping, Scale.SMALL)
    assert j.verdict == "inconclusive" and "cannot tell" in j.reason
    faster = dict(base, time_ratio_vs_rfft=Estimate(0.8, 0.7, 0.9, 5))
    assert cpu_throughput.judge(faster, Scale.SMALL).verdict == "holds"
    slower = dict(base, time_ratio_vs_rfft=Estimate(2.6, 2.5, 2.7, 5))
    assert cpu_throughput.judge(slower, Scale.SMALL).verdict == "fails"


def test_sparse_tradeoff_smoke_runs_and_judges_the_low_pass():
    m = sparse_tradeoff(Scale.SMOKE, 0)
    _check(sparse_tradeoff, m)
    rows = m.tables["error_vs_kept_fraction"]
    assert {r["variant"] for r in rows} == {"partial", "freq_sparse"}
    assert {r["filter"] for r in rows} == {"smooth", "white"}
    assert m.metrics["freq_sparse_flops_ratio_keep50"] < 1.0
    # the low-pass keeps smooth filters nearly intact and loses much of white-noise ones
    assert m.metrics["freq_sparse_err_smooth_keep50"] < m.metrics["freq_sparse_err_white_keep50"]
    for key in ("freq_sparse_time_ratio_keep50", "null_time_ratio_keep100"):
        assert m.metrics[key].n == 3                   # an interval over the timing rounds
    # the null arms measured in this run do not pass the rule: white-noise filters miss the
    # error level, and the module with every block kept is judged as the sparse one
    white = dict(m.metrics,
                 freq_sparse_err_smooth_keep50=m.metrics["freq_sparse_err_white_keep50"],
                 partial_err_smooth=m.metrics["partial_err_white"])
    assert evaluate_rule(sparse_tradeoff.rule, white) is False
    nothing_skipped = dict(m.metrics, freq_sparse_time_ratio_keep50=m.metrics[
        "null_time_ratio_keep100"])
    assert sparse_tradeoff.verdict(nothing_skipped, Scale.SMALL) != "holds"


def test_sparse_tradeoff_negative_control_dense_modules_as_the_sparse_ones():
    """Null method: the dense module stands in for both sparse variants (exact, no skipped work).
    Every number is the null's own measurement, white-noise errors included: the dense module
    loses nothing on white filters either, so the control voids the verdict whatever the clock
    says (a timing ratio of two identical modules can fall below 0.8 on a loaded machine)."""
    g = torch.Generator().manual_seed(1)
    length = 1024
    u = torch.randn(4, 8, length, generator=g)
    k = smooth_filter(8, length, g)
    k_white = torch.randn(8, length, generator=g, dtype=torch.float64)
    dense = MonarchFFTConv(2 * length)
    same = MonarchFFTConv(2 * length)

    def rel_err(kernel):
        y = dense(u, kernel.float()).double()
        ref = fft_conv_reference(u.double(), kernel)
        return float(torch.linalg.vector_norm(y - ref) / torch.linalg.vector_norm(ref))

    with torch.inference_mode():
        err, err_white = rel_err(k), rel_err(k_white)
        s1, s2 = dense.filter_spectrum(k.float()), same.filter_spectrum(k.float())
        t_dense, t_null = paired_median_times([lambda: dense.forward_spectrum(u, s1),
                                               lambda: same.forward_spectrum(u, s2)],
                                              rounds=5, clock="thread")
    metrics = {"freq_sparse_time_ratio_keep50": t_null / t_dense,
               "freq_sparse_err_smooth_keep50": err, "partial_err_smooth": err,
               "null_time_ratio_keep100": 1.0, "freq_sparse_err_white_keep50": err_white,
               "partial_err_white": err_white}
    assert err < 1e-5 and err_white < 1e-5
    assert sparse_tradeoff.verdict(metrics, Scale.SMALL) == "inconclusive"
    # with the white-filter loss granted, a null that is no faster fails on time
    metrics.update(freq_sparse_time_ratio_keep50=Estimate(1.0, 0.97, 1.03, 7),
                   freq_sparse_err_white_keep50=0.7, partial_err_white=0.75)
    assert sparse_tradeoff.verdict(metrics, Scale.SMALL) == "fails"
    # and the real sparse modules are what the rule is about
    assert FrequencySparseFFTConv(2 * length, 0.5).kept_fraction == 0.5
    assert PartialFFTConv(2 * length, length // 4).blockwise


def test_sparse_tradeoff_control_voids_a_test_bed_that_cannot_tell():
    """If skipping nothing also looked 20% faster, or white-noise filters lost nothing, the
    verdict is inconclusive whatever the rule says."""
    good = {"freq_sparse_time_ratio_keep50": Estimate(0.7, 0.65, 0.75, 7),
            "freq_sparse_err_smooth_keep50": 0.02, "partial_err_smooth": 0.03,
            "null_time_ratio_keep100": Estimate(1.0, 0.95, 1.05, 7),
            "freq_sparse_err_white_keep50": 0.7, "partial_err_white": 0.75}
    assert sparse_tradeoff.verdict(good, Scale.SMALL) == "holds"
    for key, value in (("null_time_ratio_keep100", Estimate(0.7, 0.65, 0.75, 7)),
                       ("freq_sparse_err_white_keep50", 0.01), ("partial_err_white", 0.02)):
        j = sparse_tradeoff.judge(dict(good, **{key: value}), Scale.SMALL)
        assert j.verdict == "inconclusive" and "cannot tell" in j.reason


def test_gpu_throughput_is_not_run_without_a_gpu_and_never_fails(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    m = gpu_throughput.fn(Scale.SMALL, 0)
    assert m.metrics["cuda_devices"] == 0 and "not run: no CUDA device" in m.notes
    judged = gpu_throughput.judge(m.metrics, Scale.SMALL)
    assert judged.verdict == "inconclusive" and "cannot tell" in judged.reason
    assert gpu_throughput.scales == ("small", "full")
    assert gpu_throughput.resources_for("small")["gpus"] == 1


def test_gpu_throughput_rule_reads_speed_floor_and_error():
    base = {"cuda_devices": 1, "triton_available": 1, "speedup_min": 2.4,
            "floor_ratio_max": 2.5, "err_max": 8e-4}
    assert gpu_throughput.verdict(base, Scale.SMALL) == "holds"
    # the torch path's own speed on a GPU (~0.3-0.4x rfft, measured on an H200): not holds
    assert gpu_throughput.verdict({**base, "speedup_min": 0.35}, Scale.SMALL) == "fails"
    assert gpu_throughput.verdict({**base, "floor_ratio_max": 14.0}, Scale.SMALL) == "fails"
    assert gpu_throughput.verdict({**base, "err_max": 0.02}, Scale.SMALL) == "fails"
    assert gpu_throughput.verdict({**base, "triton_available": 0}, Scale.SMALL) == "inconclusive"
