"""Metrics against netcal (ECE) and scikit-learn, closed forms and the one-class guard."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.llm_confidence import (
    auprc_negative,
    auprc_positive,
    aurc,
    confidence_metrics,
    expected_calibration_error,
    failure_auroc,
    reliability_bins,
)

_GRID = [0.0, 0.05, 0.1, 0.15, 0.35, 0.5, 0.62, 0.8, 0.85, 0.95, 0.99, 1.0]


@settings(max_examples=40)
@given(st.lists(st.tuples(st.sampled_from(_GRID), st.booleans()), min_size=1, max_size=60))
def test_ece_matches_netcal(pairs):
    from netcal.metrics import ECE

    conf = np.array([c for c, _ in pairs])
    y = np.array([b for _, b in pairs])
    assert expected_calibration_error(conf, y) == pytest.approx(
        float(ECE(10).measure(conf, y.astype(int))), abs=1e-9)


def test_confidence_one_lands_in_the_last_bin():
    rows = reliability_bins([1.0, 1.0, 0.95, 0.0], [True, False, True, False])
    assert rows[-1]["count"] == 3 and rows[0]["count"] == 1
    # all at 1.0, half right: ECE = |0.5 - 1| = 0.5
    assert expected_calibration_error([1.0] * 4, [1, 0, 1, 0]) == pytest.approx(0.5)
    assert expected_calibration_error([0.8] * 5, [1] * 4 + [0]) == pytest.approx(0.0)


def test_auroc_and_auprc_against_closed_forms_and_guard():
    conf, y = [0.9, 0.8, 0.3, 0.2], [1, 1, 0, 0]
    assert failure_auroc(conf, y) == 1.0
    assert failure_auroc([0.2, 0.3, 0.8, 0.9], y) == 0.0
    assert failure_auroc([0.5] * 4, y) == 0.5
    # one positive ranked 2nd of 3: AUROC = 1/2 (one of the two negatives outranked)
    assert failure_auroc([0.9, 0.5, 0.1], [0, 1, 0]) == pytest.approx(0.5)
    assert auprc_positive(conf, y) == 1.0 and auprc_negative(conf, y) == 1.0
    for fn in (failure_auroc, auprc_positive, auprc_negative):
        assert math.isnan(fn([0.5, 0.9], [1, 1])) and math.isnan(fn([0.5, 0.9], [0, 0]))
    m = confidence_metrics([0.5, 0.9], [True, True])
    assert m["one_class"] == 1.0 and math.isnan(m["auroc"]) and m["accuracy"] == 1.0


def _aurc_reference(conf, correct):
    """Distinct confidences: trapezoids of width 1/n between the selective risks at coverages
    n/n, (n-1)/n, .., 1/n (fd-shifts adds no point at coverage 0 then)."""
    order = np.argsort(-np.asarray(conf))
    err = 1 - np.asarray(correct, float)[order]
    n = len(err)
    risks = [err[:k].mean() for k in range(n, 0, -1)]  # coverage n/n .. 1/n
    return sum((risks[i] + risks[i + 1]) / 2 / n for i in range(n - 1))


@given(st.lists(st.booleans(), min_size=2, max_size=30), st.integers(0, 10**6))
def test_aurc_matches_a_direct_computation(correct, seed):
    conf = np.random.default_rng(seed).permutation(len(correct)) / len(correct)
    assert aurc(conf, correct) == pytest.approx(_aurc_reference(conf, correct))


def test_aurc_orders_and_ties():
    assert aurc([0.9, 0.8, 0.2], [1, 1, 0]) < aurc([0.2, 0.8, 0.9], [1, 1, 0])
    assert aurc([0.5, 0.5], [1, 1]) == 0.0 and aurc([0.5, 0.5], [0, 0]) == pytest.approx(0.5)


def test_metric_errors():
    with pytest.raises(ValueError, match="\\[0, 1\\]"):
        expected_calibration_error([90], [1])
    with pytest.raises(ValueError, match="equal length"):
        failure_auroc([0.1, 0.2], [1])
    with pytest.raises(ValueError, match="empty"):
        aurc([], [])
    with pytest.raises(ValueError, match="booleans"):
        expected_calibration_error([0.1], [2])
    with pytest.raises(ValueError, match="n_bins"):
        reliability_bins([0.1], [1], n_bins=0)


def test_question_bootstrap_known_answer_and_pairing():
    from iclr24.papers.llm_confidence import question_bootstrap

    rng = np.random.default_rng(0)
    x = rng.normal(1.0, 2.0, size=400)
    b = question_bootstrap(np.mean, [x], n_resamples=2000, seed=1)
    # the percentile interval of a mean is close to mean ± 1.96 sd / sqrt(n)
    half = 1.96 * x.std(ddof=1) / np.sqrt(x.size)
    assert b.value == pytest.approx(x.mean())
    assert b.low == pytest.approx(x.mean() - half, abs=0.05)
    assert b.high == pytest.approx(x.mean() + half, abs=0.05)
    assert b.n == 400 and b.n_used == 2000
    # paired: the same questions in every column, so a − a is exactly 0 in every resample
    y = rng.normal(size=400)
    d = question_bootstrap(lambda a, c: float(np.mean(a - c)), [x, x.copy()], seed=2)
    assert (d.low, d.high) == (0.0, 0.0)
    # ... and a paired difference is narrower than the unpaired spread of the two columns
    z = x + rng.normal(0, 0.1, size=400)
    p = question_bootstrap(lambda a, c: float(np.mean(a) - np.mean(c)), [x, z], seed=3)
    assert p.high - p.low < 0.1
    assert question_bootstrap(np.mean, [y], seed=4, n_resamples=500).n_used == 500


def test_question_bootstrap_undefined_resamples():
    from iclr24.papers.llm_confidence import failure_auroc, question_bootstrap

    # 2 right of 40: many resamples hold one class, AUROC undefined -> no interval
    correct = np.zeros(40)
    correct[:2] = 1
    conf = np.linspace(0, 1, 40)
    b = question_bootstrap(failure_auroc, [conf, correct], seed=0)
    assert np.isfinite(b.value) and np.isnan(b.low) and np.isnan(b.high) and b.n_used < 1900
    # both classes well represented: every resample is defined
    correct = (np.arange(40) % 2).astype(float)
    ok = question_bootstrap(failure_auroc, [conf, correct], seed=0)
    assert ok.n_used == 2000 and ok.low <= ok.value <= ok.high
    # an undefined statistic on all the questions: no interval either
    nan = question_bootstrap(failure_auroc, [conf, np.ones(40)], seed=0)
    assert np.isnan(nan.value) and np.isnan(nan.low)


@pytest.mark.parametrize("kwargs, err, match", [
    ({"columns": []}, TypeError, "columns"),
    ({"columns": [[1.0, 2.0], [1.0]]}, ValueError, "columns"),
    ({"columns": [[1.0, 2.0]], "n_resamples": 10}, ValueError, "n_resamples"),
    ({"columns": [[1.0, 2.0]], "confidence": 1.5}, ValueError, "confidence"),
    ({"columns": [[1.0, 2.0]], "max_undefined": 1.0}, ValueError, "max_undefined"),
    ({"columns": [["a", "b"]]}, TypeError, "numeric"),
])
def test_question_bootstrap_bad_inputs(kwargs, err, match):
    from iclr24.papers.llm_confidence import question_bootstrap

    with pytest.raises(err, match=match):
        question_bootstrap(np.mean, **kwargs)
    with pytest.raises(TypeError, match="statistic"):
        question_bootstrap("mean", [[1.0, 2.0]])
