"""DEMD against POT's exact EMD, its closed-form gradient, and input validation."""

import numpy as np
import ot
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.emo import (
    cosine_cost_embedding,
    cosine_cost_matrix,
    demd,
    demd_logit_gradient,
    demd_soft,
    earth_movers_distance,
)


def _case(seed: int, v: int, d: int, n: int = 4, scale: float = 2.0):
    g = torch.Generator().manual_seed(seed)
    emb = torch.randn(v, d, generator=g, dtype=torch.float64)
    logits = scale * torch.randn(n, v, generator=g, dtype=torch.float64)
    target = torch.randint(0, v, (n,), generator=g)
    return emb, logits, target


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), v=st.integers(1, 40), d=st.integers(1, 12),
       scale=st.sampled_from([0.1, 1.0, 5.0]))
def test_demd_equals_pot_emd_for_one_hot_targets(seed, v, d, scale):
    emb, logits, target = _case(seed, v, d, scale=scale)
    cost = cosine_cost_matrix(emb).numpy()
    q = torch.softmax(logits, -1).numpy()
    ours = demd(logits, target, emb).numpy()
    for n in range(len(target)):
        p = np.zeros(v)
        p[int(target[n])] = 1.0
        exact = ot.emd2(q[n] / q[n].sum(), p, cost)
        assert abs(ours[n] - exact) < 1e-9


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), v=st.integers(2, 25))
def test_one_hot_bound_is_tight_for_any_nonnegative_cost(seed, v):
    rng = np.random.default_rng(seed)
    cost = rng.exponential(size=(v, v))  # not symmetric, non-zero diagonal: still tight
    logits = torch.as_tensor(rng.normal(size=(3, v)) * 2)
    target = torch.as_tensor(rng.integers(0, v, 3))
    onehot = torch.nn.functional.one_hot(target, v).double()
    ours = demd_soft(logits, onehot, torch.as_tensor(cost)).numpy()
    exact = earth_movers_distance(torch.softmax(logits, -1), onehot, cost)
    np.testing.assert_allclose(ours, exact, atol=1e-9)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), v=st.integers(2, 25), smooth=st.floats(0.0, 1.0))
def test_demd_soft_upper_bounds_emd(seed, v, smooth):
    emb, logits, target = _case(seed, v, 4, n=3)
    cost = cosine_cost_matrix(emb)
    p = (1 - smooth) * torch.nn.functional.one_hot(target, v).double() + smooth / v
    bound = demd_soft(logits, p, cost).numpy()
    exact = earth_movers_distance(torch.softmax(logits, -1), p, cost)
    assert (exact <= bound + 1e-9).all()


def test_demd_soft_matches_demd_on_one_hot():
    emb, logits, target = _case(0, 12, 5, n=6)
    onehot = torch.nn.functional.one_hot(target, 12).double()
    torch.testing.assert_close(demd_soft(logits, onehot, cosine_cost_matrix(emb)),
                               demd(logits, target, emb), atol=1e-12, rtol=0)


def test_demd_closed_forms():
    # q = one-hot at y: no transport needed
    emb = torch.randn(5, 3, dtype=torch.float64)
    logits = torch.full((1, 5), -50.0, dtype=torch.float64)
    logits[0, 2] = 50.0
    assert float(demd(logits, torch.tensor([2]), emb)) == pytest.approx(0.0, abs=1e-12)
    # two orthogonal tokens: cost 1; antipodal: cost 2
    emb = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]], dtype=torch.float64)
    uniform = torch.zeros(1, 3, dtype=torch.float64)
    assert float(demd(uniform, torch.tensor([0]), emb)) == pytest.approx((0 + 1 + 2) / 3)


def test_demd_invariant_to_embedding_row_scale():
    emb, logits, target = _case(3, 9, 4)
    scaled = emb * torch.rand(9, 1, dtype=torch.float64).add(0.1) * 7
    torch.testing.assert_close(demd(logits, target, scaled), demd(logits, target, emb))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 10_000), v=st.integers(1, 30), d=st.integers(1, 8))
def test_gradient_matches_closed_form(seed, v, d):
    emb, logits, target = _case(seed, v, d, n=5)
    x = logits.clone().requires_grad_(True)
    (auto,) = torch.autograd.grad(demd(x, target, emb).sum(), x)
    torch.testing.assert_close(auto, demd_logit_gradient(logits, target, emb),
                               atol=1e-12, rtol=0)


def test_gradcheck_float64():
    emb, logits, target = _case(7, 6, 3, n=3)
    x = logits.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda z: demd(z, target, emb), (x,))
    cost = cosine_cost_matrix(emb)
    p = torch.softmax(torch.randn(3, 6, dtype=torch.float64), -1)
    assert torch.autograd.gradcheck(lambda z: demd_soft(z, p, cost), (x,))


