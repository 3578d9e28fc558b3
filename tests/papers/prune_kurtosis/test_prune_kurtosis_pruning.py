"""Cosine curve, kurtosis recipe and pruning utilities of prune_kurtosis."""

import copy
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import kurtosis
from torch import nn
from torch.nn.utils import prune

from iclr24.papers.prune_kurtosis import (
    DEFAULT_AMOUNTS,
    allowed_amount,
    cosine_prune_curve,
    cosine_similarity,
    flatten_params,
    global_magnitude_prune,
    kurtosis_modifier,
    kurtosis_of_kurtoses,
    make_pruning_permanent,
    prunable_fraction,
    prune_and_finetune,
    random_global_prune,
    safe_prune_amount,
    tensor_kurtoses,
    utopia_prune_amount,
)


def _net(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(6, 16), nn.ReLU(), nn.BatchNorm1d(16), nn.Linear(16, 3))


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_analytic_curve_equals_real_global_pruning(p):
    net = _net()
    with torch.no_grad():  # BatchNorm affine parameters differ from 1/0 so they matter
        net[2].weight.normal_()
        net[2].bias.normal_()
    theta = flatten_params(net).double().numpy()
    pruned = global_magnitude_prune(copy.deepcopy(net), p)
    real = cosine_similarity(theta, flatten_params(pruned).double().numpy())
    assert cosine_prune_curve(net, [p])[0] == pytest.approx(real, abs=1e-6)
    n = theta.size
    assert int((flatten_params(pruned) == 0).sum()) == round(p * n)


def test_curve_endpoints_and_monotone():
    cs = cosine_prune_curve(_net())
    assert cs[0] == 1.0 and cs[-1] == 0.0
    assert np.all(np.diff(cs) <= 1e-15)
    assert np.all(cosine_prune_curve(np.zeros(5), [0, 0.5]) == 0)
    with pytest.raises(ValueError, match="prune amounts must lie in \\[0, 1\\]"):
        cosine_prune_curve(_net(), [0.5, 1.2])
    with pytest.raises(ValueError, match="prune amounts must lie in \\[0, 1\\]"):
        cosine_prune_curve(_net(), [-0.1])


@given(st.integers(0, 10_000), st.floats(0.01, 0.99))
def test_l1_beats_any_other_mask_of_equal_size(seed, p):
    rng = np.random.default_rng(seed)
    theta = rng.standard_t(4, 300)
    l1 = cosine_prune_curve(theta, [p])[0]
    k = round(p * theta.size)
    for _ in range(5):
        drop = np.zeros(theta.size, bool)
        drop[rng.choice(theta.size, k, replace=False)] = True
        assert cosine_similarity(theta, np.where(drop, 0, theta)) <= l1 + 1e-12


def test_utopia_point():
    a = np.array([0.0, 0.5, 1.0])
    assert utopia_prune_amount(a, np.array([1.0, 0.9, 0.0])) == 0.5  # (0.9, 0.5): 0.51
    assert utopia_prune_amount(a, np.array([1.0, 0.0, 0.0])) == 0.0  # tie at distance 1
    with pytest.raises(ValueError, match="shape"):
        utopia_prune_amount(a, np.ones(2))


def test_prunable_fraction_uniform_closed_form():
    # uniform on [0,1]: pruning the smallest a leaves CS^2 = 1 - a^3 -> a = (1 - 0.95^2)^(1/3)
    theta = np.linspace(0, 1, 200_001)[1:]
    assert prunable_fraction(theta, 0.95) == pytest.approx((1 - 0.95**2) ** (1 / 3), abs=1e-4)
    with pytest.raises(ValueError, match="cs_floor"):
        prunable_fraction(theta, 1.0)


def test_kurtosis_of_kurtoses_matches_scipy_by_hand():
    net = nn.Sequential(nn.Linear(5, 7), nn.Linear(7, 2))
    tensors = [net[0].weight, net[0].bias, net[1].weight, net[1].bias]
    ks = [kurtosis(t.detach().numpy().ravel(), fisher=False) for t in tensors]
    assert np.allclose(tensor_kurtoses(net), ks)
    assert kurtosis_of_kurtoses(net) == pytest.approx(kurtosis(ks, fisher=False))
    only_w = tensor_kurtoses(net, include=("weight",))
    assert np.allclose(only_w, [ks[0], ks[2]])


def test_kurtosis_modifier_branches():
    e = math.e
    assert kurtosis_modifier(2.0) == pytest.approx(1.0)
    assert kurtosis_modifier(e - 1e-9) == pytest.approx(1 / math.log2(e))
    assert kurtosis_modifier(e) == pytest.approx(1.0)  # 1/ln(e)
    assert kurtosis_modifier(10.0) == pytest.approx(1 / math.log(10.0))
    for bad in (1.0, 0.5, -3.0, float("nan"), True):
        with pytest.raises(ValueError, match="> 1"):
            kurtosis_modifier(bad)


