"""Importance- and correlation-based split generators: partitions, laws, determinism, errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.vertibench import (
    BRKGAConfig,
    CorrelationSplitter,
    ImportanceSplitter,
    RandomEqualSplitter,
    apply_split,
    dirichlet_stick_breaking,
)

SMALL_GA = BRKGAConfig(10, 30, 5, 0.7, 8)
SMALL_SPLIT_GA = BRKGAConfig(10, 30, 5, 0.7, 8, ftol=1e-4, period=5)


def _is_partition(parts, d):
    allc = np.concatenate(parts)
    return sorted(allc.tolist()) == list(range(d))


@settings(max_examples=30, deadline=None)
@given(K=st.integers(2, 6), extra=st.integers(0, 20), alpha=st.floats(1e-3, 1e3),
       seed=st.integers(0, 1000))
def test_importance_split_is_a_partition_without_empty_parties(K, extra, alpha, seed):
    d = K + extra
    parts = ImportanceSplitter(K, alpha, rng=seed).split_indices(d)
    assert len(parts) == K
    assert _is_partition(parts, d)
    assert all(len(p) >= 1 for p in parts)
    assert all(np.all(np.diff(p) > 0) for p in parts)


def test_stick_breaking_handles_tiny_alpha():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = dirichlet_stick_breaking([1e-4] * 5, rng)
        assert np.isfinite(p).all() and p.sum() == pytest.approx(1.0)


def test_alpha_controls_feature_count_balance():
    d, K = 200, 4
    def spread(alpha):
        s = ImportanceSplitter(K, alpha, rng=0)
        return np.mean([np.std([len(p) for p in s.split_indices(d)]) for _ in range(30)])
    assert spread(0.05) > 3 * spread(100.0)
    # with tiny alpha one party holds almost everything
    big = [max(len(p) for p in ImportanceSplitter(K, 1e-3, rng=i).split_indices(d))
           for i in range(10)]
    assert min(big) >= d - K


def test_weights_vector_and_allow_empty():
    s = ImportanceSplitter(3, [100.0, 1e-3, 1e-3], rng=0, allow_empty_party=True)
    sizes = np.mean([[len(p) for p in s.split_indices(30)] for _ in range(20)], axis=0)
    assert sizes[0] > 25
    assert _is_partition(ImportanceSplitter(5, 1.0, rng=0, allow_empty_party=True)
                         .split_indices(3), 3)


def test_determinism_and_same_indices_for_train_and_test():
    X = np.arange(40.0).reshape(4, 10)
    a = ImportanceSplitter(3, 0.5, rng=7)
    b = ImportanceSplitter(3, 0.5, rng=7)
    assert all(np.array_equal(p, q) for p, q in zip(a.split_indices(10), b.split_indices(10)))
    tr, te = a.split(X, X + 100)
    for k in range(3):
        np.testing.assert_array_equal(tr[k] + 100, te[k])
        np.testing.assert_array_equal(tr[k], X[:, a.indices_[k]])
    np.testing.assert_array_equal(np.hstack(apply_split(X, [np.arange(10)])), X)


def test_random_equal_splitter_sizes():
    parts = RandomEqualSplitter(3, rng=0).split_indices(10)
    assert sorted(len(p) for p in parts) == [3, 3, 4]
    assert _is_partition(parts, 10)


def test_importance_bad_inputs():
    with pytest.raises(ValueError, match="alpha"):
        ImportanceSplitter(3, 0.0)
    with pytest.raises(ValueError, match="alpha"):
        ImportanceSplitter(3, -1.0)
    with pytest.raises(ValueError, match="alpha"):
        ImportanceSplitter(3, [1.0, 1.0])
    with pytest.raises(ValueError, match="n_parties"):
        ImportanceSplitter(1, 1.0)
    with pytest.raises(TypeError, match="n_parties"):
        ImportanceSplitter(2.5, 1.0)
    with pytest.raises(ValueError, match="n_parties=5 is larger than the number of features"):
        ImportanceSplitter(5, 1.0).split_indices(3)
    with pytest.raises(TypeError, match="rng"):
        ImportanceSplitter(3, 1.0, rng="seed")
    with pytest.raises(ValueError, match="columns"):
        ImportanceSplitter(2, 1.0).split(np.ones((2, 4)), np.ones((2, 5)))


def _clustered(seed=0, n=300):
    """Four groups of 3 near-identical features: the Icor extremes are known in structure."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 4))
    return np.repeat(z, 3, axis=1) + 0.05 * rng.normal(size=(n, 12))


def test_correlation_splitter_reaches_extremes_on_clustered_data():
    X = _clustered()
    cs = CorrelationSplitter(2, rng=0, fit_brkga=BRKGAConfig(20, 60, 10, 0.7, 25),
                             split_brkga=SMALL_SPLIT_GA).fit(X)
    lo = cs.split_indices(0.0)
    hi = cs.split_indices(1.0)
    # beta = 0 keeps every correlated group inside one party; beta = 1 spreads the groups
    groups = lambda parts: [set(np.asarray(p) // 3) for p in parts]
    assert all(len(g) == 2 for g in groups(lo))
    assert cs.icor_of(lo) < cs.icor_of(hi)
    assert 0.0 <= cs.beta_of(lo) <= 0.1 and cs.beta_of(hi) >= 0.9
    assert cs.icor_min_ <= cs.icor_of(lo) + 1e-9 or cs.beta_of(lo) == 0.0


def test_correlation_splitter_is_deterministic():
    X = _clustered(1, 120)
    def run():
        cs = CorrelationSplitter(3, rng=5, fit_brkga=SMALL_GA, split_brkga=SMALL_SPLIT_GA).fit(X)
        (parts,) = cs.split(X, beta=0.5)
        return cs.icor_min_, cs.icor_max_, cs.best_icor_, [p.shape[1] for p in parts], \
            [ix.tolist() for ix in cs.indices_]
    assert run() == run()


def test_correlation_splitter_bad_inputs():
    X = _clustered(2, 50)
    cs = CorrelationSplitter(2, rng=0, fit_brkga=SMALL_GA, split_brkga=SMALL_SPLIT_GA)
    with pytest.raises(RuntimeError, match="fit"):
        cs.split_indices(0.5)
    with pytest.raises(ValueError, match="n_parties=20 is larger"):
        CorrelationSplitter(20).fit(X)
    cs.fit(X)
    with pytest.raises(ValueError, match="beta"):
        cs.split_indices(1.5)
    with pytest.raises(ValueError, match="beta"):
        cs.split_indices(-0.1)
    with pytest.raises(ValueError, match="n_features"):
        cs.split_indices(0.5, n_features=7)
    with pytest.raises(ValueError, match="partition"):
        cs.icor_of([np.arange(5), np.arange(5)])
    with pytest.raises(TypeError, match="fit_brkga"):
        CorrelationSplitter(2, fit_brkga=(1, 2, 3))
    with pytest.raises(ValueError, match="n_elites"):
        BRKGAConfig(0, 10, 10)
    with pytest.raises(ValueError, match="bias"):
        BRKGAConfig(bias=0.2)
    with pytest.raises(ValueError, match="corr_method"):
        CorrelationSplitter(2, corr_method="kendall")
