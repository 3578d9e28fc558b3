"""Smoke runs of both claims, and negative controls: each rule on a null or broken method's
metrics does not give holds."""

import pytest

from iclr24.claims import Scale, seed_difference
from iclr24.papers.locality_rewiring.claims import locality_sparsity, long_range_task


@pytest.fixture(scope="module")
def sparsity_smoke():
    return locality_sparsity(Scale.SMOKE, 0)


def test_locality_sparsity_smoke(check_smoke_claim):
    m = check_smoke_claim(locality_sparsity, ["laser_max_distance", "laser_khop_edge_ratio",
                                              "spectral_local_fraction",
                                              "laser_spectral_drop_ratio", "random_mean_distance"])
    assert m.metrics["laser_max_distance"] <= 4 and m.metrics["laser_local_fraction"] == 1.0
    assert m.metrics["khop_max_distance"] <= 4


def test_locality_sparsity_negative_controls(sparsity_smoke):
    metrics = dict(sparsity_smoke.metrics)
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
    # LASER with its additions removed: no resistance drop
    removed = dict(metrics, laser_spectral_drop_ratio=0.0, laser_khop_edge_ratio=0.0)
    assert locality_sparsity.verdict(removed, Scale.SMALL) != "holds"


def test_long_range_task_smoke(check_smoke_claim):
    m = check_smoke_claim(long_range_task, ["gain_over_original", "gain_over_random",
                                            "acc_original", "acc_laser_050", "acc_khop",
                                            "laser_khop_edge_fraction"])
    assert 0 < m.metrics["laser_khop_edge_fraction"] < 1
    rows = {r["arm"]: r for r in m.tables["accuracy_per_arm"]}
    assert rows["laser_100"]["fraction_of_3hop_edges"] == 1.0
    assert rows["original"]["added_edges_per_graph"] == 0.0


def test_long_range_task_negative_controls():
    original = [0.25, 0.27, 0.24]
    random = [0.55, 0.60, 0.58]
    null = {"gain_over_original": seed_difference(original, original),
            "gain_over_random": seed_difference(original, random)}  # un-rewired graph as LASER
    assert long_range_task.verdict(null, Scale.SMALL) == "fails"
    as_random = {"gain_over_original": seed_difference(random, original),
                 "gain_over_random": seed_difference(random, random)}  # random passed as LASER
    assert long_range_task.verdict(as_random, Scale.SMALL) != "holds"
    noisy = {"gain_over_original": seed_difference([0.6, 0.62, 0.61], original),
             "gain_over_random": seed_difference([0.6, 0.5, 0.7], [0.55, 0.56, 0.6])}
    assert long_range_task.verdict(noisy, Scale.SMALL) == "inconclusive"
