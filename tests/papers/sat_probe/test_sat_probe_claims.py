"""Smoke runs of every claim, determinism, and the negative controls of their rules."""

from __future__ import annotations

import numpy as np

from iclr24.claims import Estimate, Scale
from iclr24.papers.sat_probe import claims as sat_claims
from iclr24.papers.sat_probe.claims import (
    attention_predicts_errors,
    attention_predicts_errors_smollm2,
    early_layers,
    early_layers_smollm2,
)

KEYS = ["accuracy", "n_queries"]


def _e(lo, hi):
    return Estimate((lo + hi) / 2, lo, hi, 3)


def test_attention_predicts_errors_smoke(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(attention_predicts_errors, KEYS)
    assert 0 <= m.metrics["accuracy"] <= 1
    assert "accuracy_by_training_count" in m.tables


def test_early_layers_smoke(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(early_layers, KEYS)
    assert "early_retention" in m.metrics


def test_smollm2_claims_smoke(check_smoke_claim, one_torch_thread):
    for c in (attention_predicts_errors_smollm2, early_layers_smollm2):
        m = check_smoke_claim(c, KEYS)
        # the smoke stand-in is an untrained byte model: always wrong, so no probe and no holds
        assert m.metrics["accuracy"] == 0.0
        assert c.verdict(m.metrics, Scale.SMOKE) != "holds"


def test_world_run_is_deterministic(one_torch_thread):
    run = sat_claims._world_run.__wrapped__
    (_, a), (_, b) = run(Scale.SMOKE, 0), run(Scale.SMOKE, 0)
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.confidence, b.confidence)
    np.testing.assert_array_equal(a.y, b.y)


GOOD = {"sat_auroc": _e(0.7, 0.8), "confidence_minus_sat": _e(-0.05, 0.05),
        "sat_minus_control": _e(0.05, 0.1), "sat_minus_popularity": _e(0.02, 0.1),
        "sat_minus_constant": _e(0.2, 0.3), "early_retention": _e(0.85, 0.95)}


def test_rules_can_hold():
    for c in (attention_predicts_errors, attention_predicts_errors_smollm2, early_layers,
              early_layers_smollm2):
        assert c.verdict(GOOD, Scale.SMALL) == "holds"


def test_negative_controls():
    for c in (attention_predicts_errors, attention_predicts_errors_smollm2):
        # the control-span probe passed as SAT Probe: no gain over the control
        null = dict(GOOD, sat_minus_control=_e(-0.02, 0.02))
        assert c.verdict(null, Scale.SMALL) != "holds"
        # the constant baseline passed as the method: chance AUROC, no gain anywhere
        const = dict(GOOD, sat_auroc=_e(0.5, 0.5), sat_minus_constant=_e(0.0, 0.0),
                     sat_minus_control=_e(-0.1, -0.05), sat_minus_popularity=_e(-0.2, -0.1),
                     confidence_minus_sat=_e(0.2, 0.3))
        assert c.verdict(const, Scale.SMALL) == "fails"
        # popularity passed as the method: zero gain over popularity
        assert c.verdict(dict(GOOD, sat_minus_popularity=_e(-0.01, 0.01)),
                         Scale.SMALL) != "holds"
        # far behind confidence
        assert c.verdict(dict(GOOD, confidence_minus_sat=_e(0.15, 0.2)), Scale.SMALL) == "fails"
        assert c.verdict(dict(GOOD, sat_auroc=float("nan")), Scale.SMALL) == "inconclusive"
    for c in (early_layers, early_layers_smollm2):
        # the key step removed (early probe at chance): nothing retained
        assert c.verdict(dict(GOOD, early_retention=_e(-0.1, 0.1)), Scale.SMALL) == "fails"
        # a full probe at chance makes the ratio meaningless
        assert c.verdict(dict(GOOD, sat_auroc=_e(0.45, 0.5)), Scale.SMALL) == "fails"
        assert c.verdict(dict(GOOD, early_retention=_e(0.6, 1.1)), Scale.SMALL) == "inconclusive"
