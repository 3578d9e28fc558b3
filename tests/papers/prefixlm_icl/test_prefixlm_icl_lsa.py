"""Exact LSA dynamics: fixed points against independent references, the token form of the
construction, step-size bounds and input checks."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.prefixlm_icl import (
    lsa_icl_coefficients,
    lsa_icl_predict,
    lsa_stability_bound,
    sample_icl_batch,
    stationary_point,
    stationary_weights,
)


def _prompt(seed, n=10, d=4, noise=0.0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-1, 1, (n, d))
    y = X @ rng.standard_normal(d) + noise * rng.standard_normal(n)
    return X, y


def _kaczmarz(X, y):
    w = np.zeros(X.shape[1])
    for x_j, y_j in zip(X, y):
        w = w + (y_j - w @ x_j) * x_j / (x_j @ x_j)
    return w


@pytest.mark.parametrize("n,d,noise", [(10, 4, 0.0), (10, 4, 0.3), (3, 6, 0.0), (3, 6, 0.5)])
def test_prefix_recursion_converges_to_min_norm_least_squares(n, d, noise):
    X, y = _prompt(1, n, d, noise)
    eta = 0.9 * lsa_stability_bound(X, "prefix")
    a = lsa_icl_coefficients(X, y, 4000, eta, "prefix")
    w_ref = np.linalg.lstsq(X, y, rcond=None)[0]  # min-norm least squares
    assert np.allclose(stationary_weights(X, y, "prefix"), w_ref, atol=1e-10)
    assert np.linalg.norm(X.T @ a[-1] - w_ref) <= 1e-8 * max(1.0, np.linalg.norm(w_ref))
    a_star = stationary_point(X, y, "prefix")
    assert np.allclose(X.T @ a_star, w_ref, atol=1e-10)
    if noise == 0.0:  # y in range(X): the coefficients themselves converge
        assert np.allclose(a[-1], a_star, atol=1e-8)


@pytest.mark.parametrize("noise", [0.0, 0.4])
def test_causal_recursion_converges_to_one_pass_normalised_online_gd(noise):
    X, y = _prompt(2, 12, 5, noise)
    eta = 0.5 * lsa_stability_bound(X, "causal")
    a = lsa_icl_coefficients(X, y, 3000, eta, "causal")
    w_ref = _kaczmarz(X, y)
    assert np.allclose(stationary_weights(X, y, "causal"), w_ref, atol=1e-12)
    assert np.linalg.norm(X.T @ a[-1] - w_ref) <= 1e-8 * np.linalg.norm(w_ref)
    a_star = stationary_point(X, y, "causal")
    assert np.allclose(np.tril(X @ X.T) @ a_star, y, atol=1e-10)


@settings(max_examples=25)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 8), layers=st.integers(0, 6),
       mode=st.sampled_from(["prefix", "causal"]))
def test_coefficient_form_equals_token_form_of_the_construction(seed, n, layers, mode):
    """The y-slot update y_j <- y_j - eta sum_{k in S(j)} y_k x_k^T x_j, queries starting at 0,
    read out as -y_q, equals the coefficient recursion's prediction."""
    rng = np.random.default_rng(seed)
    d, m = 3, 2
    X, Xq = rng.uniform(-1, 1, (n, d)), rng.uniform(-1, 1, (m, d))
    y = rng.standard_normal(n)
    eta = 0.5 * lsa_stability_bound(X, mode)
    slot, q_slot = y.copy(), np.zeros(m)
    G, Gq = X @ X.T, X @ Xq.T
    expected = [np.zeros(m)]
    for _ in range(layers):
        M = G if mode == "prefix" else np.tril(G)
        q_slot = q_slot - eta * (slot @ Gq)  # queries attend to every example
        slot = slot - eta * (M @ slot)
        expected.append(-q_slot)
    got = lsa_icl_predict(X, y, Xq, layers, eta, mode)
    assert got.shape == (layers + 1, m)
    assert np.allclose(got, np.array(expected), atol=1e-10)


def test_batched_equals_per_prompt():
    b = sample_icl_batch(3, 7, 2, 4, x_dist="uniform", rng=0)
    X, y, Xq = b.x[:, :7], b.y[:, :7, 0], b.x[:, 7:]
    for mode in ("prefix", "causal"):
        batched = lsa_icl_predict(X, y, Xq, 5, 0.05, mode)
        for i in range(3):
            assert np.allclose(batched[i], lsa_icl_predict(X[i], y[i], Xq[i], 5, 0.05, mode))
        assert np.allclose(stationary_point(X, y, mode)[1], stationary_point(X[1], y[1], mode))


