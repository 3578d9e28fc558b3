"""Flower adapters, driven with hand-built messages and an in-process Grid (no engine)."""

import numpy as np
import pytest
import torch
from torch import nn

pytest.importorskip("flwr")

from flwr.app import ArrayRecord, ConfigRecord, Message, MetricRecord, RecordDict

from iclr24.kits.federated import (
    AsyncSimulator,
    ClientUpdate,
    ConstantDelays,
    FedBuff,
    TorchClient,
    fedavg_aggregate,
    flatten_params,
)
from iclr24.kits.federated.flower import (
    AsyncGridServer,
    FlatCodec,
    LocalGrid,
    SideStateFedAvg,
    fit_reply,
    tensors_to_arrayrecord,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))


def test_flat_codec_round_trip_and_shape_errors():
    model = _model()
    codec = FlatCodec.from_module(model)
    v = flatten_params(model)
    rec = codec.encode(v)
    assert list(rec.keys()) == [n for n, _ in model.named_parameters()]
    assert torch.equal(codec.decode(rec), v)
    bad = tensors_to_arrayrecord({**{k: a.numpy() for k, a in rec.items()},
                                  "0.weight": np.zeros((5, 3), dtype=np.float32)})
    with pytest.raises(ValueError, match=r"'0.weight' has shape \(5, 3\), expected \(4, 3\)"):
        codec.decode(bad, who="reply from node 7")
    with pytest.raises(ValueError, match="missing"):
        codec.decode(tensors_to_arrayrecord({"0.weight": np.zeros((4, 3))}))
    with pytest.raises(ValueError, match="shape"):
        codec.encode(torch.zeros(3))


class Quad:
    def __init__(self, c):
        self.c = c

    def fit(self, params, config):
        return ClientUpdate(-0.5 * (params - self.c), 1)


def _reply_handler(client, codec):
    return lambda msg: fit_reply(client, codec, msg)


def test_async_grid_server_matches_the_in_process_simulator():
    n, p = 4, 5
    cs = [torch.full((p,), float(k), dtype=torch.float64) for k in range(n)]
    codec = FlatCodec({"w": (p,)}, torch.float64)
    times = {10 + k: 1.0 + 0.37 * k for k in range(n)}  # node 10+k is client k
    grid = LocalGrid({10 + k: _reply_handler(Quad(cs[k]), codec) for k in range(n)}, times)
    x0 = torch.zeros(p, dtype=torch.float64)
    server = AsyncGridServer(grid, FedBuff(x0, 2), codec, concurrency=n)
    hist = server.run(max_server_updates=12)
    sim = AsyncSimulator([Quad(c) for c in cs], FedBuff(x0, 2), concurrency=n,
                         delays=ConstantDelays([times[10 + k] for k in range(n)]))
    ref = sim.run(max_server_updates=12)
    assert torch.allclose(hist.final_params, ref.final_params, atol=1e-12)
    assert hist.staleness == ref.staleness
    assert server.aggregator.version == 12


def test_async_grid_server_rejects_a_wrong_shaped_reply_and_survives_errors():
    p = 3
    codec = FlatCodec({"w": (p,)}, torch.float64)

    def bad(msg):
        return Message(RecordDict({"arrays": tensors_to_arrayrecord({"w": np.zeros(p + 2)}),
                                   "metrics": MetricRecord({"num-examples": 1})}), reply_to=msg)

    grid = LocalGrid({1: bad, 2: bad})
    server = AsyncGridServer(grid, FedBuff(torch.zeros(p, dtype=torch.float64), 1), codec,
                             concurrency=1)
    with pytest.raises(ValueError, match=r"reply from node \d: array 'w' has shape \(5,\)"):
        server.run(max_arrivals=1)
    with pytest.raises(ValueError, match="concurrency"):
        AsyncGridServer(grid, FedBuff(torch.zeros(p, dtype=torch.float64), 1), codec,
                        concurrency=3)
    with pytest.raises(ValueError, match="codec"):
        AsyncGridServer(grid, FedBuff(torch.zeros(p + 1), 1), codec, concurrency=1)


def test_fit_reply_runs_a_torch_client():
    model = _model()
    codec = FlatCodec.from_module(model)
    x = torch.randn(20, 3)
    y = torch.randint(0, 2, (20,))
    client = TorchClient(model, x, y, lr=0.1, batch_size=5, steps=3)
    grid = LocalGrid({3: lambda m: fit_reply(client, codec, m)})
    v = flatten_params(model)
    msg = grid.create_message(RecordDict({"arrays": codec.encode(v),
                                          "config": ConfigRecord({"server-round": 2})}),
                              "train", 3, "2")
    ids = list(grid.push_messages([msg]))
    (reply,) = grid.pull_messages(ids)
    assert reply.metadata.reply_to_message_id == ids[0]
    new = codec.decode(reply.content["arrays"])
    assert new.shape == v.shape and not torch.equal(new, v)
    assert reply.content["metrics"]["num-examples"] == 20


