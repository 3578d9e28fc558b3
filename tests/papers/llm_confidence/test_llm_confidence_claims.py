"""Smoke runs of every claim, each with its null arm (measured in the same run) put in the
method's place, and the rules and controls fed hand-made numbers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.llm_confidence.claims import (
    _elicitation_metrics,
    consistency_auroc,
    pair_rank_recovery,
    smollm2_elicitation,
)


def _e(lo, hi):
    return Estimate((lo + hi) / 2, lo, hi, 3)


def test_consistency_auroc_smoke_and_shuffled_null(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(consistency_auroc, [
        "ece_reduction", "whitebox_gap", "vanilla_ece", "parse_rate", "vanilla_accuracy",
        "consistency_ece", "shuffled_ece_reduction", "shuffled_ece", "consistency_kept"])
    assert 0 <= m.metrics["parse_rate"] <= 1 and 0 <= m.metrics["consistency_kept"] <= 1
    # the null arm (Consistency's confidences permuted across questions, this run) keeps the
    # confidence histogram: same mean confidence and accuracy as Consistency
    assert m.metrics["shuffled_mean_confidence"] == \
        pytest.approx(m.metrics["consistency_mean_confidence"])
    assert m.metrics["shuffled_accuracy"] == m.metrics["consistency_accuracy"]
    # ... and in the method's place the rule with its control does not hold
    null = {**m.metrics, "ece_reduction": m.metrics["shuffled_ece_reduction"],
            "whitebox_gap": m.metrics["shuffled_whitebox_gap"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert consistency_auroc.verdict(null, scale) != "holds"


def test_pair_rank_recovery_smoke_and_shuffled_null(check_smoke_claim):
    m = check_smoke_claim(pair_rank_recovery, ["gain_m3", "gain_m5", "paper_err_m3",
                                               "official_minus_paper_m5", "freq_hit_m10",
                                               "shuffled_gain_m3", "shuffled_gain_m5",
                                               "gain_vs_shuffled_m3"])
    assert 0 <= m.metrics["paper_hit_m3"] <= 1
    # the null arm (this run) reads another draw's lists: further from the truth than
    # Pair-Rank on its own lists
    assert m.metrics["shuffled_err_m3"] > m.metrics["paper_err_m3"]
    null = {**m.metrics, "gain_m3": m.metrics["shuffled_gain_m3"],
            "gain_m5": m.metrics["shuffled_gain_m5"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert pair_rank_recovery.verdict(null, scale) != "holds"


def test_smollm2_elicitation_smoke(check_smoke_claim):
    m = check_smoke_claim(smollm2_elicitation, ["parse_rate", "verbalized_ece",
                                                "consistency_accuracy", "n_questions"])
    # an untrained byte model parses nothing: one class, no AUROC, and the rule cannot hold
    assert math.isnan(m.metrics["verbalized_auroc"])
    assert math.isnan(m.metrics["auroc_gain"].value)
    assert smollm2_elicitation.verdict(m.metrics, Scale.SMOKE) == "inconclusive"
    null = {**m.metrics, "auroc_gain": m.metrics["shuffled_auroc_gain"]}
    assert smollm2_elicitation.verdict(null, Scale.SMOKE) != "holds"


def _questions(n, rng, verbal_informative):
    """Per-question arrays of a synthetic elicitation run: Consistency tracks correctness,
    the verbalised confidence tracks it (or its opposite) weakly."""
    y = (rng.random(n) < 0.5).astype(float)
    v = np.clip(0.85 + (0.05 if verbal_informative else -0.1) * (y - 0.5)
                + rng.normal(0, 0.05, n), 0, 1)
    runs = []
    for _ in range(3):
        c = np.clip(0.3 + 0.5 * y + rng.normal(0, 0.15, n), 0, 1)
        runs.append((list(c), list(y), list(rng.permutation(c))))
    return (list(v), list(y)), runs


def test_smollm2_bootstrap_metrics_and_null_arm():
    rng = np.random.default_rng(0)
    verbal, runs = _questions(40, rng, verbal_informative=True)
    m = _elicitation_metrics(verbal, runs, Scale.SMOKE, seed=0)  # 200 resamples
    gain = m["auroc_gain"]
    assert gain.method == "question bootstrap" and gain.n == 40 and gain.low > 0
    # the null arm: the same confidences detached from their questions gains nothing
    assert m["shuffled_auroc_gain"].low < 0
    assert smollm2_elicitation.verdict(m, Scale.SMALL) == "holds"
    null = {**m, "auroc_gain": m["shuffled_auroc_gain"]}
    assert smollm2_elicitation.verdict(null, Scale.SMALL) != "holds"
    # a verbalised confidence below chance: even the shuffled null beats it -> cannot tell
    verbal, runs = _questions(40, np.random.default_rng(1), verbal_informative=False)
    below = _elicitation_metrics(verbal, runs, Scale.SMOKE, seed=0)
    assert below["shuffled_auroc_gain"].low > 0 and below["auroc_gain"].low > 0
    assert smollm2_elicitation.verdict(below, Scale.SMALL) == "inconclusive"
    # the interval is over questions: 40 questions give a wider one than 400
    verbal, runs = _questions(400, np.random.default_rng(2), verbal_informative=True)
    wide = m["auroc_gain"].high - m["auroc_gain"].low
    big = _elicitation_metrics(verbal, runs, Scale.SMOKE, seed=0)["auroc_gain"]
    assert big.high - big.low < wide


def test_consistency_auroc_rule_and_control():
    null = {"shuffled_ece_reduction": _e(-0.1, -0.02), "shuffled_whitebox_gap": _e(0.2, 0.3)}
    good = {**null, "ece_reduction": _e(0.02, 0.05), "whitebox_gap": _e(-0.05, 0.05)}
    assert consistency_auroc.verdict(good, Scale.SMALL) == "holds"
    # the verbalised channel passed as Consistency: no ECE reduction
    assert consistency_auroc.verdict({**good, "ece_reduction": _e(-0.01, 0.01)},
                                     Scale.SMALL) != "holds"
    # white-box far ahead of Consistency: the "narrow gap" part fails
    assert consistency_auroc.verdict({**good, "whitebox_gap": _e(0.15, 0.25)},
                                     Scale.SMALL) == "fails"
    # the AUROC gain over the simulated channel is no longer ruled on
    assert "auroc_gain" not in consistency_auroc.rule_text(Scale.SMALL)
    # a null that passes the rule (detached confidences calibrate as well, white-box close)
    passing = {**good, "shuffled_ece_reduction": _e(0.02, 0.05),
               "shuffled_whitebox_gap": _e(0.0, 0.05)}
    assert consistency_auroc.verdict(passing, Scale.SMALL) == "inconclusive"
    assert consistency_auroc.verdict({**good, "shuffled_ece_reduction": math.nan},
                                     Scale.SMALL) == "inconclusive"


def test_pair_rank_rule_and_control():
    null = {"shuffled_gain_m3": _e(-0.05, -0.01), "shuffled_gain_m5": _e(-0.08, -0.04)}
    assert pair_rank_recovery.verdict({**null, "gain_m3": _e(0.01, 0.03),
                                       "gain_m5": _e(0.01, 0.02)}, Scale.SMALL) == "holds"
    # Pair-Rank replaced by the top-1 frequency: zero gain
    assert pair_rank_recovery.verdict({**null, "gain_m3": 0.0, "gain_m5": 0.0},
                                      Scale.SMALL) == "fails"
    assert pair_rank_recovery.verdict({**null, "gain_m3": _e(-0.01, 0.02),
                                       "gain_m5": _e(0.01, 0.02)}, Scale.SMALL) == "inconclusive"
    # list-blind confidences beating the top-1 frequency: a straw baseline, cannot tell
    straw = {"shuffled_gain_m3": _e(0.02, 0.04), "shuffled_gain_m5": _e(0.01, 0.02),
             "gain_m3": _e(0.05, 0.07), "gain_m5": _e(0.04, 0.06)}
    assert pair_rank_recovery.verdict(straw, Scale.SMALL) == "inconclusive"


def test_smollm2_rule_and_control():
    null = {"shuffled_auroc_gain": _e(-0.1, 0.1)}
    assert smollm2_elicitation.verdict({**null, "auroc_gain": _e(0.05, 0.3)},
                                       Scale.SMALL) == "holds"
    assert smollm2_elicitation.verdict({**null, "auroc_gain": _e(-0.05, 0.05)},
                                       Scale.SMALL) == "inconclusive"
    assert smollm2_elicitation.verdict({**null, "auroc_gain": _e(-0.2, -0.05)},
                                       Scale.SMALL) == "fails"
    # a NaN AUROC (one class: nothing to rank) is a measurement not made, never holds
    assert smollm2_elicitation.verdict({**null, "auroc_gain": math.nan},
                                       Scale.SMALL) == "inconclusive"
    assert smollm2_elicitation.verdict({"shuffled_auroc_gain": math.nan,
                                        "auroc_gain": _e(0.05, 0.3)},
                                       Scale.SMALL) == "inconclusive"