def test_gradient_pushes_down_distant_tokens_more():
    # negative diversity: with equal probabilities MLE pushes both wrong tokens down alike
    # (gradient q_i); DEMD raises the synonym (cost below the expected cost) and lowers the
    # distant token
    emb = torch.tensor([[1.0, 0.0], [0.9, 0.1], [-1.0, 0.0]], dtype=torch.float64)
    g = demd_logit_gradient(torch.zeros(1, 3, dtype=torch.float64), torch.tensor([0]), emb)[0]
    assert g[2] > 0 > g[1] > g[0]  # descent: distant logit down, synonym and target up
    assert float(g.sum()) == pytest.approx(0.0, abs=1e-12)  # softmax gradients sum to zero


def test_cost_embedding_is_frozen_normalised_copy():
    w = torch.randn(7, 4, requires_grad=True)
    e = cosine_cost_embedding(w)
    assert not e.requires_grad
    torch.testing.assert_close(e.norm(dim=1), torch.ones(7))
    with torch.no_grad():
        w.mul_(3).add_(1)
    assert not torch.allclose(cosine_cost_embedding(w), e)  # e did not follow w


def test_cost_embedding_is_not_trained_through_demd():
    w = torch.randn(5, 3, dtype=torch.float64, requires_grad=True)
    logits = torch.randn(2, 5, dtype=torch.float64, requires_grad=True)
    demd(logits, torch.tensor([0, 4]), w).sum().backward()
    assert w.grad is None and logits.grad is not None


def test_cost_matrix_properties():
    c = cosine_cost_matrix(torch.randn(10, 4, dtype=torch.float64))
    assert torch.all(c >= 0) and torch.all(c <= 2)
    assert torch.all(torch.diag(c) == 0)
    torch.testing.assert_close(c, c.T)


def test_follows_input_dtype_and_device():
    emb = torch.randn(6, 3)  # float32 embedding, float64 logits
    out = demd(torch.randn(2, 6, dtype=torch.float64), torch.tensor([1, 2]), emb)
    assert out.dtype == torch.float64 and out.device.type == "cpu"


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"logits": torch.randn(3, 5), "target": torch.tensor([0, 1])}, ValueError, "target"),
    ({"logits": torch.randn(2, 5), "target": torch.tensor([0, 5])}, ValueError, r"\[0, 5\)"),
    ({"logits": torch.randn(2, 5), "target": torch.tensor([-1, 0])}, ValueError, "target"),
    ({"logits": torch.randn(2, 5), "target": torch.tensor([0.0, 1.0])}, TypeError, "integer"),
    ({"logits": torch.randint(0, 3, (2, 5)), "target": torch.tensor([0, 1])}, TypeError,
     "floating"),
    ({"logits": torch.randn(2, 5, 1), "target": torch.tensor([0, 1])}, ValueError, r"\(N, V\)"),
    ({"logits": torch.randn(2, 5), "target": torch.tensor([0, 1]),
          "cost_embedding": torch.randn(4, 3)}, ValueError, "cost_embedding"),
    ({"logits": torch.randn(2, 5), "target": torch.tensor([0, 1]),
          "cost_embedding": torch.randn(5)}, ValueError, "cost_embedding"),
    ({"logits": torch.randn(2, 5), "target": torch.tensor([0, 1]),
          "cost_embedding": torch.zeros(5, 3)}, ValueError, "all zeros"),
    ({"logits": torch.randn(2, 5), "target": torch.tensor([0, 1]),
          "cost_embedding": torch.full((5, 3), float("nan"))}, ValueError, "finite"),
])
def test_demd_bad_input(kwargs, exc, match):
    kwargs.setdefault("cost_embedding", torch.randn(5, 3))
    with pytest.raises(exc, match=match):
        demd(**kwargs)


def test_demd_soft_bad_input():
    logits = torch.randn(2, 4)
    p = torch.full((2, 4), 0.25)
    cost = cosine_cost_matrix(torch.randn(4, 3))
    with pytest.raises(ValueError, match="non-negative"):
        demd_soft(logits, p, cost - 0.5)
    with pytest.raises(ValueError, match=r"cost_matrix must be a \(4, 4\)"):
        demd_soft(logits, p, cost[:3, :3])
    with pytest.raises(ValueError, match="target_probs must be a tensor of shape"):
        demd_soft(logits, p[:, :3], cost)
    with pytest.raises(ValueError, match="probability vectors"):
        demd_soft(logits, p * 2, cost)
    with pytest.raises(ValueError, match="non-negative"):
        earth_movers_distance(torch.softmax(logits, -1), p, -cost - 1)
