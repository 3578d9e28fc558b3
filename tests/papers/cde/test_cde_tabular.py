"""Tabular known answers: gradient descent on the official V-loss reaches SciPy's optimum of the
same convex dual with E_D[w] = 1; the E-step caps OOD ratios near ε̃, OptiDICE's are not."""

import numpy as np
import pytest
import torch

from iclr24.papers.cde import (
    dual_objective,
    gridworld_mdp,
    sample_transitions,
    soft_chi2,
    solve_dual,
    tabular_e_step,
    tabular_v_step,
)

ALPHA, GAMMA = 0.1, 0.9


@pytest.fixture(scope="module")
def problem():
    mdp = gridworld_mdp(0)
    data = sample_transitions(mdp, 2000, 0)
    with torch.random.fork_rng():
        torch.set_num_threads(1)
        v, lam = tabular_v_step(data, mdp, alpha=ALPHA, gamma=GAMMA, steps=1500)
    return mdp, data, v, lam


def test_dual_gradient_matches_finite_differences():
    mdp = gridworld_mdp(1)
    data = sample_transitions(mdp, 300, 1)
    rng = np.random.default_rng(0)
    v, lam = rng.normal(size=mdp.n_states), 0.3
    _, gv, gl = dual_objective(v, lam, data, mdp, alpha=ALPHA, gamma=GAMMA)
    h = 1e-6
    for i in (0, 7, 24):
        dv = np.zeros_like(v)
        dv[i] = h
        up = dual_objective(v + dv, lam, data, mdp, alpha=ALPHA, gamma=GAMMA)[0]
        dn = dual_objective(v - dv, lam, data, mdp, alpha=ALPHA, gamma=GAMMA)[0]
        assert np.isclose((up - dn) / (2 * h), gv[i], atol=1e-6)
    up = dual_objective(v, lam + h, data, mdp, alpha=ALPHA, gamma=GAMMA)[0]
    dn = dual_objective(v, lam - h, data, mdp, alpha=ALPHA, gamma=GAMMA)[0]
    assert np.isclose((up - dn) / (2 * h), gl, atol=1e-6)


def test_v_step_reaches_the_scipy_dual_optimum(problem):
    mdp, data, v, lam = problem
    _, _, l_star = solve_dual(data, mdp, alpha=ALPHA, gamma=GAMMA)
    l_init = dual_objective(np.zeros(mdp.n_states), 0.0, data, mdp, alpha=ALPHA, gamma=GAMMA)[0]
    l_gd = dual_objective(v, lam, data, mdp, alpha=ALPHA, gamma=GAMMA)[0]
    assert l_gd >= l_star - 1e-9                       # SciPy's point is the minimum
    assert (l_gd - l_star) / (l_init - l_star) < 1e-2
    assert abs(l_gd - l_star) / abs(l_star) < 1e-2
    adv = data["r"] + GAMMA * v[data["s2"]] - v[data["s"]]
    w = soft_chi2().f_prime_inv(torch.as_tensor((adv - lam) / ALPHA)).numpy()
    assert abs(w.mean() - 1) < 1e-2


def test_without_the_normaliser_the_mean_ratio_reaches_one_only_at_the_optimum(problem):
    # shifting v by a constant c changes the dual by (1 - gamma) c (1 - E_D[w]), so at the
    # optimum E_D[w] = 1 even without lambda; lambda only makes it hold before convergence
    mdp, data, _, _ = problem
    means = []
    for steps in (600, 3000):
        v, lam = tabular_v_step(data, mdp, alpha=ALPHA, gamma=GAMMA, steps=steps,
                                normalize=False)
        adv = data["r"] + GAMMA * v[data["s2"]] - v[data["s"]]
        w = soft_chi2().f_prime_inv(torch.as_tensor((adv - lam) / ALPHA)).numpy()
        assert lam == 0
        means.append(w.mean())
    assert abs(means[0] - 1) > 0.05 and abs(means[1] - 1) < 1e-6  # measured: 1.096, 1 + 9e-9


def test_e_step_caps_ood_ratios_and_optidice_does_not(problem, one_torch_thread):
    mdp, data, v, _ = problem
    f = soft_chi2()
    ood = mdp.behaviour == 0
    out = {}
    for zeta in (0.9, 1.0):
        e, lam_e = tabular_e_step(data, mdp, v, alpha=ALPHA, gamma=GAMMA, zeta=zeta,
                                  ood_eps=0.3, steps=800)
        ratio = f.f_prime_inv(torch.as_tensor((e - lam_e) / ALPHA)).numpy()
        out[zeta] = ratio
        assert abs(ratio[data["s"], data["a"]].mean() - 1) < 0.05  # normalised on the data
    assert out[0.9][ood].max() <= 0.3 + 0.05
    assert out[1.0][ood].max() > 0.3 + 0.05


def test_bad_inputs():
    with pytest.raises(ValueError, match="size"):
        gridworld_mdp(0, size=1)
    with pytest.raises(ValueError, match="n must be"):
        sample_transitions(gridworld_mdp(0), 0, 0)
    mdp = gridworld_mdp(0)
    with pytest.raises(ValueError, match="zeta"):
        tabular_e_step(sample_transitions(mdp, 10, 0), mdp, np.zeros(25), alpha=0.1, gamma=0.9,
                       zeta=0.0)
    assert np.allclose(mdp.P.sum(-1), 1) and np.allclose(mdp.behaviour.sum(1), 1)
    assert ((mdp.behaviour > 0).sum(1) == 2).all()


def test_ratio_policy_and_exact_values(problem):
    from iclr24.papers.cde.tabular import policy_value, ratio_policy, support_optimal_policy

    mdp, data, _, _ = problem
    # w ≡ 1 is the behaviour policy itself (d = d^D)
    ones = ratio_policy(mdp, data, np.ones(len(data["s"])))
    assert np.allclose(ones, mdp.behaviour)
    j_b = policy_value(mdp, mdp.behaviour, gamma=GAMMA)
    # J is an average reward in [0, 1]; the best policy within the support is at least as good
    assert 0 < j_b < 1
    assert policy_value(mdp, support_optimal_policy(mdp, gamma=GAMMA), gamma=GAMMA) >= j_b
    # Bellman check of policy_value against iterating the evaluation equation
    p_pi = np.einsum("sa,sat->st", mdp.behaviour, mdp.P)
    v = np.zeros(mdp.n_states)
    for _ in range(2000):
        v = mdp.r + GAMMA * p_pi @ v
    assert j_b == pytest.approx((1 - GAMMA) * mdp.rho0 @ v, rel=1e-9)
    with pytest.raises(ValueError, match="w must have shape"):
        ratio_policy(mdp, data, np.ones(3))
    with pytest.raises(ValueError, match="pi must be"):
        policy_value(mdp, np.ones((mdp.n_states, mdp.n_actions)), gamma=GAMMA)
