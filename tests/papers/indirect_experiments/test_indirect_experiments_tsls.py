import numpy as np
import pytest

from iclr24.papers.indirect_experiments import SyntheticIV, is_identified, tsls, tsls_influence


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


def test_leave_one_out_form_matches_exact_leave_one_out_and_official_does_not():
    X, Y, Z, _ = _data(1000)
    th = tsls(X, Y, Z)
    ref = th + np.array([0.05, -0.08])        # a reference away from theta_hat
    psi, off = tsls_influence(th, X, Y, Z, theta_ref=ref)
    _, loo = tsls_influence(th, X, Y, Z, theta_ref=ref, form="loo")
    d = th - ref
    np.testing.assert_allclose(loo, d @ d - ((d - psi) ** 2).sum(1), atol=1e-12)
    np.testing.assert_allclose(loo, 2 * psi @ d - (psi ** 2).sum(1), atol=1e-12)
    idx = np.random.default_rng(3).choice(1000, 40, replace=False)
    exact = np.array([d @ d - ((tsls(np.delete(X, i, 0), np.delete(Y, i), np.delete(Z, i, 0))
                                - ref) ** 2).sum() for i in idx])
    err_loo = np.abs(loo[idx] - exact).max()
    err_off = np.abs(off[idx] - exact).max()
    assert err_loo < 0.1 * np.abs(exact).max()
    assert err_off > 3 * err_loo                # the official form halves the linear term


def test_nan_inputs_raise_naming_the_argument():
    X, Y, Z, _ = _data(100)
    Yn = Y.copy()
    Yn[3] = np.nan
    with pytest.raises(ValueError, match="Y must be finite"):
        tsls(X, Yn, Z)
    with pytest.raises(ValueError, match="Y must be finite"):
        tsls_influence(np.zeros(2), X, Yn, Z)
    Xn = X.copy()
    Xn[0, 0] = np.inf
    with pytest.raises(ValueError, match="X must be finite"):
        tsls(Xn, Y, Z)
    with pytest.raises(ValueError, match="weights"):
        tsls(X, Y, Z, weights=np.r_[np.nan, np.ones(99)])
    with pytest.raises(ValueError, match="theta_hat"):
        tsls_influence(np.array([np.nan, 0.0]), X, Y, Z)
    with pytest.raises(ValueError, match="theta_ref"):
        tsls_influence(np.zeros(2), X, Y, Z, theta_ref=np.zeros(3))
    with pytest.raises(ValueError, match="form"):
        tsls_influence(np.zeros(2), X, Y, Z, theta_ref=np.zeros(2), form="exact")


def test_rank_deficient_instruments_raise_instead_of_ridge_estimate():
    env = SyntheticIV(5)
    one = np.eye(5)[1]
    X, Y, Z, _ = env.sample(300, one, np.random.default_rng(0))   # a single instrument
    assert not is_identified(X, Z)
    with pytest.raises(ValueError, match="do not identify"):
        tsls(X, Y, Z)
    with pytest.raises(ValueError, match="do not identify"):
        tsls_influence(np.zeros(2), X, Y, Z)
    X2, Y2, Z2, _ = _data(300)
    dup = np.hstack([Z2[:, :1], Z2[:, :1]])                        # two copies of one column
    with pytest.raises(ValueError, match="do not identify"):
        tsls(X2, Y2, dup)
    # zero weights on all but one instrument: not identified either
    w = Z2[:, 0].copy()
    with pytest.raises(ValueError, match="do not identify"):
        tsls(X2, Y2, Z2, weights=w)
    # an instrument that is never observed (the ridge's job) leaves theta identified
    two = np.array([0.5, 0.0, 0.0, 0.0, 0.5])
    X3, Y3, Z3, _ = env.sample(300, two, np.random.default_rng(1))
    assert is_identified(X3, Z3)
    assert np.all(np.isfinite(tsls(X3, Y3, Z3)))
