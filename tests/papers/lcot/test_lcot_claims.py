"""Smoke runs of the three LCOT claims, the data generator, and determinism."""

import math

import numpy as np
import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.lcot import EXPERIMENT2_CLASSES, angles_to_unit, experiment2_measures
from iclr24.papers.lcot.claims import classification, fidelity, speedup

RULE_METRICS = {
    "speedup": {"ratio"},
    "fidelity": {"spearman", "frac_lcot_ge_cot", "max_unif_gap"},
    "classification": {"acc_lcot", "acc_cot", "acc_hist_l2", "acc_lcot_logreg", "acc_hist_logreg",
                       "diff_lcot_cot", "diff_lcot_hist_l2", "diff_logreg_lcot_hist"},
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


def test_classification_rule_rejects_a_null_method():
    """Negative control: LCOT replaced by histogram L2 (the baseline passed as the method)
    gives a zero paired difference, which the strict `> 0` part refuses; a method worse than
    COT by more than 0.05 over the whole interval fails."""
    from iclr24.claims import seed_difference

    base = [0.92, 0.90, 0.93]
    null = {"diff_lcot_cot": seed_difference([0.9, 0.88, 0.9], [0.96, 0.95, 0.97]),
            "diff_lcot_hist_l2": seed_difference(base, base),
            "diff_logreg_lcot_hist": seed_difference(base, base)}
    assert classification.verdict(null, Scale.SMALL) == "fails"
    noisy = dict(null, diff_lcot_hist_l2=seed_difference([0.95, 0.90, 0.99], [0.94, 0.93, 0.92]))
    assert classification.verdict(noisy, Scale.SMALL) != "holds"
