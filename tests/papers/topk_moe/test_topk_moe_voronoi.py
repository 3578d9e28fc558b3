import numpy as np
import pytest

from iclr24.papers.topk_moe import (
    TopKGaussianMoE,
    exact_truth,
    expected_hellinger,
    near_truth_init,
    over_truth,
    voronoi_cells,
    voronoi_loss_exact,
    voronoi_loss_over,
)

Y = np.linspace(-8, 8, 1281)
X_MC = np.random.default_rng(0).standard_normal((200, 1))


def _copy(m, **changes):
    p = dict(zip(("gate_coef", "gate_intercept", "expert_coef", "expert_intercept",
                  "variances"), (np.array(v, float) for v in m._params())))
    for k, f in changes.items():
        p[k] = f(p[k])
    return TopKGaussianMoE(m.n_experts, m.top_k, reference=m.reference).set_params(**p)


def test_losses_vanish_at_the_truth():
    t = exact_truth()
    assert voronoi_loss_exact(t, t) == 0.0
    assert voronoi_loss_over(t, t) == 0.0
    assert expected_hellinger(t, t, X_MC, Y) == pytest.approx(0.0, abs=1e-12)


def test_losses_ignore_the_softmax_shift():
    t = exact_truth()
    est = near_truth_init(t, 1000, np.random.default_rng(1))
    shifted = _copy(est, gate_coef=lambda v: v + 0.7, gate_intercept=lambda v: v - 1.3)
    assert voronoi_loss_exact(shifted, t) == pytest.approx(voronoi_loss_exact(est, t))
    assert voronoi_loss_over(shifted, t) == pytest.approx(voronoi_loss_over(est, t))
    assert expected_hellinger(shifted, t, X_MC, Y) == pytest.approx(
        expected_hellinger(est, t, X_MC, Y))


def test_d1_hand_computed():
    t = exact_truth()
    est = _copy(t, expert_intercept=lambda v: v + np.array([0.01, 0, 0]),
                variances=lambda v: v + np.array([0, 0.002, 0]))
    # beta_0 = 0, so every weight exp(beta_0) = 1: D_1 = |db_1| + |dsigma_2|
    assert voronoi_loss_exact(est, t) == pytest.approx(0.012)


def test_d2_uses_rbar_powers_in_a_two_atom_cell():
    t = over_truth()
    split = near_truth_init(t, 10, np.random.default_rng(0), split=0)
    clean = _copy(split, gate_coef=lambda v: np.array([[2.0], [0.0], [2.0]]),
                  gate_intercept=lambda v: np.array([-np.log(2), 0.0, -np.log(2)]),
                  expert_coef=lambda v: np.array([[-1.0], [1.5], [-1.0]]),
                  expert_intercept=lambda v: np.array([1.1, 0.5, 0.9]),
                  variances=lambda v: np.array([0.01, 0.02, 0.01 + 0.04]))
    cells = voronoi_cells(clean, t)
    assert [c.tolist() for c in cells] == [[0, 2], [1]]
    # weights 1/2 each; |db| = 0.1 both (power rbar(2) = 4), |dsigma| = 0.04 on atom 2 (power 2)
    expected = 0.5 * 0.1 ** 4 + 0.5 * (0.1 ** 4 + 0.04 ** 2)
    assert voronoi_loss_over(clean, t) == pytest.approx(expected)
    # D_1 on the same estimate uses first powers
    assert voronoi_loss_exact(clean, t) == pytest.approx(0.5 * 0.1 + 0.5 * (0.1 + 0.04))


def test_hellinger_grows_with_the_perturbation():
    t = exact_truth()
    small = _copy(t, expert_intercept=lambda v: v + 0.01)
    large = _copy(t, expert_intercept=lambda v: v + 0.1)
    assert 0 < expected_hellinger(small, t, X_MC, Y) < expected_hellinger(large, t, X_MC, Y)


def test_errors():
    t = over_truth()
    three = near_truth_init(t, 10, np.random.default_rng(0), split=0)
    four = near_truth_init(three, 10, np.random.default_rng(0), split=0)
    with pytest.raises(ValueError, match="rbar"):
        voronoi_loss_over(_copy(four, gate_coef=lambda v: np.array([[2.0], [0.0], [2.0], [2.0]])),
                          t, rbar={2: 4})
    with pytest.raises(TypeError):
        voronoi_loss_exact("model", t)
    with pytest.raises(ValueError, match="y_grid"):
        expected_hellinger(t, t, X_MC, np.array([1.0, 0.0, 2.0]))
    with pytest.raises(ValueError, match="split"):
        near_truth_init(t, 10, np.random.default_rng(0), split=1)  # the reference
