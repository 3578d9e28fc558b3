import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.vector_quantization import VectorQuantizer, code_perplexity


def _vq(seed=0, k=8, d=3):
    torch.manual_seed(seed)
    vq = VectorQuantizer(k, d, beta=0.25)
    with torch.no_grad():
        vq.codebook.weight.normal_()
    return vq


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_nearest_is_brute_force_argmin(seed):
    vq = _vq(seed)
    z = torch.randn(2, 3, 4, 5, generator=torch.Generator().manual_seed(seed))
    flat = z.permute(0, 2, 3, 1).reshape(-1, 3)
    ref = torch.cdist(flat.double(), vq.codebook.weight.double()).argmin(1).view(2, 4, 5)
    assert torch.equal(vq.nearest(z), ref)


def test_loss_and_straight_through_gradients():
    vq = _vq()
    z = torch.randn(10, 3, requires_grad=True)
    out = vq(z)
    zq = vq.codebook.weight[out.indices]
    assert torch.allclose(out.quantized, zq, atol=1e-6)  # forward value is the code
    mse = torch.mean((z - zq) ** 2)
    assert torch.allclose(out.loss, 1.25 * mse)
    g = torch.randn(10, 3)
    (out.quantized * g).sum().backward(retain_graph=True)
    assert torch.allclose(z.grad, g)  # straight-through: identity gradient
    z.grad = None
    vq.codebook.weight.grad = None
    out.loss.backward()
    n = z.numel()
    assert torch.allclose(z.grad, 2 * 0.25 * (z - zq).detach() / n, atol=1e-6)  # commitment
    ref = torch.zeros_like(vq.codebook.weight)
    ref.index_add_(0, out.indices, 2 * (zq - z).detach() / n)  # codebook term only
    assert torch.allclose(vq.codebook.weight.grad, ref, atol=1e-6)


def test_lookup_round_trip_and_grid_shapes():
    vq = _vq()
    idx = torch.randint(0, 8, (2, 4, 4))
    e = vq.lookup(idx)
    assert e.shape == (2, 3, 4, 4)
    assert torch.equal(vq.nearest(e), idx)
    out = vq(e)
    assert out.indices.shape == (2, 4, 4) and out.quantized.shape == e.shape


def test_perplexity_extremes():
    assert float(code_perplexity(torch.zeros(20, dtype=torch.long), 8)) == pytest.approx(1.0)
    assert float(code_perplexity(torch.arange(8).repeat(3), 8)) == pytest.approx(8.0)
    with pytest.raises(ValueError, match="indices"):
        code_perplexity(torch.tensor([0, 9]), 8)


def test_usage_counts_only_in_training_and_dead_code_restart():
    vq = _vq()
    with torch.no_grad():
        vq.codebook.weight[:] = torch.arange(8.0)[:, None].repeat(1, 3)
    z = torch.zeros(6, 3)  # all nearest to code 0
    vq.eval()
    vq(z)
    assert vq.usage.sum() == 0
    vq.train()
    vq(z)
    assert vq.usage[0] == 6 and vq.usage[1:].sum() == 0
    data = torch.full((4, 3), 42.0)
    n = vq.restart_dead_codes(data, torch.Generator().manual_seed(0))
    assert n == 7
    assert torch.equal(vq.codebook.weight[0], torch.zeros(3))  # the used code is kept
    assert torch.all(vq.codebook.weight[1:] == 42.0)
    assert vq.usage.sum() == 0


def test_kmeans_init_matches_sklearn_and_refuses_too_few_vectors():
    from sklearn.cluster import KMeans

    vq = VectorQuantizer(4, 2)
    z = torch.randn(200, 2, generator=torch.Generator().manual_seed(1))
    vq.init_kmeans(z, seed=3)
    ref = KMeans(4, n_init=1, random_state=3).fit(z.double().numpy()).cluster_centers_
    assert torch.allclose(vq.codebook.weight.double(), torch.as_tensor(ref), atol=1e-5)
    with pytest.raises(ValueError, match="n_codes=4"):
        vq.init_kmeans(torch.zeros(50, 2))


def test_bad_input():
    with pytest.raises(ValueError, match="n_codes"):
        VectorQuantizer(0, 3)
    with pytest.raises(ValueError, match="beta"):
        VectorQuantizer(4, 3, beta=-1)
    vq = VectorQuantizer(4, 3)
    with pytest.raises(ValueError, match=r"\(B, 3, H, W\)"):
        vq(torch.zeros(2, 5, 4, 4))
    with pytest.raises(TypeError, match="floating"):
        vq(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="indices"):
        vq.lookup(torch.tensor([4]))
