"""In-process FedImpro / FedAvg / FedProx runs on a label-skewed partition (the spec's recipe).

``simulate`` builds the clients from a data split and a partition, runs the kit's
``run_synchronous`` with the chosen algorithm and evaluates test accuracy every round. Same seed
-> same model initialisation, partition, data order and synthetic draws; the model
initialisation and data order are shared by all algorithms compared under one seed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch

from iclr24.kits.federated import (
    FedAvg,
    FedProx,
    History,
    TensorSplit,
    TorchClient,
    accuracy,
    check_partitions,
    derive_seed,
    flatten_params,
    local_sgd,
    run_synchronous,
)

from .feature_bank import check_noise_std
from .local_update import ExactStatisticsServer, FedImproClient, FedImproServer, WeightSchedule
from .split_network import digits_mlp

__all__ = ["FedImproConfig", "simulate", "train_centralised"]

Algorithm = Literal["fedavg", "fedprox", "fedimpro"]
BankSharing = Literal["clients", "none", "exact"]


@dataclass(frozen=True)
class FedImproConfig:
    """Defaults from the spec's laptop recipe (MLP on digits) and the official README run.

    lr 0.05, batch 32, 1 local epoch; sigma_max 0.1 (official ``fed_split_noise_std``); weight
    schedule gradual2half with T_w = the number of rounds (the official FEMNIST run uses
    T_w = max_epochs = 500); FedProx mu 0.01; privacy noise 0.

    bank_sharing (FedImpro only): "clients" (the method: the server aggregates the clients'
    uploaded estimates), "none" (ablation: the server never updates its initial bank, so the
    clients share nothing; issue 38) or "exact" (positive control: the server sets the bank to
    the exact class moments of all clients' features at the new global model).
    """

    lr: float = 0.05
    batch_size: int = 32
    epochs: int = 1
    sigma_max: float = 0.1
    weight_schedule: WeightSchedule = "gradual2half"
    weight_max_rounds: int | None = None
    ema: Literal["count", "official"] = "count"
    prox_mu: float = 0.01
    noise_std: float = 0.0
    hidden: int = 128
    bank_sharing: BankSharing = "clients"

    def __post_init__(self) -> None:
        if self.bank_sharing not in ("clients", "none", "exact"):
            raise ValueError(f"bank_sharing must be 'clients', 'none' or 'exact', got "
                             f"{self.bank_sharing!r}")
        check_noise_std(self.noise_std)


def simulate(algorithm: Algorithm, data: TensorSplit, partitions: Sequence[np.ndarray],
             rounds: int, *, seed: int = 0, config: FedImproConfig = FedImproConfig(),
             clients_per_round: int | None = None,
             checkpoint_fn: Callable[[int, torch.Tensor, dict | None], None] | None = None,
             progress: Callable[[float, str], None] | None = None) -> History:
    """Run one algorithm; records carry ``round`` and ``accuracy`` (test, every round).

    partitions: disjoint index arrays into ``data.x_train`` (a repeated or out-of-range index
    raises ValueError). ``checkpoint_fn(round, params, bank)`` is
    called after every round (bank None for FedAvg/FedProx), e.g. for gradient diagnostics.
    """
    if algorithm not in ("fedavg", "fedprox", "fedimpro"):
        raise ValueError(f"algorithm must be 'fedavg', 'fedprox' or 'fedimpro', got {algorithm!r}")
    partitions = check_partitions(partitions, data.x_train.shape[0])  # disjoint, in range
    net = digits_mlp(data.x_train.shape[1], config.hidden, data.num_classes, generator_seed=seed)
    x0 = flatten_params(net)
    t_w = config.weight_max_rounds or max(rounds, 1)
    nominal = data.x_train.shape[0] / data.num_classes  # N_c: the dataset's per-class count
    clients = []
    for part in partitions:
        idx = torch.as_tensor(np.asarray(part), dtype=torch.int64)
        xs, ys = data.x_train[idx], data.y_train[idx]
        if algorithm == "fedimpro":
            clients.append(FedImproClient(
                net, xs, ys, num_classes=data.num_classes, lr=config.lr,
                batch_size=config.batch_size, epochs=config.epochs, max_rounds=t_w,
                weight_schedule=config.weight_schedule, sigma_max=config.sigma_max,
                nominal_count=nominal, ema=config.ema, noise_std=config.noise_std))
        else:
            clients.append(TorchClient(net, xs, ys, lr=config.lr, batch_size=config.batch_size,
                                       epochs=config.epochs, num_classes=data.num_classes))
    if algorithm == "fedimpro" and config.bank_sharing == "exact":
        server = ExactStatisticsServer(net, [(c.x, c.y) for c in clients], data.num_classes,
                                       config.sigma_max, seed=seed)
    elif algorithm == "fedimpro":
        server = FedImproServer(data.num_classes, config.hidden, config.sigma_max, seed=seed,
                                share_statistics=config.bank_sharing == "clients")
    elif algorithm == "fedprox":
        server = FedProx(mu=config.prox_mu)
    else:
        server = FedAvg()
    eval_net = digits_mlp(data.x_train.shape[1], config.hidden, data.num_classes)

    def evaluate(params: torch.Tensor) -> dict[str, float]:
        return {"accuracy": accuracy(eval_net, params, data.x_test, data.y_test)}

    if checkpoint_fn is not None:
        inner = server

        class _Tap:
            def client_config(self, t: int) -> dict:
                return inner.client_config(t)

            def aggregate(self, params, updates, t):  # type: ignore[no-untyped-def]
                new = inner.aggregate(params, updates, t)
                checkpoint_fn(t, new, getattr(inner, "bank", None))
                return new

        server = _Tap()  # type: ignore[assignment]
    return run_synchronous(x0, clients, server, rounds, seed=seed,
                           clients_per_round=clients_per_round, eval_fn=evaluate,
                           progress=progress)


def train_centralised(data: TensorSplit, epochs: int, *, seed: int = 0,
                      config: FedImproConfig = FedImproConfig()) -> float:
    """The centralised reference: the same MLP (the seed's initialisation) trained by plain SGD
    (config's lr and batch size) for ``epochs`` shuffled passes over the whole training set, the
    union of the clients' data; returns its test accuracy."""
    if not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be a positive int, got {epochs!r}")
    net = digits_mlp(data.x_train.shape[1], config.hidden, data.num_classes, generator_seed=seed)
    x0 = flatten_params(net)
    gen = torch.Generator().manual_seed(derive_seed(seed, "centralised"))
    delta, _ = local_sgd(net, x0, data.x_train, data.y_train, lr=config.lr,
                         batch_size=config.batch_size, generator=gen, epochs=epochs)
    return accuracy(net, x0 + delta, data.x_test, data.y_test)
