"""Smoke runs of the Chameleon claims and negative controls of their rules."""

import math

import numpy as np
import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.chameleon_mi.claims import (
    _paired_gain,
    adaptive_vs_fixed_poison,
    label_only_tpr,
)

VERDICTS = ("holds", "fails", "inconclusive")


@pytest.mark.parametrize("claim_obj,keys", [
    (label_only_tpr, {"gain_vs_aug", "gain_vs_gap", "ratio_vs_aug", "tpr_chameleon", "tpr_gap",
                      "tpr_aug", "auc_chameleon", "target_acc_poisoned"}),
    (adaptive_vs_fixed_poison, {"gain_vs_fixed1", "gain_vs_fixedmax", "tpr_adaptive",
                                "budget_adaptive"}),
], ids=lambda c: getattr(c, "name", ""))
def test_smoke_claim_runs(claim_obj, keys):
    m = claim_obj(Scale.SMOKE, 0)
    assert keys <= set(m.metrics)
    assert all(math.isfinite(v.value if isinstance(v, Estimate) else v)
               for v in m.metrics.values())
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in VERDICTS
    assert m.figure is not None


def _null_scores(seed=0, n=2400):
    rng = np.random.default_rng(seed)
    members = np.repeat([1, 0], n // 2)
    base = np.round(rng.random(n) * 8) / 8 + 0.05 * members  # a weak, tied baseline score
    return members, base


def test_negative_control_baseline_as_chameleon():
    members, base = _null_scores()
    cols = np.stack([base, base, base], axis=1)  # "Chameleon" = the augmentation attack
    gain = _paired_gain(cols, members, 0, 2, 0.01, 200, 0)
    assert gain.value == 0 and gain.low == 0 and gain.high == 0
    metrics = {"gain_vs_aug": gain, "gain_vs_gap": gain, "ratio_vs_aug": 1.0}
    assert label_only_tpr.verdict(metrics, "small") == "fails"


def test_negative_control_unselected_queries():
    # Chameleon with its key step removed behaves like a noisier copy of the baseline
    members, base = _null_scores(1)
    noisy = base + np.random.default_rng(2).normal(0, 0.01, base.size)
    gain = _paired_gain(np.stack([noisy, base, base], 1), members, 0, 2, 0.01, 300, 0)
    metrics = {"gain_vs_aug": gain, "gain_vs_gap": gain, "ratio_vs_aug": 1.0}
    assert label_only_tpr.verdict(metrics, "small") != "holds"


def test_negative_control_fixed_counts_as_adaptive():
    members, base = _null_scores(3)
    gain = _paired_gain(np.stack([base, base, base], 1), members, 0, 1, 0.01, 200, 0)
    assert adaptive_vs_fixed_poison.verdict(
        {"gain_vs_fixed1": gain, "gain_vs_fixedmax": gain}, "small") == "fails"


def test_rules_hold_on_a_real_separation():
    members, base = _null_scores(4)
    strong = members + np.random.default_rng(5).normal(0, 0.3, members.size)
    gain = _paired_gain(np.stack([strong, base, base], 1), members, 0, 2, 0.01, 200, 0)
    assert label_only_tpr.verdict({"gain_vs_aug": gain, "gain_vs_gap": gain,
                                   "ratio_vs_aug": 10.0}, "small") == "holds"
