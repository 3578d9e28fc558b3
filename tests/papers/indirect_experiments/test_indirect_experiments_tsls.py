import numpy as np
import pytest

from iclr24.papers.indirect_experiments import SyntheticIV, tsls, tsls_influence


def _data(n=2000, m=5, seed=0):
    env = SyntheticIV(m)
    return env.sample(n, np.full(m, 1 / m), np.random.default_rng(seed))


def test_tsls_matches_linearmodels_iv2sls():
    from linearmodels.iv import IV2SLS

    X, Y, Z, _ = _data()
    # X = (x, 1 - x) spans the intercept; instruments: one-hot Z (spans the intercept too)
    res = IV2SLS(Y, None, X, Z).fit(cov_type="unadjusted")
    np.testing.assert_allclose(tsls(X, Y, Z, ridge=0.0), res.params.to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(tsls(X, Y, Z), res.params.to_numpy(), rtol=1e-5)


def test_weights_equal_repetition():
    X, Y, Z, _ = _data(300)
    w = np.random.default_rng(1).integers(1, 4, 300)
    rep = np.repeat(np.arange(300), w)
    np.testing.assert_allclose(tsls(X, Y, Z, weights=w.astype(float)),
                               tsls(X[rep], Y[rep], Z[rep]), rtol=1e-9)


def test_consistent_for_the_true_effect():
    X, Y, Z, _ = _data(200_000)
    np.testing.assert_allclose(tsls(X, Y, Z), [1.0, -1.0], atol=0.03)


def test_influence_agrees_with_exact_leave_one_out():
    X, Y, Z, _ = _data(2000)
    th = tsls(X, Y, Z)
    psi, _ = tsls_influence(th, X, Y, Z)
    idx = np.random.default_rng(2).choice(2000, 40, replace=False)
    loo = np.array([tsls(np.delete(X, i, 0), np.delete(Y, i), np.delete(Z, i, 0)) - th
                    for i in idx])
    np.testing.assert_allclose(loo, -psi[idx], rtol=0.05, atol=1e-3 * np.abs(psi).max())


def test_influence_is_the_weight_derivative():
    X, Y, Z, _ = _data(500)
    w = np.ones(500)
    th = tsls(X, Y, Z, weights=w)
    psi, _ = tsls_influence(th, X, Y, Z, weights=w)
    h = 1e-6
    w2 = w.copy()
    w2[7] += h
    fd = (tsls(X, Y, Z, weights=w2) - th) / h
    np.testing.assert_allclose(psi[7], fd, rtol=1e-3, atol=1e-9)


def test_if_formula_and_sign():
    X, Y, Z, _ = _data(500)
    th = tsls(X, Y, Z)
    ref = th + np.array([0.1, -0.2])
    psi, inf = tsls_influence(th, X, Y, Z, theta_ref=ref)
    np.testing.assert_allclose(inf, psi @ (th - ref) - (psi ** 2).sum(1))


def test_errors():
    X, Y, Z, _ = _data(50)
    with pytest.raises(ValueError, match="share n"):
        tsls(X[:10], Y, Z)
    with pytest.raises(ValueError, match="instruments"):
        tsls(X, Y, Z[:, :1])
    with pytest.raises(ValueError, match="weights"):
        tsls(X, Y, Z, weights=-np.ones(50))
