import numpy as np
import pytest

from iclr24.papers.indirect_experiments import (
    DIADesigner,
    InstrumentPolicy,
    SyntheticIV,
    instrument_index,
    optimal_probs,
    run_adaptive_experiment,
    subsample_size,
)


def test_simulator_compliance_and_probs_validation():
    env = SyntheticIV(20)
    c = env.compliance
    assert c[0] == 1.0 and c[-1] == 0.0 and np.all(c[1:-1] == 0.5)
    X, _Y, Z, _p = env.sample(50_000, env.official_fixed_probs(), np.random.default_rng(0))
    assert set(np.unique(Z.argmax(1))) == {0, 19}
    assert X[Z[:, 0] == 1, 0].mean() > 0.7 and X[Z[:, -1] == 1, 0].mean() < 0.3
    with pytest.raises(ValueError, match="sum to 1"):
        env.sample(10, np.full(20, 0.1), np.random.default_rng(0))
    with pytest.raises(ValueError, match="non-negative"):
        env.sample(10, np.r_[-0.1, np.full(19, 1.1 / 19)], np.random.default_rng(0))


def test_subsample_size_even():
    assert subsample_size(1000) == 124
    assert subsample_size(3) % 2 == 0


def test_policy_gradient_matches_finite_differences_of_the_surrogate():
    # with the bootstrap fixed (same rng state), the gradient is d/dlogits of
    # sum IF log pi_eff / sum k; check one coordinate by finite differences
    env = SyntheticIV(5)
    X, Y, Z, _ = env.sample(300, np.full(5, 0.2), np.random.default_rng(0))
    d = DIADesigner(n_boot=3)
    logits = np.array([1.0, 0.5, 1.5, 1.0, 0.2])
    g = d.policy_gradient(logits, X, Y, Z, 1000, np.random.default_rng(1))
    # the bootstrap depends on the logits only through rho (stop-gradient): freeze the logits
    # used for rho by perturbing a copy of the loss explicitly
    from iclr24.papers.indirect_experiments.design import _softmax
    from iclr24.papers.indirect_experiments.tsls import tsls, tsls_influence

    n, m = Z.shape
    zi = Z.argmax(1)
    beta = np.bincount(zi, minlength=m) / n
    alpha = n / 1000
    rng = np.random.default_rng(1)
    pi_eff0 = alpha * beta + (1 - alpha) * _softmax(logits)
    rho = pi_eff0[zi] / beta[zi]
    ref = tsls(X, Y, Z)
    k = subsample_size(n)
    subs = []
    for _ in range(3):
        acc = np.flatnonzero(rng.random(n) < rho / rho.max())
        idx = rng.permutation(acc)[:k]
        th = tsls(X[idx], Y[idx], Z[idx])
        _, inf = tsls_influence(th, X[idx], Y[idx], Z[idx], theta_ref=ref)
        subs.append((idx, inf))

    def loss(lg):
        pe = alpha * beta + (1 - alpha) * _softmax(lg)
        return sum((inf * np.log(pe[zi[idx]])).sum() for idx, inf in subs) / sum(
            idx.size for idx, _ in subs)

    h = 1e-6
    e = np.eye(5)[2]
    assert g[2] == pytest.approx((loss(logits + h * e) - loss(logits - h * e)) / (2 * h),
                                 rel=1e-4)


def test_dia_moves_mass_to_informative_instruments():
    env = SyntheticIV(10)
    res = run_adaptive_experiment(env, DIADesigner(steps=60, n_boot=10),
                                  rng=np.random.default_rng(0))
    p = res["policies"][-1]
    assert p[0] + p[-1] > 0.5                 # the complier and never-taker instruments
    assert len(res["squared_errors"]) == 5


