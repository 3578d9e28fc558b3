"""The abstention IP (both solvers), the feasibility program, the wrapper and the reports."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.fair_abstain import (
    FairAbstainer,
    abstention_report,
    assign_within_cells,
    disparity_accepted_only,
    disparity_full_group,
    fit_surrogate,
    make_fairness_data,
    min_abstention_dp_closed_form,
    min_feasible_abstention,
    per_group_confidence_abstention,
    solve_abstention_ip,
)


@pytest.fixture(scope="module")
def sample():
    from sklearn.linear_model import LogisticRegression

    X, y, z = make_fairness_data(1200, 0)
    base = LogisticRegression().fit(X[:600], y[:600])
    s = base.predict_proba(X)[:, 1]
    return X, y, z, s, (s >= 0.5).astype(np.int64), base


@pytest.mark.parametrize("fairness", ["dp", "eop", "eod"])
@pytest.mark.parametrize("flip", [True, False])
def test_both_solvers_reach_the_same_optimum_at_n400(sample, fairness, flip):
    _, y, z, s, yhat, _ = sample
    # abstention alone needs a larger budget than abstention + flips: just above its minimum
    d = 0.2 if flip else min(1.0, min_feasible_abstention(
        y[:400], yhat[:400], z[:400], fairness=fairness, epsilon=0.02) + 0.02)
    kw = {"fairness": fairness, "epsilon": 0.02, "delta": d, "allow_flip": flip}
    a = solve_abstention_ip(y[:400], yhat[:400], z[:400], s[:400], **kw)
    b = solve_abstention_ip(y[:400], yhat[:400], z[:400], s[:400], solver="per_sample", **kw)
    assert a.feasible and b.feasible
    assert a.objective == pytest.approx(b.objective)
    # the counts solution's objective is the error count of its own w, h
    errs = np.sum((a.w == 1) & (a.h != y[:400]))
    assert errs == pytest.approx(a.objective)
    if not flip:
        assert np.all(a.h == yhat[:400]) and np.all(b.h == yhat[:400])


def test_solution_meets_the_constraints(sample):
    _, y, z, s, yhat, _ = sample
    eps, delta = 0.05, (0.5, 0.7)
    r = solve_abstention_ip(y, yhat, z, s, epsilon=eps, delta=delta, allow_flip=False)
    pred = np.where(r.w == 1, r.h, -1)
    assert disparity_full_group(y, pred, z, "dp") <= eps + 1e-12
    for g in (0, 1):
        m = z == g
        assert np.mean(r.w[m] == 0) <= delta[g] + 1e-12
        acc = m & (r.w == 1)
        assert np.mean(pred[acc] != y[acc]) <= np.mean(yhat[m] != y[m]) + 1e-12


def test_infeasible_is_a_status(sample):
    _, y, z, s, yhat, _ = sample
    r = solve_abstention_ip(y, yhat, z, s, epsilon=0.0, delta=0.0, allow_flip=False)
    assert r.status == "infeasible" and r.w is None and not r.feasible
    with pytest.raises(ValueError, match="infeasible"):
        FairAbstainer(sample[5], epsilon=0.0, delta=0.0, allow_flip=False).fit(
            sample[0][:600], y[:600], z[:600])


def test_min_feasible_abstention_is_exact(sample):
    _, y, z, s, yhat, _ = sample
    d = min_feasible_abstention(y, yhat, z, epsilon=0.02)
    assert 0 < d < 1
    ok = solve_abstention_ip(y, yhat, z, s, epsilon=0.02, delta=d + 1e-6, allow_flip=False)
    bad = solve_abstention_ip(y, yhat, z, s, epsilon=0.02, delta=max(d - 0.01, 0),
                              allow_flip=False)
    assert ok.feasible and not bad.feasible
    assert min_feasible_abstention(y, yhat, z, epsilon=1.0) == 0.0


def test_within_cell_order():
    y = np.array([1, 1, 1, 1])
    yhat = np.array([1, 1, 1, 1])
    g = np.zeros(4, int)
    s = np.array([0.9, 0.55, 0.7, 0.99])
    counts = {(0, 1, 1): (4, 2, 1)}  # 1 abstains, 1 flips, 2 keep
    w, h = assign_within_cells(y, yhat, g, s, counts, "boundary")
    assert w.tolist() == [1, 0, 1, 1] and h.tolist() == [1, 1, 0, 1]
    w, h = assign_within_cells(y, yhat, g, s, counts, "official")
    assert w.tolist() == [1, 0, 1, 1]  # raw ascending: 0.55 first too
    with pytest.raises(ValueError, match="order"):
        assign_within_cells(y, yhat, g, s, counts, "random")


def test_disparities_are_named_apart():
    y = np.array([1, 0, 1, 0, 1, 0, 1, 0])
    g = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    pred = np.array([1, -1, -1, -1, 1, 0, 1, 0])
    # full group: g0 positives 1/4, g1 2/4 -> 0.25; accepted only: g0 1/1, g1 2/4 -> 0.5
    assert disparity_full_group(y, pred, g, "dp") == pytest.approx(0.25)
    assert disparity_accepted_only(y, pred, g, "dp") == pytest.approx(0.5)
    # EOp over y = 1: full g0 1/2, g1 2/2 -> 0.5; accepted g0 1/1, g1 2/2 -> 0
    assert disparity_full_group(y, pred, g, "eop") == pytest.approx(0.5)
    assert disparity_accepted_only(y, pred, g, "eop") == pytest.approx(0.0)
    rep = abstention_report(y, pred, g)
    assert rep.loc["group_0", "abstention_rate"] == 0.75
    assert rep.loc["group_0", "positive_rate_full"] == 0.25
    assert rep.loc["group_0", "positive_rate_accepted"] == 1.0
    assert rep.loc["overall", "n"] == 8


def test_bad_input_errors(sample):
    _, y, z, s, yhat, _ = sample
    with pytest.raises(ValueError, match="binary group column"):
        solve_abstention_ip(y, yhat, np.where(z == 1, 2, 0), s)
    with pytest.raises(ValueError, match="delta must lie in \\[0.0, 1.0\\]"):
        solve_abstention_ip(y, yhat, z, s, delta=1.2)
    with pytest.raises(ValueError, match="delta must lie"):
        solve_abstention_ip(y, yhat, z, s, delta=(-0.1, 0.2))
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        solve_abstention_ip(y, yhat, z, s, epsilon=-0.01)
    with pytest.raises(ValueError, match="fairness"):
        solve_abstention_ip(y, yhat, z, s, fairness="parity")
    with pytest.raises(ValueError, match="solver"):
        solve_abstention_ip(y, yhat, z, s, solver="greedy")
    with pytest.raises(ValueError, match="group 1 has no samples"):
        solve_abstention_ip(y, yhat, np.zeros_like(z), s)


def test_confidence_baseline_rates():
    s = np.linspace(0, 1, 20)
    g = np.repeat([0, 1], 10)
    pred = per_group_confidence_abstention(s, g, (0.2, 0.5))
    assert np.sum(pred[g == 0] == -1) == 2 and np.sum(pred[g == 1] == -1) == 5
    # the abstained are the closest to 0.5 in their group
    kept = np.abs(s - 0.5)[(g == 1) & (pred != -1)]
    gone = np.abs(s - 0.5)[(g == 1) & (pred == -1)]
    assert gone.max() <= kept.min()


def test_fair_abstainer_end_to_end(sample):
    X, y, z, _s, _yhat, base = sample
    fan = FairAbstainer(base, epsilon=0.03, delta=0.2, hidden=(16,), max_iter=200)
    fan.fit(X[:600], y[:600], z[:600])
    pred = fan.predict(X[600:], z[600:])
    assert set(np.unique(pred)) <= {-1, 0, 1}
    rates = [np.mean(pred[z[600:] == g] == -1) for g in (0, 1)]
    assert all(r <= 0.35 for r in rates)
    assert fan.ip_result_.feasible
    np.testing.assert_array_equal(fan.abstain_mask(X[600:], z[600:]), pred == -1)


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 1000), st.sampled_from(["dp", "eop", "eod"]))
def test_counts_equals_per_sample_on_random_small_problems(seed, fairness):
    rng = np.random.default_rng(seed)
    n = 40
    y, yhat, z = rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 2, n)
    z[:2] = [0, 1]
    y[:4] = [0, 1, 0, 1]
    z[2:4] = [0, 1]
    kw = {"fairness": fairness, "epsilon": 0.1, "delta": (0.3, 0.3), "eta": (0.1, 0.1)}
    a = solve_abstention_ip(y, yhat, z, None, **kw)
    b = solve_abstention_ip(y, yhat, z, None, solver="per_sample", **kw)
    assert a.status == b.status
    if a.feasible:
        assert a.objective == pytest.approx(b.objective)


def _cells(spec):
    """Arrays y, yhat, group from {(g, y, yhat): count}."""
    y, yhat, g = [], [], []
    for (gg, yy, pp), k in spec.items():
        y += [yy] * k
        yhat += [pp] * k
        g += [gg] * k
    return np.array(y), np.array(yhat), np.array(g)


def test_closed_form_known_answer_where_no_harm_binds():
    # group 0: 6 TP, 0 FP, 4 FN (r = 0.6, e = 0.4); group 1: 2 TP, 8 TN (r = 0.2)
    y, yhat, g = _cells({(0, 1, 1): 6, (0, 1, 0): 4, (1, 1, 1): 2, (1, 0, 0): 8})
    # eps = 0.1: k = ceil(6 - 10 * 0.3) = 3 TPs; then errors 4 of 7 accepted > 0.4, so
    # j = ceil((4 - 0.4 * 7) / 0.6) = 2 FNs: delta = 5 / 10 (4 of 8 accepted would be 0.5)
    assert min_abstention_dp_closed_form(y, yhat, g, epsilon=0.1) == pytest.approx(0.5)
    assert min_feasible_abstention(y, yhat, g, epsilon=0.1) == pytest.approx(0.5)
    # no-harm relaxed fully (eta = 1): only the disparity excess remains
    assert min_abstention_dp_closed_form(y, yhat, g, epsilon=0.1, eta=1.0) == pytest.approx(0.3)
    assert min_feasible_abstention(y, yhat, g, epsilon=0.1, eta=1.0) == pytest.approx(0.3)
    # already fair: zero; groups swapped: the same answer
    assert min_abstention_dp_closed_form(y, yhat, g, epsilon=0.4) == 0.0
    assert min_abstention_dp_closed_form(y, yhat, 1 - g, epsilon=0.1) == pytest.approx(0.5)


def test_closed_form_false_positives_go_first():
    # group 0: 3 TP, 3 FP, 4 TN (e = 0.3); k = 3 abstentions all on false positives
    y, yhat, g = _cells({(0, 1, 1): 3, (0, 0, 1): 3, (0, 0, 0): 4, (1, 1, 1): 2,
                         (1, 0, 0): 8})
    assert min_abstention_dp_closed_form(y, yhat, g, epsilon=0.1) == pytest.approx(0.3)
    assert min_feasible_abstention(y, yhat, g, epsilon=0.1) == pytest.approx(0.3)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000), st.sampled_from([0.0, 0.1, 0.3]), st.floats(0.02, 0.3),
       st.booleans())
def test_closed_form_equals_the_program(seed, eta, eps, high_precision):
    rng = np.random.default_rng(seed)
    n = 200
    z = (rng.random(n) < 0.4).astype(int)
    y = (rng.random(n) < np.where(z == 0, 0.5, 0.25)).astype(int)
    if high_precision:  # errors mostly false negatives: the no-harm term often binds
        yhat = np.where(y == 1, rng.random(n) < 0.7, rng.random(n) < 0.05).astype(int)
    else:  # many false positives in group 0: abstaining on them restores no harm
        yhat = np.where(rng.random(n) < 0.75, y, 1 - y)
        yhat[z == 0] = np.where(rng.random((z == 0).sum()) < 0.3, 1, yhat[z == 0])
    try:
        cf = min_abstention_dp_closed_form(y, yhat, z, epsilon=eps, eta=eta)
    except ValueError:
        return  # outside the closed form's range
    assert cf == pytest.approx(min_feasible_abstention(y, yhat, z, epsilon=eps, eta=eta),
                               abs=1e-9)


def test_closed_form_range_is_an_error():
    y, yhat, g = _cells({(0, 1, 1): 6, (0, 1, 0): 4, (1, 1, 1): 1, (1, 0, 0): 2})
    # eps = 0: no integer count of group 0 positives gives exactly r_1 = 1/3
    with pytest.raises(ValueError, match="count resolution"):
        min_abstention_dp_closed_form(y, yhat, g, epsilon=0.0)
    with pytest.raises(ValueError, match="epsilon must be >= 0"):
        min_abstention_dp_closed_form(y, yhat, g, epsilon=-0.1)


def test_fit_surrogate_learns_and_stops_on_validation_bce():
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(600, 3))
    t = (Z[:, 0] + 0.5 * Z[:, 1] > 0.8).astype(int)  # imbalanced (~20% positives), learnable
    m = fit_surrogate(Z, t, hidden=(16,), random_state=0)
    from sklearn.metrics import roc_auc_score

    assert roc_auc_score(t, m.predict_proba(Z)[:, 1]) > 0.95
    assert 20 <= m.n_epochs_ <= 500
    # restored weights are the best validation epoch's: the BCE there is the recorded best
    assert m.best_val_bce_ < 0.35
    # pure-noise targets: nothing to learn, patience ends it soon after the minimum epochs
    noise = rng.integers(0, 2, 600)
    m2 = fit_surrogate(Z, noise, hidden=(16,), min_epochs=5, patience=5, max_epochs=400)
    assert m2.n_epochs_ < 400
    assert fit_surrogate(Z, t, hidden=(4,), min_epochs=3, max_epochs=3).n_epochs_ == 3
    with pytest.raises(ValueError, match="min_epochs"):
        fit_surrogate(Z, t, min_epochs=10, max_epochs=5)
    with pytest.raises(ValueError, match="validation_fraction"):
        fit_surrogate(Z, t, validation_fraction=1.0)


def test_nan_scores_are_rejected(sample):
    _, y, z, s, yhat, _ = sample
    bad = s.copy()
    bad[3] = np.nan
    with pytest.raises(ValueError, match="score must be"):
        solve_abstention_ip(y, yhat, z, bad)
    with pytest.raises(ValueError, match="score must be"):
        per_group_confidence_abstention(bad, z, (0.1, 0.1))

    class NaNBase:
        def predict_proba(self, X):
            p = np.full(len(X), np.nan)
            return np.column_stack([1 - p, p])

    with pytest.raises(ValueError, match="predict_proba returned"):
        FairAbstainer(NaNBase()).fit(sample[0][:100], y[:100], z[:100])


def test_rates_must_be_a_pair():
    s = np.linspace(0, 1, 20)
    g = np.repeat([0, 1], 10)
    with pytest.raises(ValueError, match="rates must be a pair"):
        per_group_confidence_abstention(s, g, (0.2,))
    with pytest.raises(ValueError, match="rates must be a pair"):
        per_group_confidence_abstention(s, g, 0.2)


def test_pandas_frame_with_preprocessing_pipeline_and_string_groups():
    import pandas as pd
    from sklearn.compose import ColumnTransformer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    X, y, z = make_fairness_data(800, 1)
    df = pd.DataFrame(X, columns=[f"x{i}" for i in range(6)])
    df["sex"] = np.where(z == 1, "female", "male")  # a string feature needs the pipeline
    pre = ColumnTransformer([("num", StandardScaler(), [f"x{i}" for i in range(6)]),
                             ("cat", OneHotEncoder(), ["sex"])])
    base = make_pipeline(pre, LogisticRegression()).fit(df[:400], y[:400])
    groups = df["sex"].to_numpy()
    fan = FairAbstainer(base, epsilon=0.05, delta=0.2, hidden=(8,), max_iter=60)
    fan.fit(df[:400], y[:400], groups[:400])
    assert fan.groups_.tolist() == ["female", "male"]
    pred = fan.predict(df[400:], groups[400:])
    assert pred.shape == (400,) and set(np.unique(pred)) <= {-1, 0, 1}
    np.testing.assert_array_equal(fan.abstain_mask(df[400:], groups[400:]), pred == -1)
    # the string labels give the same program as their 0/1 codes (female = 0)
    r01 = solve_abstention_ip(y[:400], (base.predict_proba(df[:400])[:, 1] >= 0.5).astype(int),
                              (groups[:400] == "male").astype(int),
                              base.predict_proba(df[:400])[:, 1], epsilon=0.05, delta=0.2)
    assert r01.objective == fan.ip_result_.objective
    with pytest.raises(ValueError, match="labels outside"):
        fan.predict(df[400:], np.where(groups[400:] == "male", "m", "f"))
    with pytest.raises(ValueError, match="two distinct labels"):
        FairAbstainer(base).fit(df[:400], y[:400], np.repeat(["a", "b", "c", "d"], 100))
    # a base that reads the frame itself (no Pipeline): the surrogates cannot use the strings

    class FrameBase:
        def predict_proba(self, frame):
            p = base.predict_proba(frame)
            return p

    with pytest.raises(TypeError, match="X must be numeric"):
        FairAbstainer(FrameBase(), epsilon=0.05).fit(df[:400], y[:400], groups[:400])


def test_keep_probability_matches_the_abstain_mask(sample):
    X, y, z, _s, _yhat, base = sample
    fan = FairAbstainer(base, epsilon=0.03, delta=0.2, hidden=(16,), max_iter=100)
    fan.fit(X[:600], y[:600], z[:600])
    p = fan.keep_probability(X[600:], z[600:])
    assert p.shape == (600,) and np.all((p >= 0) & (p <= 1))
    np.testing.assert_array_equal(p < fan.thresholds_[z[600:]],
                                  fan.abstain_mask(X[600:], z[600:]))
