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


def test_top_k_mask_matches_a_sort_and_breaks_ties_to_the_lower_index():
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((200, 5))
    m = TopKGaussianMoE(5, 3).set_params(np.zeros((5, 1)), np.zeros(5), np.zeros((5, 1)),
                                         np.zeros(5), np.ones(5))
    from iclr24.papers.topk_moe.moe import _masked_log_softmax

    keep = np.isfinite(_masked_log_softmax(logits, 3))
    ref = np.zeros_like(keep)
    np.put_along_axis(ref, np.argsort(-logits, axis=1, kind="stable")[:, :3], True, axis=1)
    np.testing.assert_array_equal(keep, ref)
    tied = np.isfinite(_masked_log_softmax(np.zeros((1, 5)), 3))[0]
    np.testing.assert_array_equal(tied, [True, True, True, False, False])
    assert np.all(np.isfinite(m.log_gate(np.zeros((3, 1)))).sum(axis=1) == 3)


def _over_data(n, seed):
    true = over_truth()
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 1))
    return true, X, true.sample(X, rng), near_truth_init(true, n, rng, split=0)


def test_loglik_gradient_and_hessian_match_finite_differences():
    _, X, y, init = _over_data(300, 0)
    theta = init._theta() + 0.05 * np.random.default_rng(1).standard_normal(13)
    _, grad, H = init._loglik_derivatives(X, y, theta, hessian=True)
    eps = 1e-6
    e = np.eye(theta.size) * eps
    g_fd = [(init._loglik_derivatives(X, y, theta + v)[0]
             - init._loglik_derivatives(X, y, theta - v)[0]) / (2 * eps) for v in e]
    H_fd = [(init._loglik_derivatives(X, y, theta + v)[1]
             - init._loglik_derivatives(X, y, theta - v)[1]) / (2 * eps) for v in e]
    np.testing.assert_allclose(grad, g_fd, rtol=1e-6, atol=1e-5 * np.abs(grad).max())
    np.testing.assert_allclose(H, np.array(H_fd).T, atol=1e-6 * np.abs(H).max())


def test_dense_em_with_newton_m_step_is_monotone_and_polish_reaches_the_long_em_answer():
    # known answer: plain EM run to convergence (tol 1e-9, ~600 iterations here) and 200 EM
    # iterations + Newton polish reach the same maximiser of the over-specified fit; from
    # only 20 EM iterations the polish reaches another stationary point with a higher
    # likelihood (one atom of A_1 nearly drops out): the over-specified likelihood has
    # several maxima, and the polish never ends below converged EM
    _, X, y, init = _over_data(800, 2)
    long = TopKGaussianMoE(3, 3, reference=1, max_iter=20_000, tol=1e-9).fit(X, y, init=init)
    assert np.all(np.diff(long.log_likelihood_) >= -1e-12)
    mid = TopKGaussianMoE(3, 3, reference=1, max_iter=200, polish=True).fit(X, y, init=init)
    np.testing.assert_allclose(mid.expert_intercept_, long.expert_intercept_, atol=1e-5)
    short = TopKGaussianMoE(3, 3, reference=1, max_iter=20, polish=True).fit(X, y, init=init)
    assert np.all(np.diff(short.log_likelihood_) >= -1e-12)
    assert short.polish_gradient_ < 1e-7 and mid.polish_gradient_ < 1e-7
    assert short.log_likelihood_[-1] >= long.log_likelihood_[-1] - 1e-10
    no_polish = TopKGaussianMoE(3, 3, reference=1, max_iter=20).fit(X, y, init=init)
    assert short.log_likelihood_[-1] > no_polish.log_likelihood_[-1]


def test_polish_arguments():
    with pytest.raises(ValueError, match="dense gate"):
        TopKGaussianMoE(3, 2, polish=True)
    with pytest.raises(TypeError, match="polish"):
        TopKGaussianMoE(3, 3, polish="yes")
    with pytest.raises(ValueError, match="polish_gtol"):
        TopKGaussianMoE(3, 3, polish=True, polish_gtol=0.0)