def test_stability_bounds_closed_form_and_divergence():
    X, y = _prompt(3, 10, 4)
    lam = np.linalg.eigvalsh(X @ X.T)[-1]
    assert lsa_stability_bound(X, "prefix") == pytest.approx(2 / lam)
    assert lsa_stability_bound(X, "causal") == pytest.approx(2 / np.max(np.sum(X**2, 1)))
    bound = lsa_stability_bound(X, "prefix")
    with pytest.raises(ValueError, match=r"prefix stability bound .*= " + f"{bound:.4g}"[:5]):
        lsa_icl_coefficients(X, y, 10, 1.01 * bound, "prefix")
    with pytest.raises(ValueError, match="causal stability bound"):
        lsa_icl_coefficients(X, y, 10, 1.01 * lsa_stability_bound(X, "causal"), "causal")
    a = lsa_icl_coefficients(X, y, 300, 1.2 * bound, "prefix", check_stability=False)
    assert np.linalg.norm(a[-1]) > 1e6  # beyond the bound the iteration really diverges


def test_bad_inputs():
    X, y = _prompt(4)
    with pytest.raises(ValueError, match="mode must be"):
        lsa_icl_coefficients(X, y, 3, 0.01, "bidirectional")
    with pytest.raises(ValueError, match="y must have shape"):
        lsa_icl_coefficients(X, y[:-1], 3, 0.01)
    with pytest.raises(ValueError, match="X must have shape"):
        lsa_icl_coefficients(X[0], y, 3, 0.01)
    with pytest.raises(ValueError, match="eta must be a positive"):
        lsa_icl_coefficients(X, y, 3, -0.1)
    with pytest.raises(ValueError, match="n_layers"):
        lsa_icl_coefficients(X, y, 2.5, 0.01)
    with pytest.raises(ValueError, match="Xq must have shape"):
        lsa_icl_predict(X, y, np.ones((2, 7)), 3, 0.01)
    with pytest.raises(ValueError, match="finite"):
        lsa_icl_coefficients(np.full_like(X, np.nan), y, 3, 0.01, check_stability=False)
    Xz = X.copy()
    Xz[3] = 0
    with pytest.raises(ValueError, match=r"\|\|x_j\|\| > 0"):
        stationary_point(Xz, y, "causal")


def test_sampler_layout_and_tasks():
    b = sample_icl_batch(5, 6, 3, 4, rng=7)
    assert b.tokens.shape == (5, 9, 5) and b.tokens.dtype == np.float32
    assert np.all(b.tokens[:, 6:, 0] == 0)  # empty query y slots
    assert np.allclose(b.tokens[:, :6, 0], b.y[:, :6, 0], atol=1e-6)
    assert np.allclose(b.tokens[:, :, 1:], b.x, atol=1e-6)
    for i in range(5):  # linear targets are exactly w^T x
        w = np.linalg.lstsq(b.x[i], b.y[i, :, 0], rcond=None)[0]
        assert np.allclose(b.x[i] @ w, b.y[i, :, 0], atol=1e-9)
    again = sample_icl_batch(5, 6, 3, 4, rng=7)
    assert np.array_equal(again.tokens, b.tokens)
    s = sample_icl_batch(4, 6, 3, 4, task="sigmoid", rng=1)
    assert np.all(np.abs(s.y) < 0.5)
    mc = sample_icl_batch(4, 6, 3, 4, task="multiclass", n_classes=3, rng=1)
    assert mc.tokens.shape == (4, 9, 7) and np.allclose(mc.y.sum(-1), 1)
    u = sample_icl_batch(4, 50, 0, 3, x_dist="uniform", x_offset=2.0, rng=1)
    assert u.x.min() >= 1.0 and u.x.max() <= 3.0
    nz = sample_icl_batch(2, 6, 3, 4, noise=0.5, rng=1)
    clean = sample_icl_batch(2, 6, 3, 4, rng=1)
    assert np.array_equal(nz.query_targets, clean.query_targets)  # noise on examples only
    assert not np.allclose(nz.y[:, :6], clean.y[:, :6])
    with pytest.raises(ValueError, match="task must be"):
        sample_icl_batch(2, 3, 1, 2, task="ranking")
    with pytest.raises(ValueError, match="n_context must be an int >= 1"):
        sample_icl_batch(2, 0, 1, 2)
    with pytest.raises(ValueError, match="noise must be"):
        sample_icl_batch(2, 3, 1, 2, noise=-1.0)
