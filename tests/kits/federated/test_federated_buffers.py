"""Floating-point buffers (BatchNorm running statistics) travel with the parameters.

The kit's flat vector is a model's parameters followed by its persistent floating buffers;
integer buffers (``num_batches_tracked``) stay local. A buffer-free model must give exactly the
vector and the FedAvg trajectory of the parameters-only kit it replaced.
"""

import logging

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn.utils import parameters_to_vector

from iclr24.kits.federated import (
    FedAvg,
    TorchClient,
    derive_seed,
    fedavg_aggregate,
    federated_state,
    flatten_params,
    load_flat_params,
    minibatch_indices,
    run_synchronous,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _mlp():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 6), nn.ReLU(), nn.Linear(6, 3))


def _bn_net():
    """BatchNorm first with momentum 1: after a full-batch step its running statistics are
    exactly the batch's mean and unbiased variance of the raw inputs (a closed form)."""
    torch.manual_seed(0)
    return nn.Sequential(nn.BatchNorm1d(3, momentum=1.0), nn.Linear(3, 2))


def _two_clients():
    g = torch.Generator().manual_seed(3)
    xa = torch.randn(30, 3, generator=g) - 2.0
    xb = 2.0 * torch.randn(90, 3, generator=g) + 3.0
    ya = torch.randint(0, 2, (30,), generator=g)
    yb = torch.randint(0, 2, (90,), generator=g)
    # one module per client, so each keeps its own integer buffer
    return [TorchClient(_bn_net(), x, y, lr=0.1, batch_size=x.shape[0], epochs=1)
            for x, y in ((xa, ya), (xb, yb))], (xa, xb)


def _stats(flat):
    net = _bn_net()
    load_flat_params(net, flat)
    return net[0].running_mean.clone(), net[0].running_var.clone()


# --------------------------------------------------------------------- buffer-free: unchanged


def test_buffer_free_vector_is_parameters_to_vector():
    model = _mlp()
    assert [n for n, _ in federated_state(model)] == [n for n, _ in model.named_parameters()]
    assert torch.equal(flatten_params(model), parameters_to_vector(model.parameters()))


def _params_only_fedavg(x0, data, rounds, seed, lr, batch_size, steps):
    """The kit before buffers were federated: parameters_to_vector, SGD, FedAvg of deltas."""
    model = _mlp()
    x = x0.clone()
    for t in range(1, rounds + 1):
        deltas = []
        for k, (xs, ys) in enumerate(data):
            with torch.no_grad():
                offset = 0
                for p in model.parameters():
                    p.copy_(x[offset:offset + p.numel()].view_as(p))
                    offset += p.numel()
            gen = torch.Generator().manual_seed(derive_seed(seed, k, t))
            for idx in minibatch_indices(xs.shape[0], batch_size, gen, steps=steps):
                for p in model.parameters():
                    p.grad = None
                nn.functional.cross_entropy(model(xs[idx]), ys[idx]).backward()
                with torch.no_grad():
                    for p in model.parameters():
                        p.add_(p.grad, alpha=-lr)
            deltas.append(parameters_to_vector(model.parameters()).detach() - x)
        x = fedavg_aggregate(x, deltas, [xs.shape[0] for xs, _ in data])
    return x


def test_buffer_free_fedavg_is_bit_identical_to_the_parameters_only_kit():
    g = torch.Generator().manual_seed(1)
    data = [(torch.randn(n, 4, generator=g), torch.randint(0, 3, (n,), generator=g))
            for n in (25, 40, 33)]
    model = _mlp()
    clients = [TorchClient(model, x, y, lr=0.1, batch_size=8, steps=4) for x, y in data]
    x0 = flatten_params(_mlp())
    got = run_synchronous(x0, clients, FedAvg(), 3, seed=7).final_params
    ref = _params_only_fedavg(x0, data, 3, 7, lr=0.1, batch_size=8, steps=4)
    assert not torch.equal(got, x0)
    assert torch.equal(got, ref)


# --------------------------------------------------------------------- buffers