def test_sparse_over_replication_reports_weights_and_fit():
    from iclr24.papers.topk_moe.simulation import sparse_over_replication

    r = sparse_over_replication(np.random.default_rng(0), 300, n_mc=50, max_iter=5)
    assert 0 <= r["weight_half_small"] <= r["weight_half_large"] <= 1
    assert 0 < r["weight_true_expert2"] < 1
    assert 0 < r["hellinger"] < 1 and np.isfinite(r["loglik_gap"])


def _separated(n=600, seed=0):
    # two experts far apart in y, sharp gate: k-means on (x, y) recovers them
    true = TopKGaussianMoE(2, 2, reference=1).set_params([[8.0], [0.0]], [0.0, 0.0],
                                                        [[0.3], [-0.2]], [-5.0, 5.0],
                                                        [0.04, 0.09])
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 1))
    return true, X, true.sample(X, rng)


def test_default_init_recovers_well_separated_experts():
    _, X, y = _separated()
    start = TopKGaussianMoE(2, 2, reference=1).default_init(X, y, np.random.default_rng(1))
    order = np.argsort(start.expert_intercept_)
    np.testing.assert_allclose(start.expert_intercept_[order], [-5.0, 5.0], atol=0.1)
    np.testing.assert_allclose(start.expert_coef_[order, 0], [0.3, -0.2], atol=0.1)
    np.testing.assert_allclose(start.variances_[order], [0.04, 0.09], rtol=0.3)
    assert start.gate_coef_[1, 0] == 0.0 and start.gate_intercept_[1] == 0.0   # reference
    # the gate separates the clusters: it favours the expert that generated each sample
    g = np.exp(start.log_gate(X))
    label = (np.abs(y - 5.0) < np.abs(y + 5.0)).astype(int)
    assert np.mean(order[label] == g.argmax(axis=1)) > 0.9


def test_fit_without_init_reaches_the_truths_likelihood():
    true, X, y = _separated()
    est = TopKGaussianMoE(2, 2, n_init=2, random_state=0).fit(X, y)
    assert est.log_prob(X, y).mean() >= true.log_prob(X, y).mean() - 1e-3
    assert sorted(np.round(est.expert_intercept_).tolist()) == [-5.0, 5.0]
    again = TopKGaussianMoE(2, 2, n_init=2, random_state=0).fit(X, y)
    np.testing.assert_array_equal(est.expert_intercept_, again.expert_intercept_)


def test_restarts_keep_the_best_start_and_given_init_comes_first():
    true = exact_truth()
    rng = np.random.default_rng(4)
    X = rng.standard_normal((500, 1))
    y = true.sample(X, rng)
    init = near_truth_init(true, 500, rng)
    one = TopKGaussianMoE(3, 2, reference=1, max_iter=30).fit(X, y, init=init)
    three = TopKGaussianMoE(3, 2, reference=1, max_iter=30, n_init=3,
                            random_state=1).fit(X, y, init=init)
    assert len(three.start_log_likelihoods_) == 3
    assert three.start_log_likelihoods_[0] == pytest.approx(one.log_likelihood_[-1])
    assert three.best_start_ == int(np.argmax(three.start_log_likelihoods_))
    assert three.log_likelihood_[-1] == max(three.start_log_likelihoods_)
    assert three.log_prob(X, y).mean() == pytest.approx(max(three.start_log_likelihoods_))


def test_restart_and_default_init_errors():
    with pytest.raises(ValueError, match="n_init"):
        TopKGaussianMoE(2, 2, n_init=0)
    with pytest.raises(TypeError, match="random_state"):
        TopKGaussianMoE(2, 2, random_state="seed")
    m = TopKGaussianMoE(3, 2)
    with pytest.raises(TypeError, match="init"):
        m.fit(np.zeros((5, 1)), np.zeros(5), init="near the truth")
    with pytest.raises(ValueError, match="n_experts"):
        m.default_init(np.zeros((2, 1)), np.zeros(2), np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        m.default_init(np.zeros((5, 1)), np.zeros(5), 0)
    with pytest.raises(ValueError, match="y"):
        m.default_init(np.zeros((5, 1)), np.zeros(4), np.random.default_rng(0))
