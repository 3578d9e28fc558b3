"""Sliced Wasserstein against POT (weighted, same projections), closed forms, gradients;
Chamfer against the full distance matrix."""

import numpy as np
import ot
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.mesh_sw import chamfer_distance, random_projections, sliced_wasserstein


@settings(max_examples=25)
@given(n=st.integers(1, 40), m=st.integers(1, 40), d=st.integers(1, 6),
       seed=st.integers(0, 2**31 - 1), uniform=st.booleans())
def test_sw_matches_pot_with_weights(n, m, d, seed, uniform):
    rng = np.random.default_rng(seed)
    x, y = rng.normal(size=(n, d)), rng.normal(size=(m, d)) + 0.5
    a = None if uniform else rng.random(n) + 0.01
    b = None if uniform else rng.random(m) + 0.01
    theta = random_projections(d, 30, torch.Generator().manual_seed(seed), torch.float64).numpy()
    ref = ot.sliced_wasserstein_distance(
        x, y, None if a is None else a / a.sum(), None if b is None else b / b.sum(),
        projections=theta, p=2)
    ours = sliced_wasserstein(torch.tensor(x), torch.tensor(y),
                              None if a is None else torch.tensor(a),
                              None if b is None else torch.tensor(b), projections=theta)
    assert float(ours) == pytest.approx(float(ref), rel=1e-9, abs=1e-12)


def test_sw_p1_matches_pot():
    rng = np.random.default_rng(1)
    x, y, a = rng.normal(size=(7, 3)), rng.normal(size=(11, 3)), rng.random(7)
    theta = random_projections(3, 20, torch.Generator().manual_seed(3), torch.float64).numpy()
    ref = ot.sliced_wasserstein_distance(x, y, a / a.sum(), None, projections=theta, p=1)
    ours = sliced_wasserstein(torch.tensor(x), torch.tensor(y), torch.tensor(a), p=1,
                              projections=theta)
    assert float(ours) == pytest.approx(float(ref), rel=1e-9)


def test_sorting_fast_path_equals_weighted_merge():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(50, 3, generator=g, dtype=torch.float64)
    y = torch.randn(50, 3, generator=g, dtype=torch.float64)
    theta = random_projections(3, 16, g, torch.float64)
    u = torch.full((50,), 1 / 50, dtype=torch.float64)
    fast = sliced_wasserstein(x, y, projections=theta)
    merged = sliced_wasserstein(x, y, u, u, projections=theta)
    assert float(fast) == pytest.approx(float(merged), rel=1e-12)


def test_sw_of_a_translation_is_the_projected_shift():
    # W_2(theta # mu, theta # (mu + t)) = |theta . t|, so SW_2^2 = mean_l (theta_l . t)^2
    g = torch.Generator().manual_seed(0)
    x = torch.randn(30, 3, generator=g, dtype=torch.float64)
    t = torch.tensor([0.3, -0.2, 0.5], dtype=torch.float64)
    theta = random_projections(3, 40, g, torch.float64)
    sw = sliced_wasserstein(x, x + t, projections=theta)
    assert float(sw) ** 2 == pytest.approx(float(((t @ theta) ** 2).mean()), rel=1e-10)
    assert float(sliced_wasserstein(x, x, projections=theta)) == pytest.approx(0.0, abs=1e-12)


def test_sw_gradcheck_positions_and_weights():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(6, 3, generator=g, dtype=torch.float64, requires_grad=True)
    a = (torch.rand(6, generator=g, dtype=torch.float64) + 0.1).requires_grad_(True)
    y = torch.randn(9, 3, generator=g, dtype=torch.float64)
    theta = random_projections(3, 5, g, torch.float64)
    assert torch.autograd.gradcheck(lambda x, a: sliced_wasserstein(x, y, a, projections=theta),
                                    (x, a), eps=1e-7, atol=1e-5)


def test_fresh_projections_from_the_generator():
    x, y = torch.randn(20, 3), torch.randn(20, 3)
    g = torch.Generator().manual_seed(5)
    first, second = sliced_wasserstein(x, y, generator=g), sliced_wasserstein(x, y, generator=g)
    assert float(first) != float(second)  # new directions each call
    again = sliced_wasserstein(x, y, generator=torch.Generator().manual_seed(5))
    assert float(again) == float(first)
    theta = random_projections(4, 100, torch.Generator().manual_seed(0))
    assert torch.allclose(theta.norm(dim=0), torch.ones(100))


def test_sw_bad_inputs():
    x, y = torch.randn(5, 3), torch.randn(4, 6)
    with pytest.raises(ValueError, match="same dimension"):
        sliced_wasserstein(x, y)
    with pytest.raises(ValueError, match="non-negative"):
        sliced_wasserstein(x, torch.randn(4, 3), torch.tensor([0.5, -0.1, 0.3, 0.3, 0.0]))
    with pytest.raises(ValueError, match=r"b must have shape \(4,\)"):
        sliced_wasserstein(x, torch.randn(4, 3), b=torch.ones(3))
    with pytest.raises(ValueError, match="positive sum"):
        sliced_wasserstein(x, torch.randn(4, 3), a=torch.zeros(5))
    with pytest.raises(TypeError, match="x must be a torch.Tensor"):
        sliced_wasserstein(np.zeros((3, 3)), y)
    with pytest.raises(ValueError, match="n_projections"):
        sliced_wasserstein(x, torch.randn(4, 3), n_projections=0)
    with pytest.raises(ValueError, match="same dimension"):
        chamfer_distance(x, y)


@settings(max_examples=20)
@given(n=st.integers(1, 30), m=st.integers(1, 30), block=st.integers(1, 8),
       seed=st.integers(0, 2**31 - 1))
def test_chamfer_equals_full_matrix_value_and_gradient(n, m, block, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 3, generator=g, dtype=torch.float64, requires_grad=True)
    y = torch.randn(m, 3, generator=g, dtype=torch.float64, requires_grad=True)
    ours = chamfer_distance(x, y, block=block)
    gx, gy = torch.autograd.grad(ours, (x, y))
    d2 = ((x[:, None] - y[None]) ** 2).sum(-1)
    ref = d2.min(1).values.mean() + d2.min(0).values.mean()  # squared, mean over points
    rx, ry = torch.autograd.grad(ref, (x, y))
    assert float(ours.detach()) == pytest.approx(float(ref.detach()), rel=1e-12)
    assert torch.allclose(gx, rx) and torch.allclose(gy, ry)


def test_nan_and_mixed_dtype_inputs_are_named():
    x, y = torch.randn(5, 3), torch.randn(4, 3)
    bad = x.clone()
    bad[2, 1] = float("nan")
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        sliced_wasserstein(bad, y)
    with pytest.raises(ValueError, match="y contains NaN or inf"):
        sliced_wasserstein(y, bad)
    with pytest.raises(ValueError, match="x contains NaN or inf"):
        chamfer_distance(bad, y)
    with pytest.raises(ValueError, match="y contains NaN or inf"):
        chamfer_distance(y, torch.full((3, 3), float("inf")))
    with pytest.raises(TypeError, match="x and y must have the same dtype"):
        sliced_wasserstein(x, y.double())
    with pytest.raises(TypeError, match="x and y must have the same dtype"):
        chamfer_distance(x.double(), y)
