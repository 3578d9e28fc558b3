"""Smoke runs of both claims with their null arms (measured in the same run) put in LASER's
place, and the rules and controls fed hand-made numbers (holds / fails / control false)."""

import pytest

from iclr24.claims import Estimate, Scale, seed_difference
from iclr24.papers.locality_rewiring.claims import locality_sparsity, long_range_task


def _diff(values):
    return Estimate.mean_of(values)  # a paired difference is a mean over seeds


@pytest.fixture(scope="module")
def sparsity_smoke():
    return locality_sparsity(Scale.SMOKE, 0)


def test_locality_sparsity_smoke(check_smoke_claim):
    m = check_smoke_claim(locality_sparsity, [
        "laser_max_distance", "laser_khop_edge_ratio", "spectral_local_fraction",
        "laser_spectral_drop_ratio", "random_mean_distance", "drop_gain_over_orbit_random",
        "repeat_gain_over_orbit_random", "highest_gain_over_orbit_random"])
    assert m.metrics["laser_max_distance"] <= 4 and m.metrics["laser_local_fraction"] == 1.0
    assert m.metrics["khop_max_distance"] <= 4
    rows = m.tables["per_graph"]
    # the in-orbit arms add exactly LASER's per-node counts (same locality, same sparsity)
    for graph in {r["graph"] for r in rows}:
        cols = {r["method"]: r["added_columns"] for r in rows if r["graph"] == graph}
        assert cols["laser"] == cols["laser_random_orbit"] == cols["laser_highest"] \
            == cols["laser_random_orbit_repeat"]
        maxd = {r["method"]: r["max_distance"] for r in rows if r["graph"] == graph}
        assert max(maxd[k] for k in ("laser", "laser_random_orbit", "laser_highest")) <= 4


def test_locality_sparsity_null_arms_do_not_hold(sparsity_smoke):
    metrics = dict(sparsity_smoke.metrics)
    # the random-in-orbit ablation (this run) in LASER's place: its gain over itself is zero
    ablation = dict(metrics, drop_gain_over_orbit_random=0.0,
                    laser_spectral_drop_ratio=metrics["orbit_random_spectral_drop_ratio"])
    # its second, independent draw (this run) in LASER's place
    repeat = dict(metrics,
                  drop_gain_over_orbit_random=metrics["repeat_gain_over_orbit_random"])
    for null in (ablation, repeat):
        for scale in (Scale.SMOKE, Scale.SMALL):
            assert locality_sparsity.verdict(null, scale) != "holds"
    for broken in ("random", "spectral", "khop"):  # a baseline passed as the method
        swapped = dict(metrics)
        for key in ("max_distance", "local_fraction", "added_columns", "resistance_drop"):
            swapped[f"laser_{key}"] = metrics[f"{broken}_{key}"]
        swapped["laser_khop_edge_ratio"] = metrics[f"{broken}_added_columns"] / \
            metrics["khop_added_columns"]
        swapped["laser_spectral_drop_ratio"] = metrics[f"{broken}_resistance_drop"] / \
            metrics["spectral_resistance_drop"]
        if broken == "random":
            swapped["spectral_local_fraction"] = metrics["random_local_fraction"]
        assert locality_sparsity.verdict(swapped, Scale.SMALL) != "holds", broken


def _sparsity_metrics(**over):
    good = {"laser_max_distance": 4.0, "laser_khop_edge_ratio": _diff([0.4, 0.41, 0.39]),
            "spectral_local_fraction": _diff([0.2, 0.25, 0.22]),
            "laser_spectral_drop_ratio": _diff([0.95, 0.96, 0.94]),
            "drop_gain_over_orbit_random": _diff([0.02, 0.03, 0.025]),
            "repeat_gain_over_orbit_random": _diff([0.001, -0.002, 0.0005])}
    return {**good, **over}


