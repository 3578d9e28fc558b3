import pytest
import torch

from iclr24.kits.federated import (
    ClientUpdate,
    FedAsync,
    FedAvg,
    FedBuff,
    FedProx,
    check_update,
    fedasync_mix,
    fedavg_aggregate,
    fedbuff_step,
    fedprox_penalty,
    polynomial_staleness,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _vecs(k, p=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(p, generator=g, dtype=torch.float64) for _ in range(k)]


def test_fedavg_weighted_closed_form():
    x = torch.zeros(5, dtype=torch.float64)
    d = _vecs(3)
    w = [1.0, 2.0, 7.0]
    out = fedavg_aggregate(x, d, w, server_lr=0.5)
    expect = 0.5 * (1 * d[0] + 2 * d[1] + 7 * d[2]) / 10
    assert torch.allclose(out, expect)
    assert torch.allclose(fedavg_aggregate(x, d), sum(d) / 3)


def test_fedavg_object_uses_sample_counts():
    x = torch.ones(5, dtype=torch.float64)
    d = _vecs(2)
    ups = [ClientUpdate(d[0], 10), ClientUpdate(d[1], 30)]
    assert torch.allclose(FedAvg().aggregate(x, ups, 1), x + 0.25 * d[0] + 0.75 * d[1])
    assert torch.allclose(FedAvg(weighted=False).aggregate(x, ups, 1), x + 0.5 * (d[0] + d[1]))
    assert FedProx(0.1).client_config(3) == {"prox_mu": 0.1}


def test_update_validation_names_the_problem():
    x = torch.zeros(4)
    with pytest.raises(ValueError, match=r"deltas\[1\] has shape \(3,\)"):
        fedavg_aggregate(x, [torch.zeros(4), torch.zeros(3)])
    with pytest.raises(TypeError, match="torch.Tensor"):
        check_update([0.0] * 4, x)
    with pytest.raises(ValueError, match="NaN"):
        check_update(torch.tensor([0.0, float("nan"), 0.0, 0.0]), x)
    with pytest.raises(ValueError, match="at least one"):
        fedavg_aggregate(x, [])
    with pytest.raises(ValueError, match="weights"):
        fedavg_aggregate(x, [torch.zeros(4)], [-1.0])


def test_fedprox_penalty_gradient_is_mu_times_distance():
    w = torch.randn(6, requires_grad=True)
    a = torch.randn(6)
    fedprox_penalty(w, a, 0.3).backward()
    assert torch.allclose(w.grad, 0.3 * (w.detach() - a))
    with pytest.raises(ValueError):
        fedprox_penalty(w, a, -1.0)


def test_polynomial_staleness():
    assert polynomial_staleness(0, 0.5) == 1.0
    assert polynomial_staleness(3, 0.5) == pytest.approx(0.5)
    assert polynomial_staleness(7, 1.0) == pytest.approx(1 / 8)
    with pytest.raises(ValueError):
        polynomial_staleness(-1)


def test_fedbuff_buffers_then_steps():
    x0 = torch.zeros(5, dtype=torch.float64)
    agg = FedBuff(x0, buffer_size=3, server_lr=2.0)
    d = _vecs(3)
    assert agg.on_arrival(0, d[0], 0) is False
    assert agg.on_arrival(1, d[1], 0) is False
    assert agg.version == 0 and torch.equal(agg.params, x0)
    assert agg.on_arrival(0, d[2], 1) is True
    assert agg.version == 1
    assert torch.allclose(agg.params, 2.0 * sum(d) / 3)
    assert torch.allclose(agg.params, fedbuff_step(x0, d, 2.0))


def test_fedbuff_staleness_weights_do_not_renormalise():
    x0 = torch.zeros(2, dtype=torch.float64)
    agg = FedBuff(x0, 2, staleness_weight=lambda t: polynomial_staleness(t, 1.0))
    agg.on_arrival(0, torch.tensor([1.0, 0.0], dtype=torch.float64), 0)
    agg.on_arrival(1, torch.tensor([0.0, 1.0], dtype=torch.float64), 1)
    assert torch.allclose(agg.params, torch.tensor([0.5, 0.25], dtype=torch.float64))


def test_fedasync_mixes_with_the_received_model():
    x0 = torch.zeros(3, dtype=torch.float64)
    agg = FedAsync(x0, alpha=0.6, staleness_exponent=0.5)
    base = torch.ones(3, dtype=torch.float64)
    delta = torch.full((3,), 2.0, dtype=torch.float64)
    agg.on_arrival(0, delta, staleness=3, base=base)
    a = 0.6 * 0.5  # alpha * (1 + 3)^-0.5
    assert torch.allclose(agg.params, (1 - a) * x0 + a * (base + delta))
    assert agg.version == 1
    with pytest.raises(ValueError, match="base"):
        agg.on_arrival(0, delta, 0)
    assert torch.allclose(fedasync_mix(x0, base, 1.0), base)


def test_async_aggregators_reject_wrong_shapes_and_ids():
    agg = FedBuff(torch.zeros(4), 2)
    with pytest.raises(ValueError, match="shape"):
        agg.on_arrival(0, torch.zeros(5), 0)
    with pytest.raises(ValueError, match="client_id"):
        agg.on_arrival(-1, torch.zeros(4), 0)
    with pytest.raises(ValueError, match="buffer_size"):
        FedBuff(torch.zeros(4), 0)
    with pytest.raises(TypeError, match="flat"):
        FedBuff(torch.zeros(2, 2), 1)
    with pytest.raises(ValueError, match="alpha"):
        FedAsync(torch.zeros(2), alpha=0.0)