def test_safe_amount_is_clipped_to_utopia():
    net = _net(3)
    p_star = utopia_prune_amount(DEFAULT_AMOUNTS, cosine_prune_curve(net))
    assert safe_prune_amount(net, kk=1.5) == pytest.approx(p_star)  # modifier > 1: clipped
    assert safe_prune_amount(net, kk=20.0) == pytest.approx(p_star / math.log(20.0))
    with pytest.raises(ValueError, match="> 1"):
        safe_prune_amount(net, kk=0.9)


def test_random_prune_count_and_seed():
    net = _net()
    n = flatten_params(net).numel()
    a = random_global_prune(copy.deepcopy(net), 0.4, np.random.default_rng(1))
    b = random_global_prune(copy.deepcopy(net), 0.4, np.random.default_rng(1))
    def masked(m):
        return torch.cat([b.reshape(-1) == 0 for name, b in m.named_buffers()
                          if name.endswith("_mask")])

    za, zb = masked(a), masked(b)
    assert za.numel() == n and int(za.sum()) == round(0.4 * n) and torch.equal(za, zb)
    assert not torch.equal(za, masked(random_global_prune(copy.deepcopy(net), 0.4,
                                                          np.random.default_rng(2))))
    with pytest.raises(ValueError, match="prune amount must be a number in \\[0, 1\\]"):
        random_global_prune(copy.deepcopy(net), 1.5, np.random.default_rng(0))
    with pytest.raises(ValueError, match="prune amount must be a number in \\[0, 1\\]"):
        global_magnitude_prune(copy.deepcopy(net), -0.2)


def test_pruned_weights_stay_zero_through_finetuning(one_torch_thread):
    torch.manual_seed(0)
    X, y = torch.randn(300, 6), torch.randint(0, 3, (300,))
    net = _net()
    rep = prune_and_finetune(net, 0.6, X, y, X, y, epochs=2, lr=0.1,
                             rng=np.random.default_rng(0))
    zeros_after = flatten_params(net) == 0
    assert rep.sparsity == pytest.approx(round(0.6 * zeros_after.numel()) / zeros_after.numel())
    assert int(zeros_after.sum()) >= round(0.6 * zeros_after.numel())
    # the masks are still there and the masked entries are exactly zero
    assert hasattr(net[0], "weight_mask")
    assert torch.all(net[0].weight[net[0].weight_mask == 0] == 0)
    make_pruning_permanent(net)
    assert "weight_orig" not in dict(net[0].named_parameters())
    assert torch.equal(flatten_params(net) == 0, zeros_after)
    with pytest.raises(ValueError, match="method"):
        prune_and_finetune(_net(), 0.5, X, y, X, y, method="magnitude")


def test_flatten_params_sees_masked_weights():
    net = _net()
    prune.l1_unstructured(net[0], "weight", amount=0.5)
    flat = flatten_params(net)
    assert int((flat[: 6 * 16] == 0).sum()) == 48
    with pytest.raises(TypeError, match="nn.Module"):
        flatten_params(np.zeros(3))
    with pytest.raises(ValueError, match="no parameters named"):
        flatten_params(net, include=("gamma",))


def test_allowed_amount_reads_the_curve_up_to_the_first_loss():
    amounts = [0.1, 0.3, 0.5, 0.7, 0.9]
    # a later recovery (0.9) does not count: every amount up to the answer must be safe
    assert allowed_amount(amounts, [0.95, 0.94, 0.90, 0.80, 0.95], 0.95, 0.02) == 0.3
    assert allowed_amount(amounts, [0.95] * 5, 0.95, 0.02) == 0.9
    assert allowed_amount(amounts, [0.5] * 5, 0.95, 0.02) == 0.0
    assert allowed_amount(amounts, [0.95, 0.93, 0.92, 0.5, 0.5], 0.95, 0.02) == 0.3  # 0.02 exact
    with pytest.raises(ValueError, match="ascending"):
        allowed_amount([0.5, 0.1], [0.9, 0.9], 0.9, 0.01)
    with pytest.raises(ValueError, match="one length"):
        allowed_amount([0.1, 0.5], [0.9], 0.9, 0.01)
    with pytest.raises(ValueError, match="finite"):
        allowed_amount([0.1, 0.5], [0.9, float("nan")], 0.9, 0.01)


def test_nan_weight_is_refused_not_turned_into_a_curve():
    model = nn.Sequential(nn.Linear(4, 3), nn.Linear(3, 2))
    with torch.no_grad():
        model[0].weight[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        cosine_prune_curve(model)
    with pytest.raises(ValueError, match="NaN"):
        safe_prune_amount(model)
    with pytest.raises(ValueError, match=r"Linear\.weight"):
        tensor_kurtoses(model)
    with pytest.raises(ValueError, match="NaN"):
        prunable_fraction(np.array([1.0, np.nan, 2.0]))
