"""FedImpro's Flower strategy and client, driven by hand-built messages (no engine)."""

import numpy as np
import pytest
import torch

pytest.importorskip("flwr")

from flwr.app import ConfigRecord, Message, MetricRecord, RecordDict

from iclr24.kits.federated import fedavg_aggregate, flatten_params
from iclr24.kits.federated.flower import (
    FlatCodec,
    LocalGrid,
    arrayrecord_to_tensors,
    tensors_to_arrayrecord,
)
from iclr24.papers.fedimpro import FedImproClient, aggregate_class_gaussians, digits_mlp
from iclr24.papers.fedimpro.flower import (
    BANK_KEY,
    FedImproStrategy,
    fedimpro_client_app,
    fedimpro_train_reply,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _clients():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(60, 8, generator=g)
    y = torch.randint(0, 3, (60,), generator=g)
    net = digits_mlp(8, 6, 3)
    return net, [FedImproClient(net, x[:20], y[:20], num_classes=3, nominal_count=20.0,
                                max_rounds=10),
                 FedImproClient(net, x[20:], y[20:], num_classes=3, nominal_count=20.0,
                                max_rounds=10)]


def test_strategy_ships_the_bank_and_aggregates_replies(task_identity):
    net, clients = _clients()
    codec = FlatCodec.from_module(net)
    nodes = {5: clients[0], 9: clients[1]}
    grid = LocalGrid({n: (lambda m, c=c: fedimpro_train_reply(c, m)) for n, c in nodes.items()})
    strat = FedImproStrategy(3, 6, min_available_nodes=2, min_train_nodes=2)
    p0 = flatten_params(net)
    msgs = list(strat.configure_train(3, codec.encode(p0), ConfigRecord(), grid))
    assert len(msgs) == 2
    for m in msgs:
        bank = arrayrecord_to_tensors(m.content[BANK_KEY])
        assert torch.allclose(bank["mean"], strat.bank["mean"])
        assert m.content["config"]["server-round"] == 3
    replies = grid.send_and_receive(msgs)
    assert len(replies) == 2
    arrays, metrics = strat.aggregate_train(3, replies)
    # model: Flower's FedAvg weighted by num-examples over the returned models
    models = [codec.decode(r.content["arrays"]) for r in replies]
    ns = [r.content["metrics"]["num-examples"] for r in replies]
    expect = fedavg_aggregate(torch.zeros_like(p0), models, ns)
    assert torch.allclose(codec.decode(arrays), expect, atol=1e-6)
    assert "train-loss" in metrics
    # bank: aggregate_class_gaussians over the uploaded banks with their class counts
    ups = [arrayrecord_to_tensors(r.content[BANK_KEY]) for r in replies]
    ref = aggregate_class_gaussians([{"mean": u["mean"], "std": u["std"]} for u in ups],
                                    np.stack([u["class_counts"].numpy() for u in ups]))
    assert torch.allclose(strat.bank["mean"], ref["mean"], atol=1e-6)
    assert torch.allclose(strat.bank["std"], ref["std"], atol=1e-6)
    assert set(strat.node_counts) == {5, 9}


def test_strategy_rejects_malformed_bank_replies(task_identity):
    strat = FedImproStrategy(3, 6, min_available_nodes=1, min_train_nodes=1)
    grid = LocalGrid({1: lambda m: m})
    msg = grid.create_message(RecordDict({"arrays": tensors_to_arrayrecord({"w": np.zeros(2)})}),
                              "train", 1, "1")
    grid.push_messages([msg])
    bad_bank = tensors_to_arrayrecord({"mean": np.zeros((3, 5)), "std": np.zeros((3, 6)),
                                       "class_counts": np.ones(3)})
    reply = Message(RecordDict({"arrays": tensors_to_arrayrecord({"w": np.ones(2)}),
                                BANK_KEY: bad_bank,
                                "metrics": MetricRecord({"num-examples": 4})}), reply_to=msg)
    with pytest.raises(ValueError, match=r"node 1: fedimpro-bank\['mean'\] must have shape"):
        strat.aggregate_train(1, [reply])
    missing = Message(RecordDict({"arrays": tensors_to_arrayrecord({"w": np.ones(2)}),
                                  "metrics": MetricRecord({"num-examples": 4})}), reply_to=msg)
    with pytest.raises(ValueError, match="no 'fedimpro-bank'"):
        strat.aggregate_train(1, [missing])


def test_client_reply_requires_the_bank_and_the_right_model():
    net, clients = _clients()
    codec = FlatCodec.from_module(net)
    grid = LocalGrid({1: lambda m: m})
    msg = grid.create_message(RecordDict({"arrays": codec.encode(flatten_params(net))}),
                              "train", 1, "1")
    with pytest.raises(ValueError, match="fedimpro-bank"):
        fedimpro_train_reply(clients[0], msg)
    wrong = grid.create_message(RecordDict({
        "arrays": tensors_to_arrayrecord({"w": np.zeros(3)}),
        BANK_KEY: tensors_to_arrayrecord({"mean": np.zeros((3, 6)), "std": np.zeros((3, 6))})}),
        "train", 1, "1")
    with pytest.raises(ValueError, match="missing"):
        fedimpro_train_reply(clients[0], wrong)
    app = fedimpro_client_app(lambda ctx: clients[0])
    assert app is not None
