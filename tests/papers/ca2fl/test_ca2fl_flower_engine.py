"""CA²FL as a ServerApp on Flower's own simulation engine (Ray backend): 4 nodes, 3 updates.

Before the fix the ServerApp read the node ids before any node had registered and failed with
``num_clients must be a positive int, got 0``."""

import sys

import pytest
import torch

pytest.importorskip("flwr.simulation")
pytest.importorskip("ray")

import cloudpickle

from iclr24.kits.federated import (
    TorchClient,
    digits_split,
    dirichlet_label_partition,
    flatten_params,
)
from iclr24.kits.federated.flower import run_on_simulation_engine
from iclr24.papers.ca2fl.flower_server import ca2fl_server_app, sgd_client_app

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NODES, BUFFER, UPDATES = 4, 2, 3


def _model():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 10))


def _client(context):
    torch.set_num_threads(1)
    data = digits_split(seed=0)
    parts = dirichlet_label_partition(data.y_train.numpy(), NODES, 0.5, min_partition_size=20,
                                      seed=0)
    p = torch.as_tensor(parts[int(context.node_config["partition-id"])])
    return TorchClient(_model(), data.x_train[p], data.y_train[p], lr=0.05, batch_size=16,
                       steps=5)


def _train_loss(params):
    data = digits_split(seed=0)
    model = _model()
    torch.nn.utils.vector_to_parameters(params.clone(), model.parameters())
    with torch.no_grad():
        return float(torch.nn.functional.cross_entropy(model(data.x_train), data.y_train))


@pytest.mark.serial
@pytest.mark.timeout(600)  # Ray's start-up alone can take minutes on a loaded machine
def test_ca2fl_server_app_runs_on_the_simulation_engine():
    hists = []
    server = ca2fl_server_app(_model, num_nodes=NODES, buffer_size=BUFFER, concurrency=NODES,
                              max_server_updates=UPDATES, on_finish=hists.append)
    run_on_simulation_engine(server, sgd_client_app(_client), NODES)
    assert len(hists) == 1
    hist = hists[0]
    assert len(hist.staleness) == BUFFER * UPDATES  # every arrival reached CA²FL
    assert all(s >= 0 for s in hist.staleness)
    x0 = flatten_params(_model())
    assert torch.isfinite(hist.final_params).all()
    assert _train_loss(hist.final_params) < _train_loss(x0)
