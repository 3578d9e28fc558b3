"""The smoke claims run; negative controls: the rules refuse a null PRES and broken statistics."""

import numpy as np

from iclr24.claims import Scale, seed_difference
from iclr24.papers.pres.claims import large_batch_ap, memory_statistics_exact


def test_smoke_claims_run(check_smoke_claim):
    m = check_smoke_claim(large_batch_ap, ["ap_gain", "ap_tgn_largest_b", "ap_pres_largest_b",
                                           "tgn_drop", "epoch_time_ratio"])
    rows = m.tables["ap_and_epoch_time"]
    assert {(r["b"], r["method"]) for r in rows} == {(b, k) for b in (100, 800)
                                                     for k in ("tgn", "pres_g0.9")}
    assert all(0.0 <= r["ap_mean"] <= 1.0 and r["epoch_cpu_s"] > 0 for r in rows)
    m = check_smoke_claim(memory_statistics_exact, ["stats_max_err", "inrun_stats_rel_err",
                                                    "gamma0_memory_diff", "gamma0_ap_diff"])
    assert memory_statistics_exact.verdict(m.metrics, Scale.SMOKE) == "holds"


def test_large_batch_rule_refuses_a_null_method():
    """PRES replaced by the baseline itself (same seeds, same AP): a zero gain never holds;
    a gain whose interval straddles 0 is inconclusive; a clearly negative gain fails."""
    base = [0.71, 0.69, 0.73]
    null = {"ap_gain": seed_difference(base, base)}
    assert large_batch_ap.verdict(null, Scale.SMALL) == "fails"
    noisy = {"ap_gain": seed_difference([0.74, 0.66, 0.72], base)}
    assert large_batch_ap.verdict(noisy, Scale.SMALL) == "inconclusive"
    worse = {"ap_gain": seed_difference([0.61, 0.60, 0.63], base)}
    assert large_batch_ap.verdict(worse, Scale.SMALL) == "fails"
    assert large_batch_ap.verdict({"ap_gain": 0.0}, Scale.SMOKE) == "fails"


def test_statistics_rule_refuses_the_official_filter_and_a_nonzero_gamma():
    """Negative controls: the official Filter (adds 1 to the running sum, never to the count,
    so its mean is sum / 0) and a gamma = 0 check that was run with gamma = 0.1."""
    rng = np.random.default_rng(0)
    deltas = rng.normal(size=(10, 3))
    count = np.zeros(1)
    increment = np.zeros(3)
    for d in deltas:  # the official update: increment += 1; increment += delta
        increment += 1 + d
    with np.errstate(divide="ignore", invalid="ignore"):
        official_mean = increment / count
    err = float(np.abs(official_mean - deltas.mean(0)).max())
    good = {"stats_max_err": 0.0, "inrun_stats_rel_err": 0.0, "gamma0_memory_diff": 0.0,
            "gamma0_loss_diff": 0.0, "gamma0_ap_diff": 0.0}
    assert memory_statistics_exact.verdict(good, Scale.SMALL) == "holds"
    broken = dict(good, stats_max_err=err, inrun_stats_rel_err=err)
    judged = memory_statistics_exact.judge(broken, Scale.SMALL)  # the official filter: 0/0
    assert judged.verdict == "inconclusive" and "stats_max_err` is " in judged.reason
    assert memory_statistics_exact.verdict(dict(good, gamma0_memory_diff=0.02),
                                           Scale.SMALL) == "fails"
