import numpy as np
import pytest
import torch
from torch import nn

from iclr24.kits.federated import (
    AsyncSimulator,
    ClientUpdate,
    ConstantDelays,
    ExponentialDelays,
    FedAsync,
    FedAvg,
    FedBuff,
    FitConfig,
    History,
    TorchClient,
    accuracy,
    derive_seed,
    flatten_params,
    load_flat_params,
    local_sgd,
    lognormal_client_means,
    minibatch_indices,
    run_synchronous,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


class Quadratic:
    """f_k(w) = ||w - c_k||^2 / 2; one gradient step with lr eta: delta = -eta (w - c_k)."""

    def __init__(self, c, eta=0.5, noise=0.0):
        self.c, self.eta, self.noise = c, eta, noise

    def fit(self, params, config):
        delta = -self.eta * (params - self.c)
        if self.noise:
            g = torch.Generator().manual_seed(config.seed)
            delta = delta + self.noise * torch.randn(params.shape, generator=g,
                                                     dtype=params.dtype)
        return ClientUpdate(delta, num_examples=1, metrics={"dist": float((params - self.c).norm())})


def _centers(n=4, d=3):
    return [torch.full((d,), float(k), dtype=torch.float64) for k in range(n)]


def test_synchronous_fedavg_matches_closed_form():
    cs = _centers()
    clients = [Quadratic(c) for c in cs]
    x0 = torch.full((3,), 10.0, dtype=torch.float64)
    hist = run_synchronous(x0, clients, FedAvg(), 6, eval_fn=lambda x: {"x0": float(x[0])})
    cbar = sum(cs) / len(cs)
    expect = cbar + (0.5 ** 6) * (x0 - cbar)  # x_T = c + (1 - eta)^T (x0 - c)
    assert torch.allclose(hist.final_params, expect)
    assert hist.column("round").tolist() == list(range(7))
    assert len(hist.train) == 6 and "dist" in hist.train[0]


def test_synchronous_sampling_is_seeded():
    clients = [Quadratic(c, noise=0.1) for c in _centers(6)]
    x0 = torch.zeros(3, dtype=torch.float64)
    a = run_synchronous(x0, clients, FedAvg(), 5, seed=1, clients_per_round=2)
    b = run_synchronous(x0, clients, FedAvg(), 5, seed=1, clients_per_round=2)
    c = run_synchronous(x0, clients, FedAvg(), 5, seed=2, clients_per_round=2)
    assert torch.equal(a.final_params, b.final_params)
    assert not torch.equal(a.final_params, c.final_params)
    with pytest.raises(ValueError, match="clients_per_round"):
        run_synchronous(x0, clients, FedAvg(), 1, clients_per_round=7)


def test_wrong_shape_client_update_is_rejected():
    class Bad:
        def fit(self, params, config):
            return ClientUpdate(torch.zeros(params.numel() + 1, dtype=params.dtype), 1)

    x0 = torch.zeros(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="client 1"):
        run_synchronous(x0, [Quadratic(x0), Bad()], FedAvg(), 1)
    sim = AsyncSimulator([Bad(), Bad()], FedBuff(x0, 1), concurrency=1,
                         delays=ConstantDelays(1.0))
    with pytest.raises(ValueError, match="shape"):
        sim.run(max_arrivals=2)


def _async_run(seed, agg_cls=FedBuff, n=8):
    clients = [Quadratic(c, noise=0.05) for c in _centers(n)]
    x0 = torch.zeros(3, dtype=torch.float64)
    agg = agg_cls(x0, 3) if agg_cls is FedBuff else agg_cls(x0)
    means = lognormal_client_means(n, 1.0, seed=seed)
    sim = AsyncSimulator(clients, agg, concurrency=4, delays=ExponentialDelays(means), seed=seed)
    return sim.run(max_arrivals=60, eval_fn=lambda x: {"x": float(x.sum())}, eval_every=3)


def test_async_simulator_is_deterministic_in_its_seed():
    a, b, c = _async_run(0), _async_run(0), _async_run(1)
    assert a.records == b.records and a.staleness == b.staleness
    assert torch.equal(a.final_params, b.final_params)
    assert a.records != c.records


def test_async_simulator_records_time_staleness_and_versions():
    h = _async_run(0)
    t = h.column("time")
    assert np.all(np.diff(t) >= 0)
    assert h.column("arrivals")[-1] == 60
    assert h.column("version")[-1] == 20  # FedBuff(M=3): one update per 3 arrivals
    assert len(h.staleness) == 60 and min(h.staleness) >= 0 and max(h.staleness) > 0
    h2 = _async_run(0, FedAsync)
    assert h2.column("version")[-1] == 60


def test_zero_delay_full_concurrency_after_update_is_synchronous_fedavg():
    n = 5
    cs = _centers(n)
    x0 = torch.full((3,), -4.0, dtype=torch.float64)
    sync = run_synchronous(x0, [Quadratic(c) for c in cs], FedAvg(weighted=False), 7)
    sim = AsyncSimulator([Quadratic(c) for c in cs], FedBuff(x0, n), concurrency=n,
                         delays=ConstantDelays(0.0), dispatch="after_update")
    hist = sim.run(max_server_updates=7)
    assert torch.allclose(hist.final_params, sync.final_params, atol=1e-12)
    assert set(hist.staleness) == {0}


def test_async_argument_validation():
    clients = [Quadratic(c) for c in _centers(3)]
    x0 = torch.zeros(3, dtype=torch.float64)
    with pytest.raises(ValueError, match="concurrency"):
        AsyncSimulator(clients, FedBuff(x0, 1), concurrency=4, delays=ConstantDelays())
    with pytest.raises(ValueError, match="dispatch"):
        AsyncSimulator(clients, FedBuff(x0, 1), concurrency=1, delays=ConstantDelays(),
                       dispatch="sometimes")
    sim = AsyncSimulator(clients, FedBuff(x0, 5), concurrency=2, delays=ConstantDelays(1.0),
                         dispatch="after_update")
    with pytest.raises(RuntimeError, match="buffer"):
        sim.run(max_server_updates=1)
    with pytest.raises(ValueError, match="max_arrivals"):
        sim.run()
    with pytest.raises(ValueError, match="means"):
        ExponentialDelays([1.0, 0.0])


def test_history_column_errors():
    h = History(records=[{"a": 1.0}])
    with pytest.raises(ValueError, match="no column 'b'"):
        h.column("b")
    assert h.last_mean("a", 3) == 1.0


def test_derive_seed_distinguishes_keys():
    seeds = {derive_seed(0, k, r) for k in range(10) for r in range(10)}
    assert len(seeds) == 100
    assert derive_seed(3, "delays") == derive_seed(3, "delays")
    assert 0 <= derive_seed(5, "x") < 2**63


def test_minibatch_indices_epochs_and_steps():
    g = torch.Generator().manual_seed(0)
    batches = list(minibatch_indices(10, 3, g, epochs=2))
    assert len(batches) == 8
    first = torch.cat(batches[:4])
    assert sorted(first.tolist()) == list(range(10))
    steps = list(minibatch_indices(10, 4, torch.Generator().manual_seed(0), steps=5))
    assert len(steps) == 5 and all(len(b) <= 4 for b in steps)
    with pytest.raises(ValueError, match="exactly one"):
        list(minibatch_indices(10, 3, g))


def test_flat_params_round_trip_without_aliasing():
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
    v = torch.randn(sum(p.numel() for p in model.parameters()))
    keep = v.clone()
    load_flat_params(model, v)
    assert torch.equal(flatten_params(model), v)
    with torch.no_grad():
        next(model.parameters()).add_(1.0)
    assert torch.equal(v, keep)  # the caller's vector is not a view of the parameters
    with pytest.raises(ValueError, match="parameter count"):
        load_flat_params(model, torch.zeros(3))


def _blobs(n=200, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.randint(0, 2, (n,), generator=g)
    x = torch.randn(n, 2, generator=g) + 3.0 * (2 * y[:, None] - 1)
    return x, y


def test_local_sgd_learns_and_fedprox_restrains():
    x, y = _blobs()
    model = nn.Linear(2, 2)
    p0 = torch.zeros(6)
    d, _loss = local_sgd(model, p0, x, y, lr=0.1, batch_size=20,
                        generator=torch.Generator().manual_seed(0), epochs=3)
    assert accuracy(model, p0 + d, x, y) > 0.95
    d_prox, _ = local_sgd(model, p0, x, y, lr=0.1, batch_size=20,
                          generator=torch.Generator().manual_seed(0), epochs=3, prox_mu=5.0)
    assert d_prox.norm() < d.norm()
    d2, _ = local_sgd(model, p0, x, y, lr=0.1, batch_size=20,
                      generator=torch.Generator().manual_seed(0), epochs=3)
    assert torch.equal(d, d2)


def test_torch_client_reads_prox_mu_from_the_strategy():
    x, y = _blobs()
    model = nn.Linear(2, 2)
    c = TorchClient(model, x, y, lr=0.1, batch_size=16, steps=5)
    p0 = torch.zeros(6)
    u = c.fit(p0, FitConfig(1, 7))
    u_prox = c.fit(p0, FitConfig(1, 7, {"prox_mu": 5.0}))
    assert u.num_examples == 200 and u.delta.shape == (6,)
    assert u_prox.delta.norm() < u.delta.norm()
    with pytest.raises(ValueError, match="exactly one"):
        TorchClient(model, x, y, lr=0.1, batch_size=4)