def test_federated_state_lists_parameters_then_floating_persistent_buffers():
    class WithMask(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(3, 4)
            self.bn = nn.BatchNorm1d(4)
            self.register_buffer("mask", torch.ones(4), persistent=False)

    names = [n for n, _ in federated_state(WithMask())]
    assert names == ["lin.weight", "lin.bias", "bn.weight", "bn.bias", "bn.running_mean",
                     "bn.running_var"]  # no num_batches_tracked (int), no mask (not state)
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        federated_state("net")
    with pytest.raises(ValueError, match="no parameters or floating-point buffers"):
        federated_state(nn.ReLU())


def test_flat_round_trip_with_batchnorm_loads_buffers_and_keeps_the_counter():
    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    net[1].num_batches_tracked.fill_(5)
    p = sum(q.numel() for q in net.parameters())
    v = torch.rand(p + 8) + 0.5
    load_flat_params(net, v)
    assert torch.equal(flatten_params(net), v)
    assert torch.equal(net[1].running_mean, v[p:p + 4])
    assert torch.equal(net[1].running_var, v[p + 4:])
    assert int(net[1].num_batches_tracked) == 5  # integer buffers are local
    with pytest.raises(ValueError, match=rf"flat must be a 1-D tensor with {p + 8} entries"):
        load_flat_params(net, v[:p])


def test_fedavg_round_sets_running_stats_to_the_sample_weighted_mean():
    clients, (xa, xb) = _two_clients()
    x0 = flatten_params(_bn_net())
    out = run_synchronous(x0, clients, FedAvg(), 2, seed=0).final_params
    mean, var = _stats(out)
    # closed form: each client's stats are its data's mean / unbiased variance; FedAvg weighs
    # them by sample count (30 and 90)
    exp_mean = (30 * xa.mean(0) + 90 * xb.mean(0)) / 120
    exp_var = (30 * xa.var(0) + 90 * xb.var(0)) / 120
    assert torch.allclose(mean, exp_mean, atol=1e-5)
    assert torch.allclose(mean, torch.cat([xa, xb]).mean(0), atol=1e-5)
    assert torch.allclose(var, exp_var, atol=1e-4)
    assert not torch.allclose(var, torch.ones(3), atol=0.1)  # moved away from the init
    # num_batches_tracked: never sent, each client's module counted its own 2 batches
    assert [int(c.model[0].num_batches_tracked) for c in clients] == [2, 2]


# --------------------------------------------------------------------- Flower message path


def test_flat_codec_round_trips_a_batchnorm_model_and_names_bad_entries():
    pytest.importorskip("flwr")
    from flwr.app import ArrayRecord

    from iclr24.kits.federated.flower import FlatCodec, tensors_to_arrayrecord

    net = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4), nn.ReLU(), nn.Linear(4, 2))
    net.train()
    net(torch.randn(8, 3))  # non-trivial running statistics
    codec = FlatCodec.from_module(net)
    v = flatten_params(net)
    rec = codec.encode(v)
    assert list(rec.keys()) == [n for n, _ in federated_state(net)]
    state = net.state_dict()
    for name in rec:
        assert np.array_equal(rec[name].numpy(), state[name].numpy()), name
    assert torch.equal(codec.decode(rec), v)

    arrays = {k: a.numpy() for k, a in rec.items()}
    bad_shape = tensors_to_arrayrecord({**arrays, "1.running_var": np.ones(5, np.float32)})
    with pytest.raises(ValueError, match=r"reply from node 3: array '1.running_var' has shape "
                                         r"\(5,\), expected \(4,\)"):
        codec.decode(bad_shape, who="reply from node 3")
    nan_mean = arrays["1.running_mean"].copy()
    nan_mean[2] = np.nan
    with pytest.raises(ValueError, match=r"train message: array '1.running_mean' contains NaN"):
        codec.decode(tensors_to_arrayrecord({**arrays, "1.running_mean": nan_mean}),
                     who="train message")
    with pytest.raises(ValueError, match=r"unexpected \['1.num_batches_tracked'\]"):
        codec.decode(ArrayRecord(net.state_dict()))  # integer buffers are not federated
    with pytest.raises(ValueError, match="flat contains NaN or inf"):
        codec.encode(torch.full_like(v, float("inf")))


def test_flower_fedavg_round_averages_running_stats_like_the_simulator(task_identity):
    pytest.importorskip("flwr")
    from flwr.app import ConfigRecord

    from iclr24.kits.federated.flower import FlatCodec, LocalGrid, SideStateFedAvg, fit_reply

    clients, (xa, xb) = _two_clients()
    x0 = flatten_params(_bn_net())
    codec = FlatCodec.from_module(_bn_net())
    grid = LocalGrid({10 + k: (lambda m, k=k: fit_reply(clients[k], codec, m, client_index=k))
                      for k in range(2)})
    strategy = SideStateFedAvg(min_available_nodes=2, min_train_nodes=2, fraction_evaluate=0.0)
    msgs = list(strategy.configure_train(1, codec.encode(x0), ConfigRecord(), grid))
    replies = list(grid.send_and_receive(msgs))
    arrays, _ = strategy.aggregate_train(1, replies)
    flower = codec.decode(arrays)
    mean, var = _stats(flower)
    assert torch.allclose(mean, (30 * xa.mean(0) + 90 * xb.mean(0)) / 120, atol=1e-5)
    assert torch.allclose(var, (30 * xa.var(0) + 90 * xb.var(0)) / 120, atol=1e-4)
    fresh, _ = _two_clients()
    ref = run_synchronous(x0, fresh, FedAvg(), 1, seed=0).final_params
    assert torch.allclose(flower, ref, atol=1e-5)


def test_only_flwr_run_simulation_deprecation_record_is_dropped():
    pytest.importorskip("flwr")
    from flwr.supercore.logger import warn_deprecated_feature

    from iclr24.kits.federated.flower import _DropRunSimulationDeprecation

    seen = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    flwr_logger = logging.getLogger("flwr")
    handler, drop = Keep(), _DropRunSimulationDeprecation()
    flwr_logger.addHandler(handler)
    flwr_logger.addFilter(drop)
    try:
        warn_deprecated_feature("The `run_simulation` function is deprecated and will be "
                                "removed in a future version of Flower.")
        warn_deprecated_feature("Something else is deprecated.")
    finally:
        flwr_logger.removeFilter(drop)
        flwr_logger.removeHandler(handler)
    assert len(seen) == 1 and "Something else" in seen[0]
