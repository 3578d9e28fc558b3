"""FedImpro's Flower strategy and ClientApp on Flower's own simulation engine (Ray backend):
4 nodes, 2 rounds, equal to the in-process ``simulate("fedimpro")`` with the same seeds."""

import sys

import pytest
import torch

pytest.importorskip("flwr.simulation")
pytest.importorskip("ray")

import cloudpickle
from flwr.serverapp import ServerApp

from iclr24.kits.federated import digits_split, dirichlet_label_partition, flatten_params
from iclr24.kits.federated.flower import FlatCodec, run_on_simulation_engine
from iclr24.papers.fedimpro import FedImproClient, FedImproConfig, digits_mlp, simulate
from iclr24.papers.fedimpro.flower import FedImproStrategy, fedimpro_client_app

cloudpickle.register_pickle_by_value(sys.modules[__name__])

pytestmark = pytest.mark.usefixtures("one_torch_thread")

NODES, ROUNDS = 4, 2


def _data():
    data = digits_split(seed=0)
    parts = dirichlet_label_partition(data.y_train.numpy(), NODES, 0.5, min_partition_size=20,
                                      seed=0)
    return data, parts


def _client(context):
    torch.set_num_threads(1)
    data, parts = _data()
    p = torch.as_tensor(parts[int(context.node_config["partition-id"])])
    cfg = FedImproConfig()
    return FedImproClient(digits_mlp(64, cfg.hidden, 10), data.x_train[p], data.y_train[p],
                          num_classes=10, lr=cfg.lr, batch_size=cfg.batch_size,
                          epochs=cfg.epochs, max_rounds=ROUNDS, sigma_max=cfg.sigma_max,
                          nominal_count=data.x_train.shape[0] / 10)


@pytest.mark.serial
@pytest.mark.timeout(600)  # Ray's start-up alone can take minutes on a loaded machine
def test_fedimpro_on_the_simulation_engine_matches_the_in_process_run():
    net = digits_mlp(64, 128, 10, generator_seed=0)
    x0 = flatten_params(net)
    codec = FlatCodec.from_module(net)
    got = []
    server = ServerApp()

    @server.main()
    def main(grid, context):
        strategy = FedImproStrategy(10, 128, 0.1, seed=0, min_available_nodes=NODES,
                                    min_train_nodes=NODES, fraction_evaluate=0.0)
        res = strategy.start(grid=grid, initial_arrays=codec.encode(x0), num_rounds=ROUNDS)
        got.append((res.arrays, {k: v.clone() for k, v in strategy.bank.items()}))

    run_on_simulation_engine(server, fedimpro_client_app(_client), NODES)
    assert len(got) == 1
    arrays, bank = got[0]
    banks = []
    data, parts = _data()
    ref = simulate("fedimpro", data, parts, ROUNDS, seed=0,
                   checkpoint_fn=lambda t, p, b: banks.append(b))
    flower = codec.decode(arrays)
    assert not torch.allclose(ref.final_params, x0)
    assert torch.allclose(flower, ref.final_params, atol=1e-5)
    assert torch.allclose(bank["mean"], banks[-1]["mean"], atol=1e-5)
    assert torch.allclose(bank["std"], banks[-1]["std"], atol=1e-5)
