"""Smoke runs of every claim and the negative controls of their rules."""

from __future__ import annotations

import math

from iclr24.claims import Estimate, Scale
from iclr24.papers.llm_confidence.claims import (
    consistency_auroc,
    pair_rank_recovery,
    smollm2_elicitation,
)


def _e(lo, hi):
    return Estimate((lo + hi) / 2, lo, hi, 3)


def test_consistency_auroc_smoke(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(consistency_auroc, ["ece_reduction", "vanilla_ece", "parse_rate",
                                              "vanilla_accuracy", "consistency_ece"])
    assert 0 <= m.metrics["parse_rate"] <= 1


def test_pair_rank_recovery_smoke(check_smoke_claim):
    m = check_smoke_claim(pair_rank_recovery, ["gain_m3", "gain_m5", "paper_err_m3",
                                               "official_minus_paper_m5", "freq_hit_m10"])
    assert 0 <= m.metrics["paper_hit_m3"] <= 1


def test_smollm2_elicitation_smoke(check_smoke_claim):
    m = check_smoke_claim(smollm2_elicitation, ["parse_rate", "verbalized_ece",
                                                "consistency_accuracy"])
    # an untrained byte model parses nothing: one class, no AUROC, and the rule cannot hold
    assert math.isnan(m.metrics["verbalized_auroc"])
    assert smollm2_elicitation.verdict(m.metrics, Scale.SMOKE) != "holds"


def test_negative_controls():
    # the verbalised baseline passed as "consistency": no gain, so no holds
    null = {"auroc_gain": _e(-0.01, 0.01), "ece_reduction": _e(-0.01, 0.01),
            "whitebox_gap": _e(-0.02, 0.02), "avg_conf_auroc_gain": _e(-0.01, 0.01)}
    assert consistency_auroc.verdict(null, Scale.SMALL) != "holds"
    # white-box far ahead of consistency: the "narrow gap" part fails
    wide = dict(null, auroc_gain=_e(0.1, 0.2), ece_reduction=_e(0.1, 0.2),
                whitebox_gap=_e(0.15, 0.25))
    assert consistency_auroc.verdict(wide, Scale.SMALL) == "fails"
    # Pair-Rank replaced by the top-1 frequency: zero gain
    zero = {"gain_m3": 0.0, "gain_m5": 0.0}
    assert pair_rank_recovery.verdict(zero, Scale.SMALL) == "fails"
    assert pair_rank_recovery.verdict({"gain_m3": _e(-0.01, 0.02), "gain_m5": _e(0.01, 0.02)},
                                      Scale.SMALL) == "inconclusive"
    assert smollm2_elicitation.verdict({"auroc_gain": _e(-0.05, 0.05)}, Scale.SMALL) != "holds"
    # a NaN AUROC (one class: nothing to rank) is a measurement not made, never holds
    assert smollm2_elicitation.verdict({"auroc_gain": math.nan}, Scale.SMALL) == "inconclusive"
