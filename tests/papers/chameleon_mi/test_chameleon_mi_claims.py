"""Smoke runs of the Chameleon claims, their null arms (negative controls) and their rules."""

import math

import numpy as np
import pytest

from iclr24.claims import Estimate, Scale, seed_difference
from iclr24.papers.chameleon_mi.claims import (
    _config,
    _label_only_measurement,
    _null_does_not_pass,
    _ratio,
    adaptive_vs_fixed_poison,
    label_only_tpr,
)

VERDICTS = ("holds", "fails", "inconclusive")


@pytest.fixture(scope="module")
def smoke():
    return {c.name: c(Scale.SMOKE, 0) for c in (label_only_tpr, adaptive_vs_fixed_poison)}


def _value(v):
    return v.value if isinstance(v, Estimate) else v


@pytest.mark.parametrize("claim_obj,keys", [
    (label_only_tpr, {"gain_vs_aug", "gain_vs_gap", "ratio_vs_aug", "tpr_chameleon", "tpr_gap",
                      "tpr_aug", "auc_chameleon", "target_acc_poisoned", "tpr_nopoison",
                      "nopoison_gain_vs_aug", "nopoison_gain_vs_gap", "nopoison_ratio_vs_aug"}),
    (adaptive_vs_fixed_poison, {"gain_vs_fixed1", "gain_vs_fixedmax", "tpr_adaptive",
                                "budget_adaptive", "tpr_shuffled", "shuffled_gain_vs_fixed1",
                                "shuffled_gain_vs_fixedmax", "budget_shuffled"}),
], ids=lambda c: getattr(c, "name", ""))
def test_smoke_claim_runs(smoke, claim_obj, keys):
    m = smoke[claim_obj.name]
    assert keys <= set(m.metrics)
    assert all(math.isfinite(_value(v)) for v in m.metrics.values())
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in VERDICTS
    assert m.figure is not None
    assert m.metrics["replicates"] == _config(Scale.SMOKE)["replicates"]


def test_shuffled_counts_spend_the_adaptive_budget(smoke):
    m = smoke[adaptive_vs_fixed_poison.name].metrics
    assert m["budget_shuffled"] == m["budget_adaptive"]
    assert m["budget_fixedmax"] >= m["budget_adaptive"]


def _substitute(metrics, mapping):
    out = dict(metrics)
    out.update({k: metrics[v] for k, v in mapping.items()})
    return out


def test_negative_control_no_poison_arm_at_smoke(smoke):
    # the null arm measured in the run (neighbourhood queries, poisoning off) judged as Chameleon
    m = smoke[label_only_tpr.name].metrics
    null = _substitute(m, {"gain_vs_aug": "nopoison_gain_vs_aug",
                           "gain_vs_gap": "nopoison_gain_vs_gap",
                           "ratio_vs_aug": "nopoison_ratio_vs_aug"})
    assert label_only_tpr.verdict(null, Scale.SMOKE) != "holds"


def test_negative_control_shuffled_counts_at_smoke(smoke):
    m = smoke[adaptive_vs_fixed_poison.name].metrics
    null = _substitute(m, {"gain_vs_fixed1": "shuffled_gain_vs_fixed1",
                           "gain_vs_fixedmax": "shuffled_gain_vs_fixedmax"})
    assert adaptive_vs_fixed_poison.verdict(null, Scale.SMOKE) != "holds"


def test_control_makes_a_passing_null_inconclusive():
    good = seed_difference([0.5, 0.6, 0.55], [0.05, 0.06, 0.04])
    bad = seed_difference([0.05, 0.06, 0.04], [0.05, 0.06, 0.05])
    base = {"gain_vs_aug": good, "gain_vs_gap": good, "ratio_vs_aug": 10.0,
            "nopoison_gain_vs_aug": bad, "nopoison_gain_vs_gap": bad,
            "nopoison_ratio_vs_aug": 1.0}
    assert label_only_tpr.verdict(base, "small") == "holds"
    passing_null = {**base, "nopoison_gain_vs_aug": good, "nopoison_gain_vs_gap": good,
                    "nopoison_ratio_vs_aug": 10.0}
    assert label_only_tpr.verdict(passing_null, "small") == "inconclusive"
    worse = seed_difference([0.01, 0.02, 0.01], [0.3, 0.35, 0.32])
    assert label_only_tpr.verdict({**base, "gain_vs_aug": worse}, "small") == "fails"
    # an interval over seeds that straddles 0 does not hold
    assert label_only_tpr.verdict({**base, "gain_vs_aug": bad}, "small") != "holds"
    abl = {"gain_vs_fixed1": good, "gain_vs_fixedmax": good,
           "shuffled_gain_vs_fixed1": bad, "shuffled_gain_vs_fixedmax": good}
    assert adaptive_vs_fixed_poison.verdict(abl, "small") == "holds"
    assert adaptive_vs_fixed_poison.verdict(
        {**abl, "shuffled_gain_vs_fixed1": good}, "small") == "inconclusive"
    # one seed's interval-free difference of 0 does not pass "> 0"
    assert adaptive_vs_fixed_poison.verdict({**abl, "gain_vs_fixed1": 0.0}, "small") == "fails"


def test_ratio_floors_the_denominator():
    assert _ratio([0.3, 0.5], [0.1, 0.1], 0.01) == pytest.approx(4.0)
    assert _ratio([0.3], [0.0], 0.01) == pytest.approx(30.0)


def _synthetic_run(rng, chameleon_strength, n_points=24, n_targets=10):
    members = np.tile(np.repeat([1, 0], n_points // 2), n_targets)
    weak = rng.normal(0, 1, members.size) + 0.3 * members
    strong = rng.normal(0, 1, members.size) + chameleon_strength * members
    return {"scores": {"chameleon": strong, "gap": (weak > 0).astype(float),
                       "augmentation": weak, "nopoison": weak + rng.normal(0, 0.1, weak.size)},
            "members": members, "counts": np.ones(n_points, int), "acc_poisoned": 0.9,
            "acc_clean": 0.92, "neighbourhood": 10.0}


def test_measurement_over_replicates_separates_method_and_null():
    cfg = {**_config(Scale.SMOKE), "replicates": 3}
    rng = np.random.default_rng(0)
    strong = _label_only_measurement(cfg, [_synthetic_run(rng, 4.0) for _ in range(3)])
    assert isinstance(strong.metrics["gain_vs_aug"], Estimate)
    assert strong.metrics["gain_vs_aug"].n == 3
    assert label_only_tpr.verdict(strong.metrics, "small") == "holds"
    # Chameleon's column carrying no more membership signal than the baseline: not holds
    rng = np.random.default_rng(1)
    null = _label_only_measurement(cfg, [_synthetic_run(rng, 0.3) for _ in range(3)])
    assert label_only_tpr.verdict(null.metrics, "small") != "holds"


def test_null_does_not_pass_reads_the_prefixed_metrics():
    control = _null_does_not_pass("a_b > 0 and c >= 3", "null_")
    assert "null_a_b > 0 and null_c >= 3" in control.__doc__
    straddle = Estimate(0.0, -0.1, 0.1, 3, 0.95, "t")
    up = Estimate(0.2, 0.1, 0.3, 3, 0.95, "t")
    assert control({"a_b": up, "c": 9.0, "null_a_b": up, "null_c": 9.0}) is False
    assert control({"null_a_b": straddle, "null_c": 9.0}) is True  # unknown is "not passing"
    assert control({"null_a_b": up, "null_c": 1.0}) is True