def test_designer_errors():
    with pytest.raises(ValueError, match="gradient"):
        DIADesigner(gradient="adjoint")
    with pytest.raises(ValueError, match="n_instruments"):
        InstrumentPolicy(1)
    env = SyntheticIV(5)
    X, Y, Z, _ = env.sample(100, np.full(5, 0.2), np.random.default_rng(0))
    with pytest.raises(ValueError, match="final_budget"):
        DIADesigner(steps=1).update((X, Y, Z), 50, np.random.default_rng(0))
    with pytest.raises(ValueError, match="designer"):
        run_adaptive_experiment(env, "greedy", rng=np.random.default_rng(0))


def test_continuous_or_multi_hot_instruments_raise_instead_of_argmax():
    env = SyntheticIV(5)
    X, Y, Z, _ = env.sample(100, np.full(5, 0.2), np.random.default_rng(0))
    np.testing.assert_array_equal(instrument_index(Z), Z.argmax(1))
    soft = 0.9 * Z + 0.02                       # rows still sum to 1, argmax unchanged
    d = DIADesigner(steps=1, n_boot=2)
    with pytest.raises(ValueError, match="one-hot"):
        d.update((X, Y, soft), 1000, np.random.default_rng(0))
    with pytest.raises(ValueError, match="one-hot"):
        d.policy_gradient(np.ones(5), X, Y, soft, 1000, np.random.default_rng(0))
    with pytest.raises(ValueError, match="one-hot"):
        instrument_index(np.c_[Z[:, :4], Z[:, :1]])          # two ones in some rows
    Yn = Y.copy()
    Yn[0] = np.nan
    with pytest.raises(ValueError, match="Y must be finite"):
        d.policy_gradient(np.ones(5), X, Yn, Z, 1000, np.random.default_rng(0))


def test_unidentified_bootstrap_replicas_are_dropped():
    env = SyntheticIV(5)
    rng = np.random.default_rng(0)
    X0, Y0, Z0, _ = env.sample(60, np.eye(5)[0], rng)        # mostly the complier instrument
    X1, Y1, Z1, _ = env.sample(4, np.eye(5)[4], rng)         # a few never-takers
    X, Y, Z = np.vstack([X0, X1]), np.r_[Y0, Y1], np.vstack([Z0, Z1])
    g = DIADesigner(n_boot=20).policy_gradient(np.ones(5), X, Y, Z, 1000, rng)
    assert g.shape == (5,) and np.all(np.isfinite(g))


def test_reference_designs():
    env = SyntheticIV(10)
    res = run_adaptive_experiment(env, "optimal", rng=np.random.default_rng(0))
    np.testing.assert_allclose(res["policies"][1], optimal_probs(env, np.full(10, 0.1), 0.2))
    res = run_adaptive_experiment(env, "official_fixed", rng=np.random.default_rng(0))
    np.testing.assert_allclose(res["policies"][-1], env.official_fixed_probs())
    res = run_adaptive_experiment(env, "random", rng=np.random.default_rng(0))
    pols = res["policies"][1:]
    assert all(abs(p.sum() - 1) < 1e-9 for p in pols)
    assert not np.allclose(pols[0], pols[1])              # drawn afresh each round
    with pytest.raises(ValueError, match="designer"):
        run_adaptive_experiment(env, "oracle", rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="influence_form"):
        DIADesigner(influence_form="exact")


def test_shuffled_influence_null_has_no_direction():
    # the null arm keeps the influences' values but detaches them from the instruments: its
    # mean gradient is much smaller relative to its noise than the influence estimator's
    env = SyntheticIV(10)
    X, Y, Z, _ = env.sample(400, np.full(10, 0.1), np.random.default_rng(0))
    rng = np.random.default_rng(1)

    def rel(kind):
        d = DIADesigner(n_boot=10, gradient=kind)
        G = np.array([d.policy_gradient(np.ones(10), X, Y, Z, 1000, rng) for _ in range(30)])
        return np.trace(np.cov(G.T)) / (G.mean(0) ** 2).sum()

    assert rel("shuffled_influence") > 5 * rel("influence")
