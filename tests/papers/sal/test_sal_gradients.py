"""SAL's gradient filter: closed-form rows against torch.func per-sample gradients, the
centring, projection and threshold against direct computations, and the input checks."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.small_classifiers import MLP
from iclr24.papers.sal import (
    class_reference_means,
    filter_candidates,
    filter_quality,
    fpr_at_tpr,
    gradnorm_scores,
    last_layer_grad_rows,
    sal_scores,
    sal_threshold,
)


def _per_sample_head_grads(model, x, y):
    """dCE/dW of the head weight per sample via torch.func (the official vmap(grad))."""
    from torch.func import functional_call, grad, vmap

    params = {k: v.detach() for k, v in model.named_parameters()}

    def loss(p, xi, yi):
        out = functional_call(model, p, (xi[None],))
        return torch.nn.functional.cross_entropy(out, yi[None])

    return vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)["head.weight"]  # (N, C, D)


@settings(max_examples=8, deadline=None)
@given(n=st.integers(1, 12), d=st.integers(1, 6), c=st.integers(2, 5), seed=st.integers(0, 99))
def test_closed_form_rows_equal_torch_func_per_sample_gradients(n, d, c, seed):
    g = torch.Generator().manual_seed(seed)
    model = MLP(d, c, (7, 5), generator=g).double()
    x = torch.randn(n, d, generator=g, dtype=torch.float64)
    y = torch.randint(0, c, (n,), generator=g)
    full = _per_sample_head_grads(model, x, y).numpy()
    with torch.no_grad():
        phi, logits = model.features(x), model(x)
    rows = last_layer_grad_rows(phi, logits, y.numpy())
    np.testing.assert_allclose(rows, full[np.arange(n), y.numpy()], atol=1e-12)
    # default labels are the model's own predictions (the wild pseudo-labels)
    pred = logits.argmax(1)
    full_pred = _per_sample_head_grads(model, x, pred).numpy()
    np.testing.assert_allclose(last_layer_grad_rows(phi, logits),
                               full_pred[np.arange(n), pred.numpy()], atol=1e-12)


def test_rows_are_p_minus_one_times_features():
    phi = np.array([[1.0, 2.0], [0.5, 0.0]])
    logits = np.array([[0.0, np.log(3.0)], [2.0, 2.0]])  # p = (1/4, 3/4), (1/2, 1/2)
    rows = last_layer_grad_rows(phi, logits, np.array([1, 0]))
    np.testing.assert_allclose(rows, [[-0.25, -0.5], [-0.25, 0.0]])
    assert np.all(last_layer_grad_rows(phi, logits) <= 0)  # phi >= 0, p - 1 <= 0


def test_class_reference_means_are_per_class_means():
    rng = np.random.default_rng(0)
    g = rng.normal(size=(30, 4))
    y = rng.integers(0, 3, 30)
    y[:3] = [0, 1, 2]
    means = class_reference_means(g, y, 3)
    for c in range(3):
        np.testing.assert_allclose(means[c], g[y == c].mean(0))
    with pytest.raises(ValueError, match="classes \\[3\\]"):
        class_reference_means(g, y, 4)


def test_sal_scores_are_squared_projections_on_each_class_top_singular_vector():
    rng = np.random.default_rng(1)
    g = rng.normal(size=(40, 5))
    y = np.repeat([0, 1], 20)
    means = rng.normal(size=(2, 5))
    s = sal_scores(g, y, means)
    for c in range(2):
        G = g[y == c] - means[c]
        v = np.linalg.svd(G)[2][0]
        np.testing.assert_allclose(s[y == c], (G @ v) ** 2)
        # the largest projected energy equals the top singular value squared
        assert np.isclose(s[y == c].sum(), np.linalg.svd(G, compute_uv=False)[0] ** 2)
    assert np.allclose(sal_scores(-g, y, -means), s)  # sign of the gradients is irrelevant


def test_sal_scores_find_a_planted_outlier_direction_and_the_centring_matters():
    rng = np.random.default_rng(2)
    d = 8
    ref = np.full(d, -3.0)  # the ID reference gradient, far from the origin
    inl = ref + 0.1 * rng.normal(size=(90, d))
    u = np.eye(d)[0]
    out = ref + 2.0 * u + 0.1 * rng.normal(size=(10, d))
    g = np.concatenate([inl, out])
    y = np.zeros(100, dtype=int)
    s = sal_scores(g, y, ref[None])
    assert s[90:].min() > s[:90].max()
    # centred by the wild mean instead of the ID reference the top direction still finds
    # them, but uncentred (zero reference) the projection is dominated by ref itself
    s0 = sal_scores(g, y, np.zeros((1, d)))
    assert s0[90:].min() < s0[:90].max()


def test_small_classes_use_the_pooled_direction():
    rng = np.random.default_rng(3)
    g = rng.normal(size=(12, 3))
    y = np.r_[np.zeros(10, int), [1, 1]]
    means = np.zeros((2, 3))
    s = sal_scores(g, y, means, min_class_size=3)
    v = np.linalg.svd(g)[2][0]
    np.testing.assert_allclose(s[10:], (g[10:] @ v) ** 2)
    v0 = np.linalg.svd(g[:10])[2][0]
    np.testing.assert_allclose(s[:10], (g[:10] @ v0) ** 2)


def test_threshold_is_the_id_quantile_of_their_own_scores():
    rng = np.random.default_rng(4)
    g = rng.normal(size=(200, 4))
    y = rng.integers(0, 2, 200)
    means = class_reference_means(g, y, 2)
    t = sal_threshold(g, y, means, 0.95)
    assert np.isclose(t, np.quantile(sal_scores(g, y, means), 0.95))
    assert np.isclose(np.mean(sal_scores(g, y, means) > t), 0.05, atol=0.01)
    for q in (0, 1, 1.5, True):
        with pytest.raises(ValueError, match="quantile"):
            sal_threshold(g, y, means, q)


def test_filter_candidates_and_quality():
    s = np.array([0.1, 5.0, 0.3, 4.0, 0.2, 3.0, 0.0, 0.4, 0.05, 0.6])
    np.testing.assert_array_equal(filter_candidates(s, threshold=1.0), s > 1.0)
    top = filter_candidates(s, pi=0.2)
    np.testing.assert_array_equal(np.flatnonzero(top), [1, 3])
    truth = np.zeros(10, bool)
    truth[[1, 3, 9]] = True
    q = filter_quality(filter_candidates(s, threshold=1.0), truth)  # flags 1, 3, 5
    assert q["precision"] == pytest.approx(2 / 3) and q["recall"] == pytest.approx(2 / 3)
    assert q["f1"] == pytest.approx(2 / 3) and q["flagged"] == pytest.approx(0.3)
    assert filter_quality(np.zeros(10, bool), truth)["f1"] == 0.0
    for pi in (0, 1, -0.1, 1.2):
        with pytest.raises(ValueError, match="pi must be a number in \\(0, 1\\)"):
            filter_candidates(s, pi=pi)
    with pytest.raises(ValueError, match="exactly one"):
        filter_candidates(s)
    with pytest.raises(ValueError, match="wild set"):
        filter_candidates(np.array([]), threshold=1.0)


def test_gradnorm_scores():
    np.testing.assert_allclose(gradnorm_scores(np.array([[3.0, 4.0], [0.0, 1.0]])), [25.0, 1.0])


def test_bad_inputs_give_clear_errors():
    phi = np.ones((3, 2))
    with pytest.raises(ValueError, match="logits must have 3 rows"):
        last_layer_grad_rows(phi, np.ones((2, 4)))
    with pytest.raises(ValueError, match="labels must lie in"):
        last_layer_grad_rows(phi, np.ones((3, 4)), np.array([0, 1, 4]))
    with pytest.raises(ValueError, match="features must not be empty"):
        last_layer_grad_rows(np.ones((0, 2)), np.ones((0, 4)))
    with pytest.raises(ValueError, match="grad_rows must not be empty"):
        sal_scores(np.ones((0, 2)), np.zeros(0, int), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="class_means must have 2 columns"):
        sal_scores(np.ones((3, 2)), np.zeros(3, int), np.zeros((1, 5)))
    with pytest.raises(ValueError, match="finite"):
        sal_scores(np.full((3, 2), np.nan), np.zeros(3, int), np.zeros((1, 2)))
    scores, labels = np.array([0.9, 0.8, 0.1]), np.array([1, 1, 0])
    for tpr in (0, 1, 1.5, -0.2):
        with pytest.raises(ValueError, match="tpr must be a number in \\(0, 1\\)"):
            fpr_at_tpr(scores, labels, tpr)
