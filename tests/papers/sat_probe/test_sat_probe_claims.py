"""Smoke runs of every claim with its null arm (the control-span probe, measured in the same
run) put in the method's place, determinism, the SmolLM2 claims' out-of-fold bootstrap on a
synthetic run, and the rules and controls fed hand-made numbers."""

from __future__ import annotations

import math

import numpy as np

from iclr24.claims import Estimate, Scale
from iclr24.papers.sat_probe import claims as sat_claims
from iclr24.papers.sat_probe.claims import (
    attention_predicts_errors,
    attention_predicts_errors_smollm2,
    early_layers,
    early_layers_smollm2,
)
from iclr24.papers.sat_probe.recall_data import RecallData

KEYS = ["accuracy", "n_queries"]


def _e(lo, hi):
    return Estimate((lo + hi) / 2, lo, hi, 3)


def _null_in_place(m):
    """The control-span probe's numbers put in SAT Probe's place (its early version for the
    early-layer claims)."""
    return {**m, "sat_auroc": m["control_auroc"],
            "confidence_minus_sat": m["confidence_minus_control"],
            "sat_minus_popularity": m["control_minus_popularity"],
            "sat_minus_constant": m["control_minus_constant"],
            "sat_minus_control": 0.0, "early_retention": m["early_control_retention"]}


def test_attention_predicts_errors_smoke_and_control_span_null(check_smoke_claim,
                                                               one_torch_thread):
    m = check_smoke_claim(attention_predicts_errors, KEYS)
    assert 0 <= m.metrics["accuracy"] <= 1
    assert "accuracy_by_training_count" in m.tables
    assert {"control_minus_constant", "confidence_minus_control",
            "early_control_retention"} <= set(m.metrics)
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert attention_predicts_errors.verdict(_null_in_place(m.metrics), scale) != "holds"


def test_early_layers_smoke_and_control_span_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(early_layers, KEYS)
    assert "early_retention" in m.metrics
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert early_layers.verdict(_null_in_place(m.metrics), scale) != "holds"


def test_smollm2_claims_smoke(check_smoke_claim, one_torch_thread):
    for c in (attention_predicts_errors_smollm2, early_layers_smollm2):
        m = check_smoke_claim(c, KEYS)
        # the smoke stand-in is an untrained byte model: always wrong, so no probe and no holds
        assert m.metrics["accuracy"] == 0.0
        assert c.verdict(m.metrics, Scale.SMOKE) == "inconclusive"
        assert c.verdict(_null_in_place(m.metrics), Scale.SMOKE) != "holds"


def test_world_run_is_deterministic(one_torch_thread):
    run = sat_claims._world_run.__wrapped__
    (_, a), (_, b) = run(Scale.SMOKE, 0), run(Scale.SMOKE, 0)
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.confidence, b.confidence)
    np.testing.assert_array_equal(a.y, b.y)


def _synthetic_run(n=288, layers=4, heads=3, seed=0, control_signal=0.0):
    """A deterministic run's data: attention to the constraint carries the label in the early
    layers, attention to the control word carries ``control_signal`` of it."""
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.45).astype(int)
    feats = rng.normal(size=(n, layers * heads))
    feats[:, 0] += 1.5 * y
    control = rng.normal(size=(n, layers * heads))
    control[:, 1] += control_signal * y
    conf = rng.normal(size=n) + 0.8 * y
    return RecallData(features=feats, control=control, confidence=conf,
                      popularity=rng.normal(size=n), y=y, n_layers=layers, n_heads=heads,
                      records=())


