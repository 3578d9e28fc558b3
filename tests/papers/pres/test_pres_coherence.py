"""coherence_loss: known values, gradients (gradcheck), the official detach flag, errors."""

import pytest
import torch

from iclr24.papers.pres import coherence_loss


def test_cosine_known_values():
    a = torch.tensor([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]])
    assert coherence_loss(a, a).item() == pytest.approx(0.0, abs=1e-7)
    assert coherence_loss(a, -a).item() == pytest.approx(2.0)
    b = torch.tensor([[0.0, 5.0], [1.0, 0.0], [3.0, -3.0]])  # orthogonal rows
    assert coherence_loss(a, b).item() == pytest.approx(1.0)
    assert coherence_loss(a, 7.0 * a).item() == pytest.approx(0.0, abs=1e-6)  # scale-free
    # mean over nodes of 1 - cos: rows (identical, opposite) -> (0 + 2) / 2
    assert coherence_loss(a[:2], torch.stack([a[0], -a[1]])).item() == pytest.approx(1.0)


def test_inner_product_known_values():
    a = torch.tensor([[1.0, 2.0], [3.0, 0.0]])
    b = torch.tensor([[2.0, 1.0], [1.0, 5.0]])
    # inner products 4 and 3, mean 3.5
    assert coherence_loss(a, b, "inner").item() == pytest.approx(1.0 - 3.5)


def test_zero_rows_and_empty_input():
    z = torch.zeros(2, 3)
    x = torch.ones(2, 3, requires_grad=True)
    loss = coherence_loss(z, x)
    assert loss.item() == pytest.approx(1.0)
    empty = torch.zeros(0, 3, requires_grad=True)
    out = coherence_loss(torch.zeros(0, 3), empty)
    assert out.item() == 0.0 and out.requires_grad


@pytest.mark.parametrize("kind", ["cosine", "inner"])
def test_gradients_match_finite_differences(kind):
    g = torch.Generator().manual_seed(0)
    prev = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    new = torch.randn(4, 3, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda p, n: coherence_loss(p, n, kind), (prev, new))


def test_detach_reproduces_the_official_constant_term():
    prev = torch.randn(3, 2)
    new = torch.randn(3, 2, requires_grad=True)
    live = coherence_loss(prev, new)
    dead = coherence_loss(prev, new, detach=True)
    assert live.item() == dead.item()
    assert live.requires_grad and not dead.requires_grad


def test_bad_inputs():
    with pytest.raises(ValueError, match="same shape"):
        coherence_loss(torch.zeros(2, 3), torch.zeros(3, 3))
    with pytest.raises(ValueError, match=r"\(K, d\)"):
        coherence_loss(torch.zeros(3), torch.zeros(3))
    with pytest.raises(ValueError, match="kind must be one of"):
        coherence_loss(torch.zeros(2, 3), torch.zeros(2, 3), "l2")
    with pytest.raises(TypeError, match="must be tensors"):
        coherence_loss([[1.0]], torch.zeros(1, 1))
    with pytest.raises(TypeError, match="detach must be a bool"):
        coherence_loss(torch.zeros(1, 1), torch.zeros(1, 1), detach=1)
