"""The CA²FL reproductions' experiment drivers on the kit's asynchronous event queue.

Both runs put CA²FL, FedBuff and FedAsync on the *same* clients, delay law and seed, and compare
them at an equal number of client arrivals (FedBuff/CA²FL: T server updates of M arrivals each;
FedAsync, which updates on every arrival: T * M arrivals), as the spec asks.

- :func:`run_least_squares`: the convex two-cluster problem (fast cluster mean job time 1, slow
  cluster 5, exponential), distance ``||x_T - x*||`` to the global minimiser.
- :class:`ShuffledSlotCA2FL`: the null arm of claim ``bias_removal`` (issue 38): CA²FL whose
  arrivals are filed under a uniformly random cache slot instead of their own client's, so the
  per-client calibration is broken while the machinery (N slots, h_t, the 1/M correction) stays.
- :func:`run_digits`: sklearn digits over 30 clients with a Dirichlet label split, MLP 64-64-10,
  5 local SGD steps (batch 16, lr 0.05); client mean job times LogNormal(0, 1), 4x faster for the
  half of the clients whose majority class is smallest (speed correlated with label skew).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
from torch import nn

from iclr24.kits.federated import (
    AsyncSimulator,
    ExponentialDelays,
    FedAsync,
    FedBuff,
    History,
    TensorSplit,
    TorchClient,
    accuracy,
    derive_seed,
    dirichlet_label_partition,
    flatten_params,
    lognormal_client_means,
    partition_class_counts,
)

from .least_squares import LeastSquaresClient, make_least_squares
from .server import CA2FL

__all__ = [
    "AsyncConfig",
    "Method",
    "ShuffledSlotCA2FL",
    "digits_mlp",
    "make_aggregator",
    "run_digits",
    "run_least_squares",
]

Method = Literal["ca2fl", "fedbuff", "fedasync", "ca2fl_shuffled"]


class ShuffledSlotCA2FL(CA2FL):
    """Null arm: CA²FL with each arrival filed under a random slot j ~ U{0..N-1} (seeded).

    Every step still averages N cached updates and corrects with ``delta - h_j``, but h_j is not
    the arriving client's own previous update, so the caches hold a sample of recent updates
    drawn in proportion to arrival frequency (dominated by fast clients, as FedBuff's buffer).
    If CA²FL's gain came from the extra averaging rather than from per-client calibration, this
    arm would show it too.
    """

    def __init__(self, x0: torch.Tensor, num_clients: int, buffer_size: int,
                 server_lr: float = 1.0, *, seed: int = 0) -> None:
        super().__init__(x0, num_clients, buffer_size, server_lr)
        self._slots = np.random.default_rng(seed)

    def on_arrival(self, client_id: int, delta: torch.Tensor, staleness: int,
                   base: torch.Tensor | None = None) -> bool:
        if not isinstance(client_id, int) or not 0 <= client_id < self.num_clients:
            raise ValueError(f"client_id must be an int in [0, {self.num_clients}), "
                             f"got {client_id!r}")
        slot = int(self._slots.integers(self.num_clients))  # the wrong client's cache
        return super().on_arrival(slot, delta, staleness, base)


@dataclass(frozen=True)
class AsyncConfig:
    """Concurrency M_c, buffer M, server lr eta, FedAsync's alpha and staleness exponent a."""

    concurrency: int = 8
    buffer_size: int = 4
    server_lr: float = 1.0
    fedasync_alpha: float = 0.6
    fedasync_exponent: float = 0.5


def make_aggregator(method: Method, x0: torch.Tensor, num_clients: int, cfg: AsyncConfig,
                    *, seed: int = 0):
    """CA²FL / FedBuff / FedAsync (or the null arm ``"ca2fl_shuffled"``, whose random slots
    come from ``seed``) over the flat initial model x0."""
    if method == "ca2fl":
        return CA2FL(x0, num_clients, cfg.buffer_size, cfg.server_lr)
    if method == "ca2fl_shuffled":
        return ShuffledSlotCA2FL(x0, num_clients, cfg.buffer_size, cfg.server_lr, seed=seed)
    if method == "fedbuff":
        return FedBuff(x0, cfg.buffer_size, cfg.server_lr)
    if method == "fedasync":
        return FedAsync(x0, cfg.fedasync_alpha, cfg.fedasync_exponent)
    raise ValueError(f"method must be 'ca2fl', 'fedbuff', 'fedasync' or 'ca2fl_shuffled', "
                     f"got {method!r}")


def _run(method: Method, clients, x0, delays, cfg: AsyncConfig, server_updates: int, seed: int,
         eval_fn, progress) -> History:
    agg = make_aggregator(method, x0, len(clients), cfg, seed=derive_seed(seed, "slots"))
    sim = AsyncSimulator(clients, agg, concurrency=cfg.concurrency, delays=delays,
                         seed=derive_seed(seed, "sim"))
    # equal client arrivals for every method: T server updates of M arrivals
    return sim.run(max_arrivals=server_updates * cfg.buffer_size, eval_fn=eval_fn,
                   eval_every=cfg.buffer_size, progress=progress)


def run_least_squares(method: Method, zeta: float, *, seed: int = 0, server_updates: int = 300,
                      num_clients: int = 40, dim: int = 20, local_steps: int = 5,
                      local_lr: float = 0.1, fast_mean: float = 1.0, slow_mean: float = 5.0,
                      cfg: AsyncConfig = AsyncConfig(),
                      progress: Callable[[float, str], None] | None = None) -> History:
    """Convex bias test; records carry ``error`` = ||x - x*|| and ``loss`` after each update."""
    prob = make_least_squares(num_clients, dim, zeta=zeta, seed=seed)
    clients = [LeastSquaresClient(prob, i, local_steps, local_lr) for i in range(num_clients)]
    means = np.where(prob.cluster == 0, fast_mean, slow_mean)
    x0 = torch.zeros(dim, dtype=torch.float64)

    def evaluate(x: torch.Tensor) -> dict[str, float]:
        return {"error": float((x - prob.x_star).norm()), "loss": prob.global_loss(x)}

    return _run(method, clients, x0, ExponentialDelays(means), cfg, server_updates, seed,
                evaluate, progress)


def digits_mlp(in_dim: int = 64, hidden: int = 64, num_classes: int = 10, *, seed: int = 0
               ) -> nn.Module:
    """The spec's MLP 64 -> 64 -> 10 (ReLU), initialised from ``seed``."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, num_classes))


def run_digits(method: Method, data: TensorSplit, alpha: float, *, seed: int = 0,
               server_updates: int = 300, num_clients: int = 30, local_steps: int = 5,
               batch_size: int = 16, lr: float = 0.05, fast_factor: float = 4.0,
               min_partition_size: int = 5,
               cfg: AsyncConfig = AsyncConfig(concurrency=6, buffer_size=3),
               progress: Callable[[float, str], None] | None = None) -> History:
    """Digits under Dirichlet(alpha) label skew; records carry test ``accuracy``."""
    parts = dirichlet_label_partition(data.y_train.numpy(), num_clients, alpha,
                                      min_partition_size=min_partition_size,
                                      seed=derive_seed(seed, "partition"))
    counts = partition_class_counts(data.y_train.numpy(), parts, data.num_classes)
    means = lognormal_client_means(num_clients, 1.0, seed=derive_seed(seed, "speeds"))
    order = np.argsort(counts.argmax(1), kind="stable")  # sort clients by majority class
    means[order[: num_clients // 2]] /= fast_factor  # first half: 4x faster
    net = digits_mlp(data.x_train.shape[1], num_classes=data.num_classes, seed=seed)
    x0 = flatten_params(net)
    clients = [TorchClient(net, data.x_train[torch.as_tensor(p)], data.y_train[torch.as_tensor(p)],
                           lr=lr, batch_size=batch_size, steps=local_steps,
                           num_classes=data.num_classes) for p in parts]
    eval_net = digits_mlp(data.x_train.shape[1], num_classes=data.num_classes)

    def evaluate(x: torch.Tensor) -> dict[str, float]:
        return {"accuracy": accuracy(eval_net, x, data.x_test, data.y_test)}

    return _run(method, clients, x0, ExponentialDelays(means), cfg, server_updates, seed,
                evaluate, progress)
