"""Smoke runs of the dscnn_dog claims and negative controls of their rules."""

import math

import pytest

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.dscnn_dog.claims import cluster_structure, dog_coverage, layerwise

KEYS = {
    "dog_coverage": {"ratio_init", "ratio_permuted", "coverage_trained", "coverage_init",
                     "coverage_permuted", "coverage_random"},
    "cluster_structure": {"n_matched_trained", "n_matched_init", "matched_gap",
                          "share_matched_trained"},
    "layerwise": {"min_stage_gap", "coverage_stage1_trained", "coverage_stage3_permuted"},
}


@pytest.mark.parametrize("c", [dog_coverage, cluster_structure, layerwise], ids=lambda c: c.name)
def test_smoke_claim_runs(c):
    m = c(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert KEYS[c.name] <= set(m.metrics)
    assert all(math.isfinite(v if isinstance(v, float) else v.value) for v in m.metrics.values())
    assert c.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert m.tables


def test_negative_control_coverage_init_as_method():
    # the initial network passed as the method: its coverage equals the init control's
    null = {"ratio_init": 1.0, "ratio_permuted": 1.2,
            "gap_standard": Estimate.difference([0.01, 0.0, 0.02], [0.01, 0.0, 0.02],
                                                paired=True)}
    assert dog_coverage.verdict(null, "small") == "fails"
    assert dog_coverage.verdict({"ratio_init": 1.0, "ratio_permuted": 1.0}, "smoke") == "fails"
    good = {"ratio_init": Estimate.mean_of([5.0, 6.0, 7.0]),
            "ratio_permuted": Estimate.mean_of([4.8, 5.0, 5.2]),
            "gap_standard": Estimate.mean_of([0.1, 0.12, 0.11])}
    assert dog_coverage.verdict(good, "small") == "holds"


def test_negative_control_clusters_and_layers():
    same = Estimate.difference([2, 3, 2], [2, 3, 2], paired=True)  # init kernels as the method
    assert cluster_structure.verdict({"n_matched_trained": Estimate.mean_of([2, 3, 2]),
                                      "matched_gap": same}, "small") != "holds"
    assert layerwise.verdict({"min_stage_gap": Estimate.mean_of([0.0, 0.01, -0.01])},
                             "small") != "holds"
    assert layerwise.verdict({"min_stage_gap": 0.0}, "smoke") == "fails"
