"""Inputs that used to give silent wrong answers or misleading errors now fail clearly."""

import numpy as np
import pandas as pd
import pytest

from iclr24.papers.vertibench import (
    BRKGAConfig,
    CorrelationSplitter,
    ImportanceSplitter,
    correlation_matrix,
)

GA = BRKGAConfig(10, 30, 5, 0.7, 5)
SPLIT_GA = BRKGAConfig(10, 30, 5, 0.7, 5, ftol=1e-4, period=3)


def _correlated(n=60, d=10, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(n, 2))
    return base[:, [i % 2 for i in range(d)]] + 0.3 * rng.normal(size=(n, d))


@pytest.mark.parametrize("method", ["spearman", "pearson"])
def test_nan_is_handled_pairwise_like_pandas(method):
    X = _correlated()
    X[3, 1] = np.nan
    X[7, 4] = np.nan
    corr = correlation_matrix(X, method)
    ref = pd.DataFrame(X).corr(method=method).to_numpy()  # the official evaluator's call
    np.testing.assert_allclose(corr, ref, atol=1e-12)
    # the pair (0, 1) uses the rows where both are present: as if row 3 were dropped
    keep = np.arange(len(X)) != 3
    np.testing.assert_allclose(corr[0, 1], correlation_matrix(X[keep][:, [0, 1]], method)[0, 1],
                               atol=1e-12)
    # one missing value leaves the correlation near its clean value, not 0
    clean = correlation_matrix(_correlated(), method)
    assert abs(corr[0, 2] - clean[0, 2]) < 1e-12 and abs(corr[1, 3] - clean[1, 3]) < 0.05


def test_mostly_missing_or_infinite_columns_are_refused():
    X = _correlated()
    X[1:, 2] = np.nan
    with pytest.raises(ValueError, match=r"columns \[2\] have fewer than 2 non-NaN"):
        correlation_matrix(X)
    X = _correlated()
    X[0, 5] = np.inf
    with pytest.raises(ValueError, match=r"infinite values in columns \[5\]"):
        correlation_matrix(X)


def test_fit_with_a_nan_uses_pairwise_correlations():
    X = _correlated()
    X[0, 0] = np.nan
    cs = CorrelationSplitter(2, rng=0, fit_brkga=GA, split_brkga=SPLIT_GA).fit(X)
    np.testing.assert_allclose(cs.corr_, pd.DataFrame(X).corr("spearman").to_numpy(),
                               atol=1e-12)
    assert cs.icor_max_ > cs.icor_min_


def test_split_refuses_a_width_other_than_the_fitted_one():
    cs = CorrelationSplitter(2, rng=0, fit_brkga=GA, split_brkga=SPLIT_GA).fit(_correlated())
    with pytest.raises(ValueError, match="10 columns the splitter was fitted on"):
        cs.split(_correlated(d=12), beta=0.5)
    with pytest.raises(ValueError, match=r"Xs\[1\] must have the 10 columns"):
        cs.split(_correlated(), _correlated(d=9), beta=0.5)
    parts = cs.split(_correlated(seed=1), beta=0.5)[0]
    assert sum(p.shape[1] for p in parts) == 10


def test_numpy_integer_beta_is_accepted_and_bool_refused():
    cs = CorrelationSplitter(2, rng=0, fit_brkga=GA, split_brkga=SPLIT_GA).fit(_correlated())
    parts = cs.split_indices(np.int64(0))
    assert sorted(np.concatenate(parts).tolist()) == list(range(10))
    with pytest.raises(ValueError, match="beta must be a number"):
        cs.split_indices(np.bool_(True))
    with pytest.raises(ValueError, match="beta must be a number"):
        cs.split_indices(True)


def test_one_feature_per_party_is_named_as_the_cause():
    with pytest.raises(ValueError, match="one feature per party makes Icor 0"):
        CorrelationSplitter(3, rng=0, fit_brkga=GA, split_brkga=SPLIT_GA).fit(_correlated(d=3))
    # independent features still get the other message
    X = np.random.default_rng(0).normal(size=(50, 4))
    X[:, :] = X[:, [0]]  # all columns identical: every split has the same Icor
    with pytest.raises(ValueError, match="same Icor"):
        CorrelationSplitter(2, rng=0, fit_brkga=GA, split_brkga=SPLIT_GA).fit(X)


@pytest.mark.parametrize("alpha", [True, False, np.bool_(True)])
def test_bool_alpha_is_refused_with_a_clear_message(alpha):
    with pytest.raises(TypeError, match="alpha must be a positive float .* got the bool"):
        ImportanceSplitter(3, alpha=alpha)
