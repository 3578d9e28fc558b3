"""SATProbe, risk_at and evaluate_predictors against hand-computed cases and scikit-learn."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from sklearn.base import clone
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from iclr24.papers.sat_probe import SATProbe, evaluate_predictors, risk_at


def test_risk_at_hand_computed():
    y = [1, 1, 0, 0, 1]
    s = [0.9, 0.8, 0.7, 0.1, 0.2]
    assert risk_at(y, s, 0.4, "top") == 0.0  # 0.9, 0.8: both correct
    assert risk_at(y, s, 0.4, "bottom") == 0.5  # 0.1 wrong, 0.2 right
    assert risk_at(y, s, 0.6, "top") == pytest.approx(1 / 3)
    assert risk_at(y, s, 0.01, "bottom") == 1.0  # k = max(1, ...) = 1: the 0.1 item
    assert risk_at(y, s, 1.0) == pytest.approx(0.4)


def test_risk_at_ties_give_the_expected_error_rate():
    # constant score: exactly the base error rate, on either side
    y = [1, 0, 0, 1, 1, 1, 0, 1, 1, 1]
    assert risk_at(y, np.zeros(10), 0.2, "top") == pytest.approx(0.3)
    assert risk_at(y, np.zeros(10), 0.2, "bottom") == pytest.approx(0.3)
    # one item above the cut, three tied for the one remaining slot
    assert risk_at([1, 0, 1, 0], [2, 1, 1, 1], 0.5, "top") == pytest.approx((0 + 2 / 3) / 2)


@given(st.lists(st.booleans(), min_size=5, max_size=40), st.integers(0, 10 ** 6))
def test_risk_at_matches_sorting_when_scores_are_distinct(labels, seed):
    y = np.array(labels, dtype=int)
    s = np.random.default_rng(seed).permutation(y.size).astype(float)
    k = max(1, round(0.2 * y.size))
    top = np.argsort(-s)[:k]
    assert risk_at(y, s, 0.2, "top") == pytest.approx(1 - y[top].mean())
    bottom = np.argsort(s)[:k]
    assert risk_at(y, s, 0.2, "bottom") == pytest.approx(1 - y[bottom].mean())


def test_risk_at_bad_inputs():
    with pytest.raises(ValueError, match="frac"):
        risk_at([1, 0], [1, 2], 0)
    with pytest.raises(ValueError, match="side"):
        risk_at([1, 0], [1, 2], side="middle")
    with pytest.raises(ValueError, match="equal"):
        risk_at([1, 0], [1, 2, 3])
    with pytest.raises(ValueError, match="0/1"):
        risk_at([1, 2], [1, 2])


def _data(n=200, n_layers=3, n_heads=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, n_layers * n_heads))
    y = (x[:, 1 * n_heads + 2] + 0.3 * rng.normal(size=n) > 0).astype(int)  # layer 1, head 2
    return x, y


def test_probe_is_the_official_pipeline():
    x, y = _data()
    probe = SATProbe().fit(x, y)
    ref = make_pipeline(StandardScaler(), LogisticRegression(l1_ratio=1.0, solver="liblinear",
                                                             C=0.05, max_iter=1000,
                                                             random_state=0)).fit(x, y)
    np.testing.assert_allclose(probe.predict_proba(x), ref.predict_proba(x))
    np.testing.assert_array_equal(probe.predict(x), ref.predict(x))
    # L1 at C = 0.05: the informative head keeps its weight, most others are exactly zero
    assert np.argmax(np.abs(probe.coef_)) == 1 * 4 + 2
    assert np.sum(probe.coef_ == 0) >= 8
    assert clone(probe).get_params() == probe.get_params()


def test_probe_layers_select_their_columns():
    x, y = _data()
    early = SATProbe(layers=[0], n_heads=4).fit(x, y)
    right = SATProbe(layers=[1], n_heads=4).fit(x, y)
    assert roc_auc_score(y, right.predict_proba(x)[:, 1]) > 0.9
    assert roc_auc_score(y, early.predict_proba(x)[:, 1]) < 0.7
    np.testing.assert_array_equal(right.columns_, [4, 5, 6, 7])
    ref = SATProbe().fit(x[:, 4:8], y)
    np.testing.assert_allclose(right.predict_proba(x), ref.predict_proba(x[:, 4:8]))


def test_probe_bad_inputs():
    x, y = _data()
    with pytest.raises(ValueError, match="both classes"):
        SATProbe().fit(x, np.ones_like(y))
    with pytest.raises(ValueError, match="C must be"):
        SATProbe(C=0).fit(x, y)
    with pytest.raises(ValueError, match="n_heads"):
        SATProbe(layers=[0]).fit(x, y)
    with pytest.raises(ValueError, match="layers"):
        SATProbe(layers=[3], n_heads=4).fit(x, y)
    with pytest.raises(ValueError, match="2-D"):
        SATProbe().fit(x[0], y)
    with pytest.raises(ValueError, match="columns"):
        SATProbe().fit(x, y).predict_proba(x[:, :5])


def test_evaluate_predictors_rows_and_baselines():
    x, y = _data(seed=1)
    rng = np.random.default_rng(2)
    conf = y + rng.normal(scale=2.0, size=y.size)  # a weaker, noisy confidence
    pop = rng.normal(size=y.size)  # unrelated popularity
    df = evaluate_predictors(x, conf, pop, y, seed=0, extra_probes={"control": x[:, :4]})
    assert list(df.index) == ["sat_probe", "confidence", "popularity", "constant", "combined",
                              "control"]
    _, test = train_test_split(np.arange(y.size), test_size=0.5, stratify=y, random_state=0)
    assert df.attrs["n_test"] == test.size
    assert df.attrs["base_rate"] == pytest.approx(y[test].mean())
    assert df.loc["confidence", "auroc"] == pytest.approx(roc_auc_score(y[test], conf[test]))
    assert df.loc["constant", "auroc"] == 0.5
    assert df.loc["constant", "risk_top20"] == pytest.approx(1 - y[test].mean())
    assert df.loc["sat_probe", "auroc"] > 0.9 > df.loc["control", "auroc"]
    assert df.loc["sat_probe", "risk_top20"] < df.loc["sat_probe", "risk_bottom20"]
    assert abs(df.loc["popularity", "auroc"] - 0.5) < 0.15
    assert "popularity" not in evaluate_predictors(x, conf, None, y).index


def test_evaluate_predictors_one_class_and_bad_inputs():
    x, y = _data()
    df = evaluate_predictors(x, np.zeros(len(y)), None, np.zeros(len(y), dtype=int))
    assert df["auroc"].isna().all() and df.attrs["base_rate"] == 0.0
    with pytest.raises(ValueError, match="confidence"):
        evaluate_predictors(x, np.zeros(3), None, y)
    with pytest.raises(ValueError, match="popularity"):
        evaluate_predictors(x, np.zeros(len(y)), np.full(len(y), math.nan), y)
    with pytest.raises(ValueError, match="y must"):
        evaluate_predictors(x, np.zeros(len(y)), None, y[:-1])
    with pytest.raises(ValueError, match="extra_probes"):
        evaluate_predictors(x, np.zeros(len(y)), None, y, extra_probes={"c": x[:5]})


def _signal_data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = (rng.random(n) < 0.5).astype(int)
    X = rng.normal(size=(n, 6))
    X[:, 0] += 1.5 * y  # one informative column
    conf = rng.normal(size=n) + y
    pop = rng.normal(size=n)
    return X, y, conf, pop


def test_cross_fitted_scores_are_out_of_fold():
    from sklearn.model_selection import StratifiedKFold

    from iclr24.papers.sat_probe import cross_fitted_scores

    X, y, conf, pop = _signal_data()
    out = cross_fitted_scores(X, conf, pop, y, n_folds=4, seed=3,
                              extra_probes={"noise": X[:, 1:]})
    assert list(out) == ["sat_probe", "confidence", "popularity", "constant", "combined",
                         "noise"]
    np.testing.assert_array_equal(out["confidence"], conf)
    assert np.ptp(out["constant"]) == 0
    # each fold's items scored by a probe fitted on the other folds only (same as by hand)
    train, test = next(StratifiedKFold(4, shuffle=True, random_state=3).split(X, y))
    probe = SATProbe().fit(X[train], y[train])
    np.testing.assert_allclose(out["sat_probe"][test], probe.predict_proba(X[test])[:, 1])
    assert roc_auc_score(y, out["sat_probe"]) > 0.75  # the informative column
    assert roc_auc_score(y, out["noise"]) < 0.65  # noise only
    # too few items of a class: folds shrink to that count; below 2, all NaN
    y3 = np.zeros(120, int)
    y3[:3] = 1
    assert np.isfinite(cross_fitted_scores(X, conf, None, y3, n_folds=5)["sat_probe"]).all()
    y1 = np.zeros(120, int)
    y1[0] = 1
    assert np.isnan(cross_fitted_scores(X, conf, None, y1)["sat_probe"]).all()
    with pytest.raises(ValueError, match="n_folds"):
        cross_fitted_scores(X, conf, pop, y, n_folds=1)
    with pytest.raises(ValueError, match="confidence"):
        cross_fitted_scores(X, conf[:5], pop, y)


def test_bootstrap_aurocs_stratified_and_paired():
    from iclr24.papers.sat_probe import bootstrap_aurocs

    X, y, conf, _ = _signal_data(200)
    # 4 right of 200: a plain bootstrap would often lose the class, a stratified one never
    y_rare = np.zeros(200, int)
    y_rare[:4] = 1
    d = bootstrap_aurocs(y_rare, {"s": X[:, 0]}, n_resamples=300, seed=0)
    assert np.isfinite(d["s"]).all()
    draws = bootstrap_aurocs(y, {"a": X[:, 0], "b": X[:, 0].copy(), "conf": conf},
                             n_resamples=500, seed=1)
    # paired: the same items for every predictor, so a − a is exactly 0 in every resample
    np.testing.assert_array_equal(draws["a"], draws["b"])
    # centred on the full-sample AUROC, with a spread of the order of its standard error
    full = roc_auc_score(y, X[:, 0])
    assert abs(np.median(draws["a"]) - full) < 0.02 and 0.01 < draws["a"].std() < 0.06
    assert np.isnan(bootstrap_aurocs(y, {"x": np.full(200, np.nan)}, n_resamples=5)["x"]).all()
    with pytest.raises(ValueError, match="both classes"):
        bootstrap_aurocs(np.zeros(10, int), {"x": np.arange(10.0)})
    with pytest.raises(ValueError, match="shape"):
        bootstrap_aurocs(y, {"x": np.arange(5.0)})
    with pytest.raises(ValueError, match="n_resamples"):
        bootstrap_aurocs(y, {"x": conf}, n_resamples=0)
