"""Smoke runs of the three LCOT claims, their null arms, the data generator, and determinism."""

import math

import numpy as np
import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.lcot import EXPERIMENT2_CLASSES, angles_to_unit, experiment2_measures
from iclr24.papers.lcot.baselines import cot_pairwise, ot_interval_pairwise
from iclr24.papers.lcot.claims import (
    _classification,
    _fidelity,
    _ot_cut_geometry,
    _speedup,
    classification,
    fidelity,
    speedup,
)

RULE_METRICS = {
    "speedup": {"ratio", "ratio_batched", "max_rel_gap"},
    "fidelity": {"spearman", "frac_lcot_ge_cot", "max_unif_gap", "cut_spearman",
                 "cut_frac_ge_cot", "cut_max_unif_gap"},
    "classification": {"acc_lcot", "acc_cot", "acc_ot_cut", "acc_hist_l2", "acc_lcot_shuffled",
                       "acc_lcot_logreg", "acc_hist_logreg", "diff_lcot_cot", "diff_lcot_ot_cut",
                       "diff_lcot_hist_l2", "diff_cot_ot_cut", "diff_cot_hist_l2",
                       "diff_logreg_lcot_hist"},
}


@pytest.mark.parametrize("claim_obj", [speedup, fidelity, classification], ids=lambda c: c.name)
def test_smoke_claim_runs(claim_obj):
    m = claim_obj(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert RULE_METRICS[claim_obj.name] <= set(m.metrics)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert claim_obj.verdict(m.metrics, Scale.SMALL) in ("holds", "fails", "inconclusive")
    assert m.figure is not None


def test_fidelity_is_deterministic():
    a = fidelity(Scale.SMOKE, 3).metrics
    b = fidelity(Scale.SMOKE, 3).metrics
    assert a == b


def test_experiment2_generator():
    ms, y = experiment2_measures(5, seed=1)
    assert len(ms) == 30 and y.shape == (30,)
    assert np.array_equal(np.bincount(y), [5] * len(EXPERIMENT2_CLASSES))
    assert all(50 <= m.size <= 100 and m.min() >= 0 and m.max() < 1 for m in ms)
    ms2, y2 = experiment2_measures(5, seed=1)
    assert np.array_equal(y, y2)
    assert all(np.array_equal(a, b) for a, b in zip(ms, ms2))
    ms3, _ = experiment2_measures(5, seed=2)
    assert not np.array_equal(ms[0], ms3[0])
    # class 0 is a single von Mises bump at theta = 0, i.e. t = 1/2
    assert abs(np.mean(ms[0]) - 0.5) < 0.1
    with pytest.raises(ValueError, match="n_per_class must be >= 1"):
        experiment2_measures(0)
    with pytest.raises(TypeError, match="n_per_class must be an int"):
        experiment2_measures(2.5)


def test_angles_to_unit():
    t = angles_to_unit(np.array([-np.pi, 0.0, np.pi, 3 * np.pi / 2, -1e-18 - np.pi]))
    assert np.allclose(t, [0.0, 0.5, 0.0, 0.25, 0.0])
    assert np.all((t >= 0) & (t < 1))


def test_speedup_null_arms_do_not_hold():
    """The sceptic's nulls for a speed-up, run at smoke in place of LCOT: a stand-in that returns
    zeros fast is caught by the control (inconclusive), and COT itself - POT's batched search
    timed as "the method" - is no faster than the batched baseline, so the rule fails."""
    zeros = _speedup(Scale.SMOKE, 0, all_pairs=lambda v, w, n: np.zeros((v.shape[0],) * 2))
    judged = speedup.judge(zeros.metrics, Scale.SMOKE)
    assert judged.verdict == "inconclusive" and "test bed cannot tell" in judged.reason
    as_cot = _speedup(Scale.SMOKE, 0,
                      all_pairs=lambda v, w, n: cot_pairwise(list(zip(v, w)), batched=True))
    assert speedup.judge(as_cot.metrics, Scale.SMOKE).verdict == "fails"


def test_fidelity_null_arm_does_not_hold():
    """OT cut at 0 scored in LCOT's place fails the rule (it does not equal COT at the uniform
    reference), and in the real run the same null, measured beside LCOT, keeps the control true."""
    null = _fidelity(Scale.SMOKE, 0, geometry=_ot_cut_geometry)
    assert fidelity.judge(null.metrics, Scale.SMOKE).verdict == "fails"
    real = fidelity(Scale.SMOKE, 0).metrics
    assert real["cut_max_unif_gap"] > 1e-3 >= real["max_unif_gap"]
    assert fidelity.judge(real, Scale.SMOKE).verdict == "holds"


def test_classification_null_arms_do_not_hold():
    """LCOT's 5-NN distances replaced by OT cut at 0 (the optimal rotation switched off) give a
    zero difference to the cut, which the strict `> 0` refuses; shuffled labels stay near
    chance (1/6), so the control's leak check passes."""
    null = _classification(Scale.SMOKE, 0, method_distances=ot_interval_pairwise)
    assert null.metrics["diff_lcot_ot_cut"] == 0.0
    assert classification.judge(null.metrics, Scale.SMOKE).verdict != "holds"
    assert null.metrics["acc_lcot_shuffled"] <= 0.4


def test_classification_control_on_a_test_bed_that_cannot_tell():
    """When COT (the positive control) does not beat the cut, the verdict is inconclusive, not
    holds or fails, whatever LCOT's own differences say."""
    from iclr24.claims import Estimate, seed_difference

    good = [0.95, 0.96, 0.97]
    metrics = {"diff_lcot_cot": seed_difference(good, good),
               "diff_lcot_ot_cut": seed_difference(good, [0.90, 0.91, 0.90]),
               "diff_lcot_hist_l2": seed_difference(good, [0.80, 0.82, 0.81]),
               "diff_logreg_lcot_hist": seed_difference(good, good),
               "acc_lcot_shuffled": Estimate.mean_of([0.18, 0.15, 0.17]),
               "diff_cot_ot_cut": seed_difference(good, [0.96, 0.95, 0.97]),
               "diff_cot_hist_l2": seed_difference(good, [0.80, 0.82, 0.81])}
    judged = classification.judge(metrics, Scale.SMALL)
    assert judged.verdict == "inconclusive" and "test bed cannot tell" in judged.reason
    metrics["diff_cot_ot_cut"] = seed_difference(good, [0.90, 0.91, 0.90])
    assert classification.judge(metrics, Scale.SMALL).verdict == "holds"