def test_smollm2_out_of_fold_bootstrap_metrics():
    data = _synthetic_run()
    m, rows = sat_claims._cross_fitted_metrics(data, Scale.SMALL, seed=0)
    assert [r["predictor"] for r in rows] == list(sat_claims.PREDICTORS)
    sat = m["sat_auroc"]
    assert sat.method == "item bootstrap" and sat.n == 288 and sat.low > 0.7
    # the interval is over the 288 items: a few hundredths wide, not the spread of splits
    assert 0.03 < sat.high - sat.low < 0.2
    assert m["constant_auroc"].value == 0.5 and m["sat_minus_constant"].low > 0
    assert m["sat_minus_control"].low > 0 and m["early_retention"].low > 0.8
    assert attention_predicts_errors_smollm2.verdict(m, Scale.SMALL) == "holds"
    assert early_layers_smollm2.verdict(m, Scale.SMALL) == "holds"
    # null arm in SAT Probe's place: not holds
    assert attention_predicts_errors_smollm2.verdict(_null_in_place(m), Scale.SMALL) != "holds"
    assert early_layers_smollm2.verdict(_null_in_place(m), Scale.SMALL) != "holds"
    # a control word that predicts errors as well: the test bed cannot tell
    leaky = sat_claims._cross_fitted_metrics(_synthetic_run(control_signal=2.0), Scale.SMOKE,
                                             seed=0)[0]
    assert attention_predicts_errors_smollm2.verdict(leaky, Scale.SMALL) == "inconclusive"
    assert early_layers_smollm2.verdict(leaky, Scale.SMALL) == "inconclusive"
    # a seed reshuffles the folds and the bootstrap, not the items
    other = sat_claims._cross_fitted_metrics(data, Scale.SMOKE, seed=1)[0]
    assert other["confidence_auroc"].value == m["confidence_auroc"].value
    assert abs(other["sat_auroc"].value - sat.value) < 0.05


GOOD = {"sat_auroc": _e(0.7, 0.8), "confidence_minus_sat": _e(-0.05, 0.05),
        "sat_minus_control": _e(0.05, 0.1), "sat_minus_popularity": _e(0.02, 0.1),
        "sat_minus_constant": _e(0.2, 0.3), "early_retention": _e(0.85, 0.95),
        # the control-span null arm: near chance
        "control_auroc": _e(0.45, 0.58), "confidence_minus_control": _e(0.1, 0.25),
        "control_minus_popularity": _e(-0.1, 0.05), "control_minus_constant": _e(-0.05, 0.08),
        "early_control_retention": _e(-0.3, 0.3)}


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
        # far behind confidence
        assert c.verdict(dict(GOOD, confidence_minus_sat=_e(0.15, 0.2)), Scale.SMALL) == "fails"
        assert c.verdict(dict(GOOD, sat_auroc=float("nan")), Scale.SMALL) == "inconclusive"
        # attention to a non-constraint word that passes the rule too: cannot tell
        leaky = dict(GOOD, control_auroc=_e(0.7, 0.75), confidence_minus_control=_e(-0.05, 0.05),
                     control_minus_popularity=_e(0.05, 0.1), control_minus_constant=_e(0.2, 0.25))
        assert c.verdict(leaky, Scale.SMALL) == "inconclusive"
        assert c.verdict(dict(GOOD, control_auroc=math.nan), Scale.SMALL) == "inconclusive"
    # popularity passed as the method: not holds in the fact world (a real training count)...
    assert attention_predicts_errors.verdict(
        dict(GOOD, sat_minus_popularity=_e(-0.01, 0.01)), Scale.SMALL) != "holds"
    # ... and not ruled on for SmolLM2, where popularity is a token-id proxy
    assert "popularity" not in attention_predicts_errors_smollm2.rule_text(Scale.SMALL)
    assert attention_predicts_errors_smollm2.verdict(
        dict(GOOD, sat_minus_popularity=_e(-0.01, 0.01)), Scale.SMALL) == "holds"
    for c in (early_layers, early_layers_smollm2):
        # the key step removed (early probe at chance): nothing retained
        assert c.verdict(dict(GOOD, early_retention=_e(-0.1, 0.1)), Scale.SMALL) == "fails"
        # a full probe at chance makes the ratio meaningless
        assert c.verdict(dict(GOOD, sat_auroc=_e(0.45, 0.5)), Scale.SMALL) == "fails"
        assert c.verdict(dict(GOOD, early_retention=_e(0.6, 1.1)), Scale.SMALL) == "inconclusive"
        # early attention to the control word retains as much: cannot tell
        assert c.verdict(dict(GOOD, early_control_retention=_e(0.85, 0.95)),
                         Scale.SMALL) == "inconclusive"
