"""FedAvg on Flower's own simulation engine (Ray backend): 4 nodes, 2 rounds, equal to the
in-process ``run_synchronous`` FedAvg with the same clients and job seeds."""

import sys

import pytest
import torch

pytest.importorskip("flwr.simulation")
pytest.importorskip("ray")

import cloudpickle
from flwr.clientapp import ClientApp
from flwr.serverapp import ServerApp
from flwr.serverapp.strategy import FedAvg as FlowerFedAvg

from iclr24.kits.federated import (
    FedAvg,
    TorchClient,
    digits_split,
    flatten_params,
    iid_partition,
    run_synchronous,
)
from iclr24.kits.federated.flower import (
    FlatCodec,
    client_index,
    fit_reply,
    run_on_simulation_engine,
)

# the ClientApp's closures travel to Ray workers, which cannot import a test module by name
cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NODES, ROUNDS = 4, 2


def _model():
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return torch.nn.Sequential(torch.nn.Linear(64, 16), torch.nn.ReLU(),
                                   torch.nn.Linear(16, 10))


def _clients():
    data = digits_split(seed=0)
    model = _model()
    parts = iid_partition(data.x_train.shape[0], NODES, seed=0)
    return [TorchClient(model, data.x_train[torch.as_tensor(p)],
                        data.y_train[torch.as_tensor(p)], lr=0.05, batch_size=16, steps=5)
            for p in parts]


@pytest.mark.serial
@pytest.mark.timeout(600)  # Ray's start-up alone can take minutes on a loaded machine
def test_fedavg_on_the_simulation_engine_matches_the_in_process_run():
    x0 = flatten_params(_model())
    codec = FlatCodec.from_module(_model())
    got = []
    server = ServerApp()

    @server.main()
    def main(grid, context):
        strategy = FlowerFedAvg(min_available_nodes=NODES, min_train_nodes=NODES,
                                fraction_evaluate=0.0)
        got.append(strategy.start(grid=grid, initial_arrays=codec.encode(x0),
                                  num_rounds=ROUNDS).arrays)

    client = ClientApp()

    @client.train()
    def train(msg, context):
        torch.set_num_threads(1)
        k = client_index(context)
        return fit_reply(_clients()[k], codec, msg, client_index=k)

    run_on_simulation_engine(server, client, NODES)
    assert len(got) == 1
    flower = codec.decode(got[0])
    ref = run_synchronous(x0, _clients(), FedAvg(), ROUNDS, seed=0).final_params
    assert not torch.allclose(ref, x0)
    assert torch.allclose(flower, ref, atol=1e-5), float((flower - ref).abs().max())


def test_run_on_simulation_engine_checks_its_arguments():
    with pytest.raises(ValueError, match="num_nodes"):
        run_on_simulation_engine(ServerApp(), ClientApp(), 0)
    with pytest.raises(ValueError, match="num_cpus"):
        run_on_simulation_engine(ServerApp(), ClientApp(), 2, num_cpus=0)
