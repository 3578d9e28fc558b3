import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.dag_scale import (
    best_order_exact,
    is_consistent_order,
    ll_score,
    ls_score,
    order_residual_variances,
    population_covariance,
    population_residual_variances,
    rescale_covariance,
    scale_attack,
    shd,
    simulate_dag,
    simulate_linear_sem,
    varsortability,
)


def _sem(seed, d=5):
    rng = np.random.default_rng(seed)
    B = simulate_dag(d, 2, "ER", rng)
    return B, population_covariance(B, rng.uniform(0.5, 1.5, d))


@given(st.integers(0, 10_000), st.permutations(range(5)))
@settings(max_examples=25)
def test_residual_variances_along_any_order_multiply_to_det(seed, order):
    _, Sigma = _sem(seed)
    r = order_residual_variances(Sigma, list(order))
    assert np.prod(r) == pytest.approx(np.linalg.det(Sigma), rel=1e-9)


def test_population_covariance_matches_samples():
    rng = np.random.default_rng(0)
    X, B, noise = simulate_linear_sem(4, 2, "ER", 400_000, "random", rng)
    np.testing.assert_allclose(np.cov(X.T), population_covariance(B, noise), atol=0.03)


def test_true_dag_residuals_are_noise_variances():
    rng = np.random.default_rng(1)
    B = simulate_dag(6, 2, "SF", rng)
    noise = rng.uniform(0.5, 1.5, 6)
    Sigma = population_covariance(B, noise)
    np.testing.assert_allclose(population_residual_variances(Sigma, B), noise)
    assert ls_score(Sigma, B) == pytest.approx(noise.sum())
    assert ll_score(Sigma, B) == pytest.approx(0.5 * np.log(noise).sum())


def _brute_force(Sigma, score):
    d = Sigma.shape[0]
    f = (lambda r: r.sum()) if score == "ls" else (lambda r: 0.5 * np.log(r).sum())
    return min(f(order_residual_variances(Sigma, list(o)))
               for o in itertools.permutations(range(d)))


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_best_order_exact_matches_brute_force(seed):
    _, Sigma = _sem(seed, d=5)
    for score in ("ls", "ll"):
        _order, val = best_order_exact(Sigma, score)
        assert val == pytest.approx(_brute_force(Sigma, score))


@pytest.mark.parametrize("seed", range(5))
def test_attack_makes_the_target_ls_optimal_and_leaves_ll_rankings(seed):
    rng = np.random.default_rng(seed)
    B = simulate_dag(6, 2, "ER", rng)
    Sigma = population_covariance(B, 1.0)
    target = list(rng.permutation(6))
    s = scale_attack(Sigma, target)
    S2 = rescale_covariance(Sigma, s)
    r = order_residual_variances(S2, target)
    np.testing.assert_allclose(r, r[0])                          # all residuals equal
    _, best = best_order_exact(S2, "ls")
    assert r.sum() == pytest.approx(best, rel=1e-9)              # the target wins (AM-GM)
    shift = np.log(s).sum()
    for o in [target, list(range(6)), list(rng.permutation(6))]:
        before = 0.5 * np.log(order_residual_variances(Sigma, o)).sum()
        after = 0.5 * np.log(order_residual_variances(S2, o)).sum()
        assert after - before == pytest.approx(shift)             # same shift for every order


def test_equal_variance_sem_true_order_is_ls_optimal():
    B, _ = _sem(3, d=6)
    Sigma = population_covariance(B, 1.0)
    order, _ = best_order_exact(Sigma, "ls")
    assert is_consistent_order(order, B)


def test_shd_and_varsortability_known_answers():
    T = np.array([[0, 1, 0], [0, 0, 1], [0, 0, 0]])
    assert shd(T, T) == 0
    assert shd(T.T, T) == 2                                       # two reversals
    assert shd(np.zeros((3, 3)), T) == 2                          # two deletions
    E = T.copy()
    E[0, 2] = 1
    assert shd(E, T) == 1                                         # one insertion
    with pytest.raises(ValueError, match="B_est must be finite"):
        shd(np.where(T == 1, np.nan, 0.0), T)
    with pytest.raises(ValueError, match="B_true must be finite"):
        shd(T, np.where(T == 1, np.inf, 0.0))
    assert varsortability([1.0, 2.0, 3.0], T) == 1.0
    assert varsortability([3.0, 2.0, 1.0], T) == 0.0
    assert varsortability([1.0, 1.0, 1.0], T) == 0.5


