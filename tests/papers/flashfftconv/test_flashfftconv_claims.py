"""Every claim runs at smoke scale and yields the metrics its rule names."""

import math

from iclr24.claims import Scale
from iclr24.papers.flashfftconv.claims import cpu_throughput, exact, sparse_tradeoff


def _check(claim_obj, m):
    assert m.metrics and all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    claim_obj.verdict(m.metrics, Scale.SMOKE)      # evaluates; the verdict itself is not asserted
    assert m.figure is not None and m.tables


def test_exact_smoke_runs_and_is_deterministic():
    a = exact(Scale.SMOKE, 3)
    _check(exact, a)
    assert a.metrics["n_configs"] > 0 and a.metrics["max_fft_size"] == 2**14
    b = exact(Scale.SMOKE, 3)
    assert a.metrics == b.metrics                  # same seed, same numbers


def test_cpu_throughput_smoke_table_has_both_times_and_rates():
    m = cpu_throughput(Scale.SMOKE, 0)
    _check(cpu_throughput, m)
    rows = m.tables["throughput_by_length"]
    assert [r["L"] for r in rows] == [256, 4096]
    for r in rows:
        for key in ("t_rfft_ms", "t_monarch_ms", "time_ratio", "gflops_rfft", "gflops_monarch",
                    "flop_rate_ratio"):
            assert r[key] > 0
    assert m.metrics["max_check_err"] < 1e-4       # outputs checked equal before timing
    assert m.metrics["threads"] == 2


def test_sparse_tradeoff_smoke_runs():
    m = sparse_tradeoff(Scale.SMOKE, 0)
    _check(sparse_tradeoff, m)
    rows = m.tables["error_vs_kept_fraction"]
    assert {r["variant"] for r in rows} == {"partial", "freq_sparse", "freq_sparse_lowpass"}
    assert {r["filter"] for r in rows} == {"smooth", "white"}
    assert m.metrics["freq_sparse_flops_ratio_keep50"] < 1.0
