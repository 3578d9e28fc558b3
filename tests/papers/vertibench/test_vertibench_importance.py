"""Shapley party importance and alpha_hat: closed forms against shap and the Dirichlet law."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.vertibench import (
    dirichlet_share_variance,
    dirichlet_stick_breaking,
    estimate_alpha,
    feature_shapley,
    importance_shares,
    party_importance,
    party_importance_from_shapley,
)


@settings(max_examples=40, deadline=None)
@given(alpha=st.floats(0.01, 100.0), K=st.integers(2, 8))
def test_estimate_alpha_inverts_the_dirichlet_variance(alpha, K):
    # shares with population variance exactly Var[Dir(alpha)] -> alpha_hat = alpha
    v = dirichlet_share_variance(alpha, K)
    signs = np.array([1.0, -1.0] * (K // 2) + ([0.0] if K % 2 else []))
    dev = signs * np.sqrt(v * K / np.sum(signs**2))
    shares = 1.0 / K + dev
    if shares.min() <= 0:
        return  # not a valid share vector for this (alpha, K)
    assert np.var(shares) == pytest.approx(v, rel=1e-9)
    assert estimate_alpha(shares * 7.3) == pytest.approx(alpha, rel=1e-6)


def test_estimate_alpha_clips():
    assert estimate_alpha([1.0, 1.0, 1.0]) == 1e3  # v = 0
    assert estimate_alpha([1.0, 0.0, 0.0]) == 1e-3  # v at the Dirichlet maximum
    assert estimate_alpha([1.0, 1.0], alpha_max=50.0) == 50.0


def test_dirichlet_variance_matches_stick_breaking_monte_carlo():
    rng = np.random.default_rng(0)
    for alpha, K in [(0.3, 4), (2.0, 3)]:
        draws = np.array([dirichlet_stick_breaking([alpha] * K, rng) for _ in range(4000)])
        np.testing.assert_allclose(draws.mean(axis=0), 1.0 / K, atol=0.02)
        assert draws[:, 0].var() == pytest.approx(dirichlet_share_variance(alpha, K), rel=0.1)


def test_party_importance_from_shapley_closed_form():
    phi = np.array([[1.0, -2.0, 3.0], [-1.0, 0.0, 1.0]])
    imp = party_importance_from_shapley(phi, [np.array([0, 1]), np.array([2])])
    np.testing.assert_allclose(imp, [(3 + 1) / 2, (3 + 1) / 2])
    phi3 = np.stack([phi, -phi], axis=2)  # two outputs: |phi| summed over outputs
    np.testing.assert_allclose(party_importance_from_shapley(phi3, [[0, 1], [2]]), 2 * imp)
    np.testing.assert_allclose(importance_shares(imp), [0.5, 0.5])


def _linear_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 5))
    w = np.array([2.0, -1.0, 0.5, 0.0, 3.0])
    return X, w


def test_feature_shapley_exact_for_linear_model_and_deterministic():
    X, w = _linear_data()
    f = lambda Z: Z @ w
    state = np.random.get_state()
    phi = feature_shapley(f, X, 6, seed=3, background_size=80)
    # global numpy RNG untouched
    assert np.array_equal(np.random.get_state()[1], state[1])
    # additive model + independent masker: phi_i = w_i (x_i - mean background x_i)
    import shap

    rows = shap.sample(X, 6, random_state=3)
    np.testing.assert_allclose(phi, w * (rows - X.mean(axis=0)), atol=1e-8)
    np.testing.assert_array_equal(phi, feature_shapley(f, X, 6, seed=3, background_size=80))


def test_party_importance_linear_closed_form():
    X, w = _linear_data()
    Xs = [X[:, :2], X[:, 2:]]
    imp = party_importance(Xs, lambda Z: Z @ w, sample_rate=0.1, rng=1, background_size=80)
    assert imp.shape == (2,)
    assert np.all(imp > 0)
    # same rng -> same numbers
    np.testing.assert_array_equal(
        imp, party_importance(Xs, lambda Z: Z @ w, sample_rate=0.1, rng=1, background_size=80))


def test_bad_inputs_name_the_argument():
    X, w = _linear_data()
    with pytest.raises(ValueError, match="sample_rate"):
        party_importance([X], lambda Z: Z @ w, sample_rate=0.01)  # 1 row explained
    with pytest.raises(ValueError, match="sample_rate"):
        party_importance([X], lambda Z: Z @ w, sample_rate=2.0)
    with pytest.raises(TypeError, match="predict_fn"):
        feature_shapley("model", X, 3)
    with pytest.raises(ValueError, match="n_explain"):
        feature_shapley(lambda Z: Z @ w, X, 0)
    with pytest.raises(ValueError, match="max_evals"):
        feature_shapley(lambda Z: Z @ w, X, 3, max_evals=5)
    with pytest.raises(ValueError, match="importances"):
        estimate_alpha([1.0])
    with pytest.raises(ValueError, match="importances"):
        estimate_alpha([0.0, 0.0])
    with pytest.raises(ValueError, match="alpha"):
        dirichlet_share_variance(0.0, 3)
    with pytest.raises(ValueError, match="indices"):
        party_importance_from_shapley(np.ones((2, 3)), [[0, 1], [1, 2]])


def test_shap_kernels_are_cached_on_disk_after_a_call():
    """shap's numba kernels compile in every new process (~9 s); feature_shapley turns on
    numba's disk cache for them before their first compile."""
    import importlib

    from numba.core.caching import NullCache

    from iclr24.papers.vertibench import cache_shap_kernels

    names = cache_shap_kernels()
    assert any(n.endswith("_delta_masking") for n in names)
    for name in names:
        module, attr = name.rsplit(".", 1)
        kernel = getattr(importlib.import_module(module), attr)
        assert not isinstance(kernel._cache, NullCache) or kernel.overloads, name