class SumSide(SideStateFedAvg):
    side_key = "extra"

    def __init__(self, **kw):
        super().__init__(**kw)
        self.seen = []

    def side_state(self, server_round):
        return tensors_to_arrayrecord({"s": np.array([float(server_round)])})

    def aggregate_side(self, server_round, replies):
        self.seen = [float(m.content["extra"]["s"].numpy()[0]) for m in replies]


def test_side_state_fedavg_hooks(task_identity):
    strat = SumSide(min_available_nodes=2, min_train_nodes=2)
    grid = LocalGrid({1: lambda m: m, 2: lambda m: m})
    arrays = ArrayRecord({"w": tensors_to_arrayrecord({"w": np.zeros(3)})["w"]})
    msgs = list(strat.configure_train(4, arrays, ConfigRecord(), grid))
    assert len(msgs) == 2
    assert all(float(m.content["extra"]["s"].numpy()[0]) == 4.0 for m in msgs)
    assert all(m.content["config"]["server-round"] == 4 for m in msgs)
    # replies: model arrays + side record + metrics, built by hand
    ws = [np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0, 1.0])]
    replies = []
    for m, w, n, s in zip(msgs, ws, (1, 3), (5.0, 7.0)):
        m.metadata.__dict__["_message_id"] = f"id{n}"
        replies.append(Message(RecordDict({
            "arrays": tensors_to_arrayrecord({"w": w}),
            "extra": tensors_to_arrayrecord({"s": np.array([s])}),
            "metrics": MetricRecord({"num-examples": n})}), reply_to=m))
    agg, _metrics = strat.aggregate_train(4, replies)
    expect = fedavg_aggregate(torch.zeros(3, dtype=torch.float64),
                              [torch.as_tensor(w) for w in ws], [1, 3])
    assert np.allclose(agg["w"].numpy(), expect.numpy())
    assert strat.seen == [5.0, 7.0]


class _LateGrid:
    """Nodes register only after a few polls (as in a real Flower run)."""

    def __init__(self, ids, after):
        self.ids, self.after, self.calls = ids, after, 0

    def get_node_ids(self):
        self.calls += 1
        return self.ids if self.calls > self.after else []


def test_wait_for_nodes_waits_then_times_out_with_a_clear_error():
    from iclr24.kits.federated.flower import wait_for_nodes

    grid = _LateGrid([9, 3, 5], after=3)
    assert wait_for_nodes(grid, 2, timeout=5.0, poll_interval=0.001) == [3, 5]
    assert grid.calls == 4
    with pytest.raises(TimeoutError, match="only 3 of the 4 expected nodes"):
        wait_for_nodes(_LateGrid([1, 2, 3], after=0), 4, timeout=0.02, poll_interval=0.005)
    with pytest.raises(ValueError, match="num_nodes"):
        wait_for_nodes(grid, 0)


def test_async_jobs_are_seeded_per_node_job_not_per_server_version():
    """One node dispatched three times at server version 0 (buffer 3) gets three different
    job seeds, so its minibatches differ; the seeds follow the simulator's derivation."""
    from iclr24.kits.federated import derive_seed

    model = _model()
    codec = FlatCodec.from_module(model)
    g = torch.Generator().manual_seed(1)
    client = TorchClient(model, torch.randn(40, 3, generator=g),
                         torch.randint(0, 2, (40,), generator=g), lr=0.1, batch_size=4, steps=2)
    deltas = []

    def handler(msg):
        reply = fit_reply(client, codec, msg)
        deltas.append(codec.decode(reply.content["arrays"]) - codec.decode(msg.content["arrays"]))
        return reply

    grid = LocalGrid({7: handler})
    server = AsyncGridServer(grid, FedBuff(flatten_params(model), 3), codec, concurrency=1,
                             seed=5)
    server.run(max_arrivals=3)
    configs = [m.content["config"] for m in grid.pushed]
    assert [c["server-version"] for c in configs] == [0, 0, 0]
    assert [c["node-job"] for c in configs] == [0, 1, 2]
    assert [c["job-seed"] for c in configs] == [derive_seed(5, 0, j) for j in range(3)]
    assert not torch.allclose(deltas[0], deltas[1]) and not torch.allclose(deltas[1], deltas[2])


def test_async_grid_server_with_sgd_clients_reproduces_the_simulator():
    """Same seed, same job seeds: TorchClients on the grid give the simulator's model."""
    n = 3
    model = _model()
    codec = FlatCodec.from_module(model)
    g = torch.Generator().manual_seed(2)
    clients = [TorchClient(model, torch.randn(30, 3, generator=g),
                           torch.randint(0, 2, (30,), generator=g), lr=0.1, batch_size=5,
                           steps=3) for _ in range(n)]
    times = [1.0, 1.3, 1.7]
    grid = LocalGrid({k: _reply_handler(clients[k], codec) for k in range(n)},
                     dict(enumerate(times)))
    x0 = flatten_params(model)
    hist = AsyncGridServer(grid, FedBuff(x0, 2), codec, concurrency=n, seed=4).run(
        max_server_updates=5)
    ref = AsyncSimulator(clients, FedBuff(x0, 2), concurrency=n, delays=ConstantDelays(times),
                         seed=4).run(max_server_updates=5)
    assert torch.allclose(hist.final_params, ref.final_params, atol=1e-6)
