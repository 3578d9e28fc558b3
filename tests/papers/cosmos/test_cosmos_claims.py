"""Smoke runs of the two Cosmos claims and their negative controls."""

import math

import numpy as np
import pytest

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.cosmos import BlockPushingEnv
from iclr24.papers.cosmos.claims import entity_composition, relational_composition

KEY_METRICS = {"mse_ratio", "mse_cosmos", "mse_aligned_nps", "mse_gnn", "mse_copy",
               "position_accuracy_cosmos", "scene_accuracy_gnn", "symbol_accuracy"}


@pytest.mark.parametrize("claim_obj", [relational_composition, entity_composition],
                         ids=lambda c: c.name)
def test_smoke_claim_runs(claim_obj, tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path))
    m = claim_obj(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert KEY_METRICS <= set(m.metrics)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert m.figure is not None and m.tables["per_seed"]
    if claim_obj is relational_composition:
        assert "mse_ratio_team_subset" in m.metrics
    # negative control on this run's numbers: the best baseline passed as the method
    best = min(m.metrics["mse_aligned_nps"], m.metrics["mse_gnn"])
    null = dict(m.metrics, mse_ratio=best / best)
    if claim_obj is relational_composition:
        assert claim_obj.verdict(null, Scale.SMOKE) != "holds"


def test_relational_rule_rejects_the_baseline_as_method():
    for ratio in (1.0, Estimate.mean_of([0.95, 1.0, 1.04]), Estimate.mean_of([0.5, 0.9, 0.7])):
        assert relational_composition.verdict({"mse_ratio": ratio}, Scale.SMALL) != "holds"
    assert relational_composition.verdict(
        {"mse_ratio": Estimate.mean_of([0.4, 0.45, 0.5])}, Scale.SMALL) == "holds"


def test_entity_rule_rejects_a_broken_method():
    """Broken method: predict a blank image; baseline: copy the current image (both measured
    on a held-out EC split). The rule must not hold."""
    env = BlockPushingEnv(composition="entity", seed=0)
    ratios = []
    for seed in range(3):
        _, test = env.splits(10, 200, seed=seed)
        blank = float((test.next_images ** 2).mean())
        copy = float(((test.images - test.next_images) ** 2).mean())
        ratios.append(blank / copy)
    assert np.mean(ratios) > 1.2
    assert entity_composition.verdict({"mse_ratio": Estimate.mean_of(ratios)},
                                      Scale.SMALL) == "fails"
    assert entity_composition.verdict({"mse_ratio": Estimate.mean_of([0.9, 1.0, 1.05])},
                                      Scale.SMALL) == "holds"
