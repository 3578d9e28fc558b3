import numpy as np
import pytest
from scipy.special import softmax

from iclr24.papers.topk_moe import TopKGaussianMoE, exact_truth, near_truth_init, over_truth


def test_gate_zero_off_top_k_and_no_nan_with_extreme_logits():
    m = TopKGaussianMoE(4, 2).set_params([[1e3], [0.0], [-1e3], [5.0]], [0, 0, 0, 0],
                                         [[0.0]] * 4, [0, 0, 0, 0], [1, 1, 1, 1])
    X = np.array([[-3.0], [0.0], [2.0], [1e-9]])
    lg = m.log_gate(X)
    g = np.exp(lg)
    assert not np.any(np.isnan(lg))
    assert np.all((g > 0).sum(axis=1) <= 2)
    np.testing.assert_allclose(g.sum(axis=1), 1.0)
    assert np.all(g[lg == -np.inf] == 0.0)
    assert np.all(np.isfinite(m.log_prob(X, np.zeros(4))))


def test_dense_gate_is_softmax():
    m = TopKGaussianMoE(3, 3).set_params([[1.0], [0.5], [-2.0]], [0.1, 0, 0.3], [[1.0]] * 3,
                                         [0, 1, 2], [1, 2, 3])
    X = np.linspace(-2, 2, 7)[:, None]
    logits = X @ np.array([[1.0, 0.5, -2.0]]) + np.array([0.1, 0, 0.3])
    np.testing.assert_allclose(np.exp(m.log_gate(X)), softmax(logits, axis=1))


def test_log_prob_integrates_to_one_in_y():
    true = exact_truth()
    y = np.linspace(-8, 8, 20001)
    for x in (-1.2, 0.0, 0.7):
        p = np.exp(true.log_prob(np.full((y.size, 1), x), y))
        assert np.trapezoid(p, y) == pytest.approx(1.0, abs=1e-6)


def test_sample_follows_the_conditional_mean():
    true = exact_truth()
    X = np.full((100_000, 1), 0.8)
    y = true.sample(X, np.random.default_rng(0))
    g = np.exp(true.log_gate(X[:1]))[0]
    mean = (g * (0.8 * true.expert_coef_[:, 0] + true.expert_intercept_)).sum()
    assert y.mean() == pytest.approx(mean, abs=0.01)


def test_em_never_lowers_the_likelihood_and_beats_the_truth():
    true = exact_truth()
    rng = np.random.default_rng(3)
    X = rng.standard_normal((3000, 1))
    y = true.sample(X, rng)
    est = TopKGaussianMoE(3, 2, reference=1).fit(X, y, init=near_truth_init(true, 3000, rng))
    trace = np.array(est.log_likelihood_)
    assert np.all(np.diff(trace) >= -1e-12)
    assert trace[-1] >= true.log_prob(X, y).mean() - 1e-3
    np.testing.assert_allclose(est.expert_intercept_, true.expert_intercept_, atol=0.05)
    np.testing.assert_allclose(est.variances_, true.variances_, rtol=0.2)
    assert est.gate_coef_[1, 0] == 0.0 and est.gate_intercept_[1] == 0.0  # reference fixed


def test_em_monotone_from_a_poor_start_with_unselected_experts():
    true = over_truth()
    rng = np.random.default_rng(5)
    X = rng.standard_normal((400, 1))
    y = true.sample(X, rng)
    init = TopKGaussianMoE(3, 2, reference=2).set_params([[1.0], [-1.0], [0.0]], [0, 0, 0],
                                                         [[0.0]] * 3, [0.5, -0.5, 0], [1, 1, 1])
    est = TopKGaussianMoE(3, 2, reference=2, max_iter=50).fit(X, y, init=init)
    assert np.all(np.diff(est.log_likelihood_) >= -1e-12)
    assert np.all(np.isfinite(est.variances_))


@pytest.mark.parametrize("kwargs, match", [
    ({"n_experts": 3, "top_k": 0}, "top_k"),
    ({"n_experts": 3, "top_k": 4}, "top_k"),
    ({"n_experts": 0, "top_k": 1}, "n_experts"),
    ({"n_experts": 3, "top_k": 2, "reference": 5}, "reference"),
])
def test_constructor_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TopKGaussianMoE(**kwargs)


def test_parameter_and_fit_errors():
    m = TopKGaussianMoE(2, 1)
    with pytest.raises(ValueError, match="variances must be positive"):
        m.set_params([[1.0], [0.0]], [0, 0], [[1.0], [1.0]], [0, 0], [1.0, 0.0])
    with pytest.raises(ValueError, match="no parameters"):
        m.log_prob(np.zeros((2, 1)), np.zeros(2))
    with pytest.raises(ValueError, match="init"):
        m.fit(np.zeros((5, 1)), np.zeros(5), init=exact_truth())
