import numpy as np
import pytest

from iclr24.papers.indirect_experiments import (
    SyntheticIV,
    asymptotic_mse,
    optimal_probs,
    surrogate_gradient,
    tsls,
)


def test_known_values_at_m10_and_official_fixed_worse_than_uniform_at_m8():
    env = SyntheticIV(10)
    assert asymptotic_mse(env, np.full(10, 0.1)) == pytest.approx(21.83, abs=0.01)
    assert asymptotic_mse(env, env.official_fixed_probs()) == pytest.approx(18.79, abs=0.01)
    p = optimal_probs(env)
    assert asymptotic_mse(env, p) == pytest.approx(5.342, abs=0.01)
    assert p[0] == pytest.approx(0.604, abs=0.01) and p[-1] == pytest.approx(0.396, abs=0.01)
    env8 = SyntheticIV(8)
    assert asymptotic_mse(env8, env8.official_fixed_probs()) > asymptotic_mse(env8,
                                                                                np.full(8, 1 / 8))


def test_asymptotic_mse_matches_monte_carlo():
    env = SyntheticIV(5)
    n, rng = 2000, np.random.default_rng(0)
    for p in (np.full(5, 0.2), np.array([0.5, 0.1, 0.1, 0.1, 0.2])):
        se = []
        for _ in range(300):
            X, Y, Z, _ = env.sample(n, p, rng)
            se.append(((tsls(X, Y, Z) - np.asarray(env.theta)) ** 2).sum())
        assert n * np.mean(se) == pytest.approx(asymptotic_mse(env, p), rel=0.15)


def test_optimum_beats_random_policies_and_respects_the_prior():
    env = SyntheticIV(6)
    best = asymptotic_mse(env, optimal_probs(env))
    for p in np.random.default_rng(0).dirichlet(np.ones(6), 300):
        assert asymptotic_mse(env, p) >= best - 1e-6
    prior = np.full(6, 1 / 6)
    q = optimal_probs(env, prior, 0.2)
    mix = asymptotic_mse(env, 0.2 * prior + 0.8 * q)
    assert mix <= asymptotic_mse(env, 0.2 * prior + 0.8 * optimal_probs(env)) + 1e-6
    assert mix > best                          # the uniform first round costs something


def test_unidentified_policy_is_infinite_and_no_confounding_is_exact():
    env = SyntheticIV(5)
    assert asymptotic_mse(env, np.eye(5)[2]) == float("inf")
    # conf_strength 0: q = compliance, sigma^2 = q + (1 - q) 0.01; two instruments c = 1, 0
    env0 = SyntheticIV(5, conf_strength=0.0)
    p = np.array([0.5, 0, 0, 0, 0.5])
    # A = diag(0.5, 0.5), B = diag(0.5 * 1, 0.5 * 0.01): tr A^-1 B A^-1 = 2 + 0.02
    assert asymptotic_mse(env0, p) == pytest.approx(2.02)


def test_surrogate_gradient_direction():
    env = SyntheticIV(10)
    beta = np.full(10, 0.1)
    g = surrogate_gradient(env, np.ones(10), beta, 0.4)
    assert abs(g.sum()) < 1e-6                 # softmax: shifting all logits changes nothing
    assert g[0] < 0 and g[-1] < 0              # more mass on the informative instruments helps

    def mse(lg):
        pi = np.exp(lg) / np.exp(lg).sum()
        return asymptotic_mse(env, 0.4 * beta + 0.6 * pi)

    assert mse(np.ones(10) - 0.1 * g / np.linalg.norm(g)) < mse(np.ones(10))
    h = 1e-4
    e = np.eye(10)[3]
    assert g[3] == pytest.approx((mse(np.ones(10) + h * e) - mse(np.ones(10) - h * e)) / (2 * h),
                                 rel=1e-4)


def test_asymptotics_errors():
    env = SyntheticIV(5)
    with pytest.raises(TypeError, match="env"):
        asymptotic_mse("env", np.full(5, 0.2))
    with pytest.raises(ValueError, match="sum to 1"):
        asymptotic_mse(env, np.full(5, 0.3))
    with pytest.raises(ValueError, match="prior_weight"):
        optimal_probs(env, prior_weight=1.0)
    with pytest.raises(ValueError, match="logits"):
        surrogate_gradient(env, np.ones(4), np.full(5, 0.2), 0.4)
    with pytest.raises(ValueError, match="alpha"):
        surrogate_gradient(env, np.ones(5), np.full(5, 0.2), 1.0)
