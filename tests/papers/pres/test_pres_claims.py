"""The smoke claims run, each with its null arm (measured in the same run) put in the method's
place; the rules and controls fed hand-made numbers (holds / fails / the test bed cannot tell)."""

import numpy as np

from iclr24.claims import Estimate, Scale, seed_difference
from iclr24.papers.pres.claims import large_batch_ap, memory_statistics_exact


def _diff(values):
    return Estimate.mean_of(values)  # a paired difference is a mean over seeds


def test_large_batch_smoke_and_reseeded_tgn_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(large_batch_ap, [
        "ap_gain", "tgn_drop", "null_gain", "ap_tgn_largest_b", "ap_pres_largest_b",
        "ap_tgn_smallest_b", "pres_vs_tgn_smallest_b", "ap_gain_stored_fusion", "ap_gain_g05",
        "ap_gain_coherence_only", "epoch_time_ratio"])
    rows = m.tables["ap_and_epoch_time"]
    extras = ("tgn_reseeded", "pres_stored_fusion", "pres_g0.5", "pres_coherence_only")
    assert {(r["b"], r["method"]) for r in rows} == (
        {(b, k) for b in (100, 800) for k in ("tgn", "pres")} | {(800, k) for k in extras})
    assert all(0.0 <= r["ap_mean"] <= 1.0 and r["epoch_cpu_s"] > 0 for r in rows)
    # the null arm (TGN re-seeded, this run) in PRES's place: never holds, at either scale
    null = {**m.metrics, "ap_gain": m.metrics["null_gain"]}
    assert m.metrics["null_gain_lower"] == m.metrics["null_gain"]  # one seed at smoke
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert large_batch_ap.verdict(null, scale) != "holds"
    # plain TGN in PRES's place (its gain over itself is exactly zero): fails or cannot tell
    assert large_batch_ap.verdict({**m.metrics, "ap_gain": 0.0}, Scale.SMOKE) != "holds"
    # a test bed without the large-batch degradation cannot tell
    flat = {**m.metrics, "tgn_drop": 0.0}
    assert large_batch_ap.judge(flat, Scale.SMOKE).verdict == "inconclusive"


def test_large_batch_rule_and_control():
    null = _diff([0.01, -0.02, 0.005])  # re-seeding noise: straddles 0
    ok = {"tgn_drop": _diff([0.05, 0.04, 0.06]), "null_gain_lower": null.low}
    assert large_batch_ap.verdict({**ok, "ap_gain": _diff([0.02, 0.03, 0.025])},
                                  Scale.SMALL) == "holds"
    assert large_batch_ap.verdict({**ok, "ap_gain": _diff([-0.1, -0.09, -0.11])},
                                  Scale.SMALL) == "fails"
    base = [0.71, 0.69, 0.73]  # the baseline itself as the method: zero gain fails
    assert large_batch_ap.verdict({**ok, "ap_gain": seed_difference(base, base)},
                                  Scale.SMALL) == "fails"
    assert large_batch_ap.verdict({**ok, "ap_gain": _diff([0.08, -0.05, 0.02])},
                                  Scale.SMALL) == "inconclusive"
    good = {**ok, "ap_gain": _diff([0.02, 0.03, 0.025])}
    # re-seeding TGN alone passes the rule: the test bed cannot tell
    noisy = {**good, "null_gain_lower": _diff([0.02, 0.03, 0.025]).low}
    judged = large_batch_ap.judge(noisy, Scale.SMALL)
    assert judged.verdict == "inconclusive" and "cannot tell" in judged.reason
    # no large-batch degradation to repair: cannot tell
    assert large_batch_ap.verdict({**good, "tgn_drop": _diff([0.01, -0.02, 0.0])},
                                  Scale.SMALL) == "inconclusive"
    assert large_batch_ap.verdict({**good, "ap_gain": float("nan")},
                                  Scale.SMALL) == "inconclusive"


def test_statistics_smoke_and_wrong_statistic_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(memory_statistics_exact, [
        "stats_max_err", "inrun_stats_rel_err", "gamma0_memory_diff", "gamma0_ap_diff",
        "naive_stats_max_err", "gamma01_memory_diff"])
    assert memory_statistics_exact.verdict(m.metrics, Scale.SMOKE) == "holds"
    # the null arms of this run in the method's place: the count-ignoring mean, gamma = 0.1
    wrong = {**m.metrics, "stats_max_err": m.metrics["naive_stats_max_err"]}
    assert memory_statistics_exact.verdict(wrong, Scale.SMOKE) != "holds"
    nonzero = {**m.metrics, "gamma0_memory_diff": m.metrics["gamma01_memory_diff"]}
    assert memory_statistics_exact.verdict(nonzero, Scale.SMOKE) != "holds"


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
            "gamma0_loss_diff": 0.0, "gamma0_ap_diff": 0.0, "naive_stats_max_err": 0.3,
            "gamma01_memory_diff": 0.5}
    assert memory_statistics_exact.verdict(good, Scale.SMALL) == "holds"
    broken = dict(good, stats_max_err=err, inrun_stats_rel_err=err)
    judged = memory_statistics_exact.judge(broken, Scale.SMALL)  # the official filter: 0/0
    assert judged.verdict == "inconclusive" and "stats_max_err` is " in judged.reason
    assert memory_statistics_exact.verdict(dict(good, gamma0_memory_diff=0.02),
                                           Scale.SMALL) == "fails"
    # a check that cannot see a wrong statistic or a nonzero gamma cannot tell
    for blind in ({"naive_stats_max_err": 0.0}, {"gamma01_memory_diff": 0.0}):
        judged = memory_statistics_exact.judge({**good, **blind}, Scale.SMALL)
        assert judged.verdict == "inconclusive" and "cannot tell" in judged.reason
