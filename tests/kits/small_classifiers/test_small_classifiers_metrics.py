"""Score metrics of the small-classifier kit on hand-computed cases and against torchmetrics."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.small_classifiers import (
    expected_calibration_error,
    fpr_at_tpr,
    stratified_bootstrap,
    tpr_at_fpr,
)


def test_tpr_at_fpr_hand_computed():
    # negatives 0.1..0.4 (4), positives 0.35, 0.5, 0.6, 0.7
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.35, 0.5, 0.6, 0.7])
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    # threshold 0.5: TPR 3/4, FPR 0; threshold 0.4: TPR 3/4 with FPR 1/4; 0.35: TPR 1, FPR 1/4
    assert tpr_at_fpr(scores, labels, 0.1) == pytest.approx(0.75)
    assert tpr_at_fpr(scores, labels, 0.25) == pytest.approx(1.0)
    assert tpr_at_fpr(scores, labels, 0.24) == pytest.approx(0.75)


def test_tpr_at_fpr_ties_and_binary_scores():
    # a binary score (gap attack): one positive threshold with FPR 0.5 -> nothing below 10% FPR
    scores = np.array([1, 1, 0, 0, 1, 1, 1, 0], dtype=float)
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    assert tpr_at_fpr(scores, labels, 0.1) == 0.0
    assert tpr_at_fpr(scores, labels, 0.5) == pytest.approx(0.75)


def test_fpr_at_tpr_hand_computed():
    id_scores = np.arange(20, dtype=float)  # 0..19
    ood = np.array([0.5, 1.5, 10.5, 18.5])
    scores = np.concatenate([id_scores, ood])
    labels = np.concatenate([np.ones(20), np.zeros(4)])
    # keeping 95% of ID (19 of 20) needs threshold 1: OOD at 1.5, 10.5, 18.5 pass -> 3/4
    assert fpr_at_tpr(scores, labels, 0.95) == pytest.approx(0.75)
    # keeping 50% of ID (threshold 10) -> 2/4
    assert fpr_at_tpr(scores, labels, 0.5) == pytest.approx(0.5)


@settings(max_examples=40)
@given(st.integers(0, 10_000), st.sampled_from([0.01, 0.05, 0.1, 0.5, 0.95]),
       st.booleans())
def test_operating_points_match_sklearn_roc(seed, rate, ties):
    from sklearn.metrics import roc_curve

    rng = np.random.default_rng(seed)
    n = int(rng.integers(4, 200))
    s = rng.normal(size=n)
    if ties:
        s = np.round(s * 2) / 2  # few distinct values: heavy ties
    lab = rng.integers(0, 2, n)
    lab[:2] = [0, 1]
    f, t, _ = roc_curve(lab, s, drop_intermediate=False)
    assert tpr_at_fpr(s, lab, rate) == pytest.approx(t[f <= rate + 1e-12].max())
    assert fpr_at_tpr(s, lab, rate) == pytest.approx(f[t >= rate - 1e-12].min())


@settings(max_examples=30)
@given(st.integers(0, 10_000))
def test_rates_are_monotone_and_bounded(seed):
    rng = np.random.default_rng(seed)
    s = rng.normal(size=60)
    lab = rng.integers(0, 2, 60)
    lab[:2] = [0, 1]
    a, b = tpr_at_fpr(s, lab, 0.1), tpr_at_fpr(s, lab, 0.3)
    assert 0 <= a <= b <= 1
    f1, f2 = fpr_at_tpr(s, lab, 0.5), fpr_at_tpr(s, lab, 0.9)
    assert 0 <= f1 <= f2 <= 1
    # a perfectly separating score: TPR 1 at any FPR, FPR 0 at any TPR
    sep = np.where(lab == 1, 10.0, -10.0) + s * 1e-3
    assert tpr_at_fpr(sep, lab, 0.01) == 1.0 and fpr_at_tpr(sep, lab, 0.99) == 0.0


def test_rate_errors():
    s, lab = np.array([0.1, 0.9]), np.array([0, 1])
    for bad in (0.0, 1.0, -0.1, 1.5, True):
        with pytest.raises(ValueError, match="fpr must be a number in \\(0, 1\\)"):
            tpr_at_fpr(s, lab, bad)
        with pytest.raises(ValueError, match="tpr must be a number in \\(0, 1\\)"):
            fpr_at_tpr(s, lab, bad)
    with pytest.raises(ValueError, match="both positives"):
        tpr_at_fpr(s, np.array([1, 1]), 0.1)
    with pytest.raises(ValueError, match="binary"):
        tpr_at_fpr(s, np.array([0, 2]), 0.1)
    with pytest.raises(ValueError, match="shape"):
        tpr_at_fpr(s, np.array([0, 1, 1]), 0.1)


def test_ece_hand_computed():
    # 4 samples, 2 bins: conf 0.6 (correct), 0.6 (wrong) -> bin 1 acc 0.5 conf 0.6;
    # conf 0.9 (correct) x2 -> bin 1 too with n_bins=2 (0.5 <= c < 1)
    probs = np.array([[0.6, 0.4], [0.6, 0.4], [0.9, 0.1], [0.1, 0.9]])
    labels = np.array([0, 1, 0, 1])
    # n_bins=2: all in [0.5, 1): acc 3/4, conf 0.75 -> ECE 0
    assert expected_calibration_error(probs, labels, n_bins=2) == pytest.approx(0.0)
    # n_bins=10: bin [0.6,0.7): acc 0.5 conf 0.6 weight 1/2; bin [0.9,1): acc 1 conf 0.9 w 1/2
    assert expected_calibration_error(probs, labels, n_bins=10) == pytest.approx(0.1)


@settings(max_examples=25)
@given(st.integers(0, 10_000), st.sampled_from([1, 5, 15]))
def test_ece_matches_torchmetrics(seed, n_bins):
    import torch

    tm = pytest.importorskip("torchmetrics.functional.classification")  # a dev dependency
    multiclass_calibration_error = tm.multiclass_calibration_error

    rng = np.random.default_rng(seed)
    logits = rng.normal(size=(200, 4)) * 3
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    probs[:3] = np.eye(4)[:3]  # confidence exactly 1 goes to its own bin in both
    labels = rng.integers(0, 4, 200)
    ref = multiclass_calibration_error(torch.tensor(probs), torch.tensor(labels), num_classes=4,
                                       n_bins=n_bins, norm="l1")
    assert expected_calibration_error(probs, labels, n_bins) == pytest.approx(float(ref),
                                                                              abs=1e-6)


def test_ece_errors():
    with pytest.raises(ValueError, match="probs must be a non-empty 2-D"):
        expected_calibration_error(np.ones(3), np.zeros(3, int))
    with pytest.raises(ValueError, match="labels must lie"):
        expected_calibration_error(np.full((2, 2), 0.5), np.array([0, 2]))
    with pytest.raises(ValueError, match="n_bins"):
        expected_calibration_error(np.full((2, 2), 0.5), np.array([0, 1]), n_bins=0)


def test_stratified_bootstrap_keeps_class_counts_and_covers_value():
    rng = np.random.default_rng(0)
    s = np.concatenate([rng.normal(1, 1, 100), rng.normal(0, 1, 300)])
    lab = np.concatenate([np.ones(100, int), np.zeros(300, int)])
    seen = []

    def stat(sc, lb):
        seen.append(int(lb.sum()))
        return float(sc[lb == 1].mean() - sc[lb == 0].mean())

    v, lo, hi = stratified_bootstrap(s, lab, stat, n_resamples=200, seed=1)
    assert set(seen) == {100}
    assert lo <= v <= hi and lo > 0.6 and hi < 1.4
    assert stratified_bootstrap(s, lab, stat, n_resamples=200, seed=1) == (v, lo, hi)
    with pytest.raises(ValueError, match="n_resamples"):
        stratified_bootstrap(s, lab, stat, n_resamples=5)


def test_stratified_bootstrap_paired_columns():
    rng = np.random.default_rng(2)
    lab = np.repeat([1, 0], 50)
    a = rng.normal(size=100) + lab
    both = np.stack([a, a + 0.01], axis=1)  # column 1 = column 0 shifted: paired diff is exact

    def diff(sc, lb):
        return float(sc[:, 1].mean() - sc[:, 0].mean())

    v, lo, hi = stratified_bootstrap(both, lab, diff, n_resamples=100)
    assert v == pytest.approx(0.01) and lo == pytest.approx(0.01) and hi == pytest.approx(0.01)