def test_errors():
    _, Sigma = _sem(0)
    with pytest.raises(ValueError, match="permutation"):
        scale_attack(Sigma, [0, 1, 2, 3, 3])
    with pytest.raises(ValueError, match="positive definite"):
        best_order_exact(np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match="d must be <= 15"):
        best_order_exact(np.eye(16))
    with pytest.raises(ValueError, match="score"):
        best_order_exact(np.eye(3), "bic")
    with pytest.raises(ValueError, match="DAG"):
        population_covariance(np.array([[0, 1.0], [1.0, 0]]), 1.0)
    with pytest.raises(ValueError, match="graph"):
        simulate_dag(4, 2, "BA", np.random.default_rng(0))
    with pytest.raises(ValueError, match="noise variances"):
        population_covariance(np.zeros((2, 2)), [1.0, -1.0])
    with pytest.raises(ValueError, match="noise variances"):
        population_covariance(np.zeros((2, 2)), [1.0, np.nan])
    with pytest.raises(ValueError, match="B must be finite"):
        population_covariance(np.array([[0, np.nan], [0, 0]]), 1.0)
    with pytest.raises(ValueError, match="B must be a square"):
        population_covariance(np.zeros((2, 3)), 1.0)


def _varsortability_by_enumeration(v, A):
    """Reisach et al.'s count, written independently: every (i, j, k) such that some directed
    path of exactly k edges leads from i to j, once, scored 1 / 0.5 / 0 by var_j / var_i."""
    d = len(v)
    reach = {(i, i, 0) for i in range(d)}
    for k in range(1, d):
        reach |= {(i, j, k) for (i, m, kk) in reach if kk == k - 1
                  for j in range(d) if A[m, j]}
    num = den = 0.0
    for i, j, k in reach:
        if k == 0:
            continue
        r = v[j] / v[i]
        num += 1.0 if r > 1 + 1e-9 else 0.5 if r > 1 - 1e-9 else 0.0
        den += 1
    return num / den


def test_varsortability_counts_node_pairs_not_paths():
    # diamond 0 -> {1, 2} -> 3: the pair (0, 3) is joined by two paths of length 2 and counts
    # once (Reisach et al.'s code); counting paths would give 2 / 6 instead of 2 / 5.
    A = np.zeros((4, 4))
    A[0, 1] = A[0, 2] = A[1, 3] = A[2, 3] = 1.0
    assert varsortability([5.0, 6.0, 7.0, 1.0], A) == pytest.approx(2 / 5)
    rng = np.random.default_rng(4)
    for _ in range(20):
        B = simulate_dag(6, 3, "ER", rng)
        if not (B != 0).any():
            continue
        v = rng.uniform(0.5, 3.0, 6)
        v[rng.integers(6)] = v[0]                                 # include some exact ties
        assert varsortability(v, B) == pytest.approx(_varsortability_by_enumeration(v, B != 0))


def test_varsortability_relative_tie_and_bad_inputs():
    T = np.array([[0, 1.0], [0, 0]])
    assert varsortability([1e6, 1e6 * (1 + 1e-12)], T) == 0.5    # a relative tie
    assert varsortability([1e-6, 2e-6], T) == 1.0                 # tiny variances still ordered
    with pytest.raises(ValueError, match="B must be finite"):
        varsortability([1.0, 2.0], np.array([[0, np.nan], [0, 0]]))
    with pytest.raises(ValueError, match="variances"):
        varsortability([0.0, 2.0], T)
    with pytest.raises(ValueError, match="variances"):
        varsortability([np.nan, 2.0], T)
    with pytest.raises(ValueError, match="B must have shape"):
        varsortability([1.0, 2.0, 3.0], T)
    with pytest.raises(ValueError, match="tol"):
        varsortability([1.0, 2.0], T, tol=-1.0)
    with pytest.raises(ValueError, match="no edges"):
        varsortability([1.0, 2.0], np.zeros((2, 2)))
