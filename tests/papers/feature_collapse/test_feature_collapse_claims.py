"""Smoke runs of the two claims and their negative controls."""

import math

import numpy as np

from iclr24.claims import Estimate, Measurement, Scale
from iclr24.papers.feature_collapse import ConceptSentenceDataset
from iclr24.papers.feature_collapse.claims import (
    _run_arm,
    collapse_generalization,
    layernorm_zipf,
)

VERDICTS = {"holds", "fails", "inconclusive"}


def _finite(m):
    return all(math.isfinite(v.value if isinstance(v, Estimate) else v) for v in m.metrics.values())


def test_collapse_smoke_claim():
    m = collapse_generalization(Scale.SMOKE, 0)
    assert isinstance(m, Measurement) and _finite(m) and m.figure is not None
    assert {"acc_gap", "ratio_gap", "trained_acc", "frozen_acc", "trained_within_ratio",
            "epochs"} <= set(m.metrics)
    assert collapse_generalization.verdict(m.metrics, "smoke") in VERDICTS
    # the frozen embedding cannot collapse: its rows are the random initialisation
    assert m.metrics["frozen_within_ratio"] > 0.9


def test_zipf_smoke_claim():
    m = layernorm_zipf(Scale.SMOKE, 0)
    assert _finite(m) and {"spearman_noln", "ratio_gap", "rare_acc_ln", "rare_acc_noln"} <= set(m.metrics)
    assert layernorm_zipf.verdict(m.metrics, "smoke") in VERDICTS


def test_collapse_negative_control_frozen_as_the_method(one_torch_thread):
    ds = ConceptSentenceDataset(3, 30, 4, 6, seed=0)
    train, test = ds.sample(5, rng=1), ds.sample(5, rng=2)
    a = _run_arm(ds, train, test, 5, 0, freeze_embedding=True)
    b = _run_arm(ds, train, test, 5, 0, freeze_embedding=True)
    metrics = {"acc_gap": a["test_acc"] - b["test_acc"], "trained_acc": a["test_acc"],
               "ratio_gap": b["within_ratio"] - a["within_ratio"]}
    assert collapse_generalization.verdict(metrics, "smoke") == "fails"
    seeds = {"acc_gap": Estimate.difference([0.4, 0.2, 0.5], [0.3, 0.3, 0.3], paired=True),
             "trained_acc": Estimate.mean_of([0.99, 1.0, 1.0]),
             "ratio_gap": Estimate.mean_of([0.5, 0.6, 0.55])}
    assert collapse_generalization.verdict(seeds, "small") != "holds"


def test_zipf_negative_control_layernorm_as_both_arms():
    ln = [0.02, 0.03, 0.025]
    metrics = {"spearman_noln": Estimate.mean_of([0.1, -0.05, 0.2]),
               "ratio_gap": Estimate.difference(ln, ln, paired=True)}
    assert layernorm_zipf.verdict(metrics, "small") == "fails"
    metrics["spearman_noln"] = Estimate.mean_of([0.9, 0.95, 0.93])
    assert layernorm_zipf.verdict(metrics, "small") == "fails"  # no gap in collapse


def test_arm_is_deterministic(one_torch_thread):
    ds = ConceptSentenceDataset(3, 30, 4, 6, seed=3)
    train, test = ds.sample(5, rng=1), ds.sample(5, rng=2)
    a = _run_arm(ds, train, test, 3, 7, layer_norm=True)
    b = _run_arm(ds, train, test, 3, 7, layer_norm=True)
    assert np.array_equal(a["features"], b["features"]) and a["final_loss"] == b["final_loss"]
