"""Pcor / Icor / beta_hat: closed forms, invariances, batched == loop, reference libraries."""

from itertools import pairwise

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.vertibench import (
    correlation_matrix,
    equal_party_sizes,
    estimate_beta,
    icor,
    icor_for_permutations,
    pcor,
    pcor_matrix,
    split_icor,
)


def test_spearman_matches_pandas_with_ties_and_constant_column():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 4, size=(60, 5)).astype(float)  # many ties
    X[:, 2] = 3.0  # constant column -> NaN in pandas -> 0 here
    ours = correlation_matrix(X)
    ref = np.nan_to_num(pd.DataFrame(X).corr(method="spearman").values, nan=0.0)
    np.testing.assert_allclose(ours, ref, atol=1e-12)
    assert ours[2].tolist() == [0.0] * 5


def test_pearson_matches_numpy():
    X = np.random.default_rng(1).normal(size=(40, 4))
    np.testing.assert_allclose(correlation_matrix(X, "pearson"), np.corrcoef(X, rowvar=False))


@pytest.mark.parametrize("d", [2, 3, 7, 20])
def test_pcor_closed_forms(d):
    # all-ones block: singular values (d, 0, ..., 0) -> std(ddof 1) = sqrt(d) -> Pcor = 1
    assert pcor(np.ones((d, d))) == pytest.approx(1.0)
    # identity: all singular values 1 -> Pcor = 0
    assert pcor(np.eye(d)) == pytest.approx(0.0, abs=1e-12)


def test_pcor_single_feature_is_zero_and_rectangular_matches_svd():
    assert pcor(np.ones((1, 5))) == 0.0
    B = np.random.default_rng(2).uniform(-1, 1, size=(4, 7))
    s = np.linalg.svd(B, compute_uv=False)
    assert pcor(B) == pytest.approx(np.std(s, ddof=1) / 2.0)


def test_pcor_randomized_path_close_to_exact():
    rng = np.random.default_rng(3)
    A = rng.normal(size=(300, 120))
    block = np.corrcoef(A, rowvar=False)  # (120, 120): takes the randomized branch
    s = np.linalg.svd(block, compute_uv=False)
    assert pcor(block) == pytest.approx(np.std(s, ddof=1) / np.sqrt(120), rel=1e-3)


def test_icor_closed_forms():
    K, m = 3, 4
    block_diag = np.kron(np.eye(K), np.ones((m, m)))  # each party perfectly self-correlated
    # inner Pcor = 1, inter Pcor = 0  -> Icor = 0 - 1 = -1
    assert icor(block_diag, [m] * K) == pytest.approx(-1.0)
    # everything perfectly correlated -> every Pcor = 1 -> Icor = 0
    assert icor(np.ones((K * m, K * m)), [m] * K) == pytest.approx(0.0)
    P = pcor_matrix(block_diag, [m] * K)
    np.testing.assert_allclose(P, np.eye(K), atol=1e-12)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), K=st.integers(2, 4), extra=st.integers(0, 6))
def test_batched_icor_equals_loop_and_is_invariant(seed, K, extra):
    rng = np.random.default_rng(seed)
    d = K + extra + 1
    X = rng.normal(size=(30, d)) @ rng.normal(size=(d, d))
    corr = correlation_matrix(X)
    sizes = equal_party_sizes(d, K)
    orders = np.array([rng.permutation(d) for _ in range(3)])
    batched = icor_for_permutations(corr, orders, sizes)
    loop = [icor(corr[np.ix_(o, o)], sizes) for o in orders]
    np.testing.assert_allclose(batched, loop, atol=1e-10)
    # permuting features inside each party does not change Icor
    o = orders[0].copy()
    cuts = np.concatenate([[0], np.cumsum(sizes)])
    for a, b in pairwise(cuts):
        o[a:b] = rng.permutation(o[a:b])
    assert icor_for_permutations(corr, o, sizes)[0] == pytest.approx(batched[0], abs=1e-10)


def test_icor_invariant_to_party_order():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(50, 9)) @ rng.normal(size=(9, 9))
    Xs = [X[:, :3], X[:, 3:5], X[:, 5:]]
    a = split_icor(Xs)
    b = split_icor([Xs[2], Xs[0], Xs[1]])
    assert a == pytest.approx(b, abs=1e-12)


def test_estimate_beta_scale_and_clip():
    assert estimate_beta(0.5, 0.0, 1.0) == 0.5
    assert estimate_beta(2.0, 0.0, 1.0) == 1.0
    assert estimate_beta(-1.0, 0.0, 1.0) == 0.0
    assert estimate_beta(-1.0, 0.0, 1.0, clip=False) == -1.0
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 6))
    Xs = [X[:, :3], X[:, 3:]]
    value = split_icor(Xs)
    assert estimate_beta(Xs, value - 1, value + 1) == pytest.approx(0.5)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="icor_max"):
        estimate_beta(0.1, 1.0, 1.0)
    with pytest.raises(ValueError, match="method"):
        correlation_matrix(np.ones((3, 2)), "kendall")
    with pytest.raises(ValueError, match="X"):
        correlation_matrix(np.ones(3))
    with pytest.raises(ValueError, match="party_sizes"):
        icor(np.eye(4), [2, 1])
    with pytest.raises(ValueError, match="n_parties"):
        equal_party_sizes(3, 5)
    with pytest.raises(ValueError, match="same rows|same samples"):
        split_icor([np.ones((4, 2)), np.ones((3, 2))])
    with pytest.raises(ValueError, match="orders"):
        icor_for_permutations(np.eye(4), np.zeros((2, 3), dtype=int), [2, 2])
