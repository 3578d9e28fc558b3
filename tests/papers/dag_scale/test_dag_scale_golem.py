import numpy as np
import pytest
from scipy.optimize import check_grad

from iclr24.papers.dag_scale import golem, golem_score, run_learner, shd, simulate_linear_sem


@pytest.mark.parametrize("ev", [True, False])
def test_golem_score_gradient_matches_finite_differences(ev):
    X, _, _ = simulate_linear_sem(4, 2, "ER", 200, 1.0, np.random.default_rng(0))
    X = X - X.mean(axis=0)
    B = 0.2 * np.random.default_rng(1).standard_normal((4, 4))
    np.fill_diagonal(B, 0)

    def f(b):
        return golem_score(b.reshape(4, 4), X, equal_variances=ev, lambda_1=0.0)[0]

    def g(b):
        return golem_score(b.reshape(4, 4), X, equal_variances=ev, lambda_1=0.0)[1].ravel()

    assert check_grad(f, g, B.ravel()) < 1e-4 * np.linalg.norm(g(B.ravel()))


def test_golem_nv_likelihood_is_scale_invariant_up_to_a_constant():
    # NV: rescaling X by s adds -sum log s_j... to every B with B_ij -> B_ij s_j / s_i
    X, _, _ = simulate_linear_sem(4, 2, "ER", 300, 1.0, np.random.default_rng(2))
    X = X - X.mean(axis=0)
    s = np.array([0.3, 2.0, 5.0, 1.0])
    rng = np.random.default_rng(3)
    shifts = []
    for _ in range(3):
        B = np.triu(0.5 * rng.standard_normal((4, 4)), 1)
        a = golem_score(B, X, equal_variances=False, lambda_1=0.0, lambda_2=0.0)[0]
        b = golem_score(B * s[None, :] / s[:, None], X * s, equal_variances=False,
                        lambda_1=0.0, lambda_2=0.0)[0]
        shifts.append(b - a)
    np.testing.assert_allclose(shifts, np.log(s).sum(), atol=1e-9)


def test_golem_recovers_a_small_known_graph():
    # chain 0 -> 1 -> 2 and 0 -> 3, weights inside U(+-[0.5, 2]), unit noise, n = 2000
    B = np.zeros((4, 4))
    B[0, 1], B[1, 2], B[0, 3] = 1.5, -1.0, 0.8
    rng = np.random.default_rng(4)
    X = rng.standard_normal((2000, 4)) @ np.linalg.inv(np.eye(4) - B)
    for ev in (True, False):
        W = golem(X, equal_variances=ev)
        assert shd(W, B) == 0
        np.testing.assert_allclose(W[B != 0], B[B != 0], atol=0.2)  # l1 shrinkage
    np.testing.assert_array_equal(run_learner("golem_nv", X), (B != 0).astype(int))


def test_golem_errors():
    X = np.zeros((10, 3))
    with pytest.raises(ValueError, match="X must"):
        golem(X[:2])
    with pytest.raises(ValueError, match="B_init"):
        golem(np.random.default_rng(0).standard_normal((10, 3)), B_init=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="non-negative"):
        golem(np.random.default_rng(0).standard_normal((10, 3)), lambda_1=-1.0)
    with pytest.raises(ValueError, match="B"):
        golem_score(np.zeros((2, 2)), X, equal_variances=True, lambda_1=0.0)