def test_locality_sparsity_rule_and_control():
    assert locality_sparsity.verdict(_sparsity_metrics(), Scale.SMALL) == "holds"
    # the choice inside the orbit does worse than random: fails, whatever the trade-offs say
    worse = _sparsity_metrics(drop_gain_over_orbit_random=_diff([-0.02, -0.03, -0.025]))
    assert locality_sparsity.verdict(worse, Scale.SMALL) == "fails"
    noisy = _sparsity_metrics(drop_gain_over_orbit_random=_diff([0.02, -0.01, 0.005]))
    assert locality_sparsity.verdict(noisy, Scale.SMALL) == "inconclusive"
    # an edge outside the 4-hop ball: locality broken
    assert locality_sparsity.verdict(_sparsity_metrics(laser_max_distance=5.0),
                                     Scale.SMALL) == "fails"
    # two draws of the same random ablation already "differ": the test bed cannot tell
    judged = locality_sparsity.judge(_sparsity_metrics(
        repeat_gain_over_orbit_random=_diff([0.02, 0.03, 0.025])), Scale.SMALL)
    assert judged.verdict == "inconclusive" and "cannot tell" in judged.reason
    # a null whose interval straddles zero is not a pass: the control holds
    straddle = _sparsity_metrics(repeat_gain_over_orbit_random=_diff([0.02, -0.03, 0.0]))
    assert locality_sparsity.verdict(straddle, Scale.SMALL) == "holds"
    nan = _sparsity_metrics(drop_gain_over_orbit_random=float("nan"))
    assert locality_sparsity.verdict(nan, Scale.SMALL) == "inconclusive"


def test_long_range_task_smoke_and_null_arms(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(long_range_task, [
        "gain_over_original", "gain_over_random", "khop_gain_over_random",
        "random_gain_over_original", "gain_over_orbit_random", "acc_original",
        "acc_laser_050", "acc_khop", "acc_random", "acc_orbit_random",
        "laser_khop_edge_fraction", "distractor_reach_random", "reach_laser_050"])
    assert 0 < m.metrics["laser_khop_edge_fraction"] < 1
    rows = {r["arm"]: r for r in m.tables["accuracy_per_arm"]}
    assert rows["laser_100"]["fraction_of_3hop_edges"] == 1.0
    assert rows["original"]["added_edges_per_graph"] == 0.0
    assert rows["original"]["s_within_3_layers_of_t"] == 0.0
    assert rows["laser_100"]["s_within_3_layers_of_t"] == 1.0
    # local rewirings never let a distractor (>= 10 hops) into 3 layers of reach-3 edges
    for arm in ("original", "laser_010", "laser_050", "laser_100", "orbit_random"):
        assert rows[arm]["distractor_within_3_layers_of_t"] == 0.0, arm
    assert rows["random"]["distractor_within_3_layers_of_t"] > 0.5
    # random shortcuts (the null arm, this run) in LASER's place: their gain over themselves
    # is zero, so the rule cannot hold
    null = {**m.metrics, "gain_over_original": m.metrics["random_gain_over_original"],
            "gain_over_random": 0.0}
    # the un-rewired graph in LASER's place
    original = {**m.metrics, "gain_over_original": 0.0,
                "gain_over_random": -m.metrics["random_gain_over_original"]}
    for metrics in (null, original):
        for scale in (Scale.SMOKE, Scale.SMALL):
            assert long_range_task.verdict(metrics, scale) != "holds"


def test_long_range_task_rule_and_control():
    original = [0.25, 0.27, 0.24]
    random = [0.40, 0.42, 0.41]
    laser = [0.55, 0.58, 0.56]
    khop = [0.95, 0.97, 0.96]
    good = {"gain_over_original": seed_difference(laser, original),
            "gain_over_random": seed_difference(laser, random),
            "khop_gain_over_random": seed_difference(khop, random)}
    assert long_range_task.verdict(good, Scale.SMALL) == "holds"
    null = {**good, "gain_over_original": seed_difference(original, original),
            "gain_over_random": seed_difference(original, random)}  # un-rewired graph as LASER
    assert long_range_task.verdict(null, Scale.SMALL) == "fails"
    as_random = {**good, "gain_over_original": seed_difference(random, original),
                 "gain_over_random": seed_difference(random, random)}  # random passed as LASER
    assert long_range_task.verdict(as_random, Scale.SMALL) != "holds"
    noisy = {**good, "gain_over_random": seed_difference([0.6, 0.5, 0.7], [0.55, 0.56, 0.6])}
    assert long_range_task.verdict(noisy, Scale.SMALL) == "inconclusive"
    # a test bed where random shortcuts do as well as the local 3-hop rewiring: cannot tell
    easy = {**good, "khop_gain_over_random": seed_difference([0.95, 0.97, 0.96],
                                                             [0.96, 0.95, 0.97])}
    judged = long_range_task.judge(easy, Scale.SMALL)
    assert judged.verdict == "inconclusive" and "cannot tell" in judged.reason
