"""Jobs that run on a Communicator: the spec's digits MLP, bytes per step, loss curves.

These functions are what every rank executes (SPMD), in the simulator
(:func:`~.simulator.run_simulated`) or in real processes (:func:`~.launch.launch`); they are
module-level so they pickle to spawned workers. :func:`run_job` picks the transport.

Data: scikit-learn's bundled ``load_digits`` (1797 8x8 images, no download), standardized, with a
fixed 80/20 split. Every rank draws the same seeded permutation of the training set each epoch
and takes its contiguous slice of each global batch, so all configurations see the same samples
in the same order.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from .engine import ZeroPPConfig, ZeroPPEngine
from .topology import Topology
from .transport import Communicator

__all__ = [
    "TrainJob",
    "digits_data",
    "evaluate",
    "mlp",
    "mlp_from_state",
    "one_step_job",
    "run_job",
    "train_job",
]


@dataclass(frozen=True)
class TrainJob:
    """One training run of the engine: switches, length, batch, optimizer, data order.

    checkpoint_step: also return the fp32 parameters after this many steps (None: no).
    """

    config: ZeroPPConfig
    steps: int
    global_batch: int = 64
    lr: float = 1e-3
    data_seed: int = 0
    checkpoint_step: int | None = None

    def __post_init__(self) -> None:
        if self.steps < 1:
            raise ValueError(f"steps must be >= 1, got {self.steps}")
        if self.global_batch < 1:
            raise ValueError(f"global_batch must be >= 1, got {self.global_batch}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")


def mlp(sizes: Sequence[int], seed: int) -> nn.Sequential:
    """ReLU MLP with layer widths ``sizes`` (e.g. 64-256-256-10), initialized from ``seed``."""
    if len(sizes) < 2 or any(int(s) < 1 for s in sizes):
        raise ValueError(f"sizes must list >= 2 positive widths, got {sizes}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        layers: list[nn.Module] = []
        for i, (a, b) in enumerate(itertools.pairwise(sizes)):
            layers.append(nn.Linear(a, b))
            if i < len(sizes) - 2:
                layers.append(nn.ReLU())
        return nn.Sequential(*layers)


def mlp_from_state(sizes: Sequence[int], state: dict[str, torch.Tensor]) -> nn.Sequential:
    """An MLP of ``sizes`` holding ``state`` (built on the meta device: draws no random numbers,
    so it is safe inside simulator threads)."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b, device="meta"))
        if i < len(sizes) - 2:
            layers.append(nn.ReLU())
    model = nn.Sequential(*layers).to_empty(device="cpu")
    model.load_state_dict(state)
    return model


def digits_data(seed: int = 0) -> dict[str, torch.Tensor]:
    """Standardized digits: x_train (1437, 64), y_train, x_test (360, 64), y_test."""
    from sklearn.datasets import load_digits

    x, y = load_digits(return_X_y=True)
    x = torch.tensor(x, dtype=torch.float32)
    y = torch.tensor(y, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_train = int(0.8 * len(y))
    tr, te = perm[:n_train], perm[n_train:]
    mean, std = x[tr].mean(0), x[tr].std(0) + 1e-6
    return {"x_train": (x[tr] - mean) / std, "y_train": y[tr],
            "x_test": (x[te] - mean) / std, "y_test": y[te]}


@torch.no_grad()
def evaluate(sizes: Sequence[int], state: dict[str, torch.Tensor], x: torch.Tensor,
             y: torch.Tensor) -> tuple[float, float]:
    """(mean cross-entropy, accuracy) of the exact fp32 parameters ``state`` on (x, y)."""
    logits = mlp_from_state(sizes, state)(x)
    return float(F.cross_entropy(logits, y)), float((logits.argmax(1) == y).float().mean())


def _batches(n: int, batch: int, steps: int, seed: int) -> list[torch.Tensor]:
    """Global batch indices for ``steps`` steps: seeded permutations, epoch after epoch."""
    g = torch.Generator().manual_seed(seed)
    out: list[torch.Tensor] = []
    order = torch.randperm(n, generator=g)
    pos = 0
    while len(out) < steps:
        if pos + batch > n:
            order, pos = torch.randperm(n, generator=g), 0
        out.append(order[pos:pos + batch])
        pos += batch
    return out


def train_job(comm: Communicator, job: TrainJob, sizes: Sequence[int],
              init_state: dict[str, torch.Tensor], data: dict[str, torch.Tensor]
              ) -> dict[str, Any]:
    """Train the MLP with the engine for ``job.steps`` steps on this rank's share of each batch.

    Returns {"losses": this rank's micro-batch loss per step, "state": final fp32 parameters,
    "checkpoint": parameters at ``job.checkpoint_step`` (or None), "ledger": byte snapshot of the
    training steps}.
    """
    world = comm.world_size
    if job.global_batch % world:
        raise ValueError(f"global_batch ({job.global_batch}) must be divisible by the world "
                         f"size ({world})")
    b = job.global_batch // world
    engine = ZeroPPEngine(mlp_from_state(sizes, init_state), partial(torch.optim.Adam, lr=job.lr),
                          comm, config=job.config)
    comm.ledger.reset()
    x, y = data["x_train"], data["y_train"]
    losses, checkpoint = [], None
    for step, idx in enumerate(_batches(len(y), job.global_batch, job.steps, job.data_seed)):
        mine = idx[comm.rank * b:(comm.rank + 1) * b]
        losses.append(engine.train_step(x[mine], y[mine], F.cross_entropy))
        if job.checkpoint_step is not None and step + 1 == job.checkpoint_step:
            snapshot = comm.ledger.snapshot()
            checkpoint = engine.full_state_dict()
            comm.ledger.reset()
            comm.ledger.absorb(snapshot)  # keep the ledger about training traffic only
    ledger = comm.ledger.snapshot()
    return {"losses": losses, "state": engine.full_state_dict(), "checkpoint": checkpoint,
            "ledger": ledger}


def one_step_job(comm: Communicator, sizes: Sequence[int], init_state: dict[str, torch.Tensor],
                 configs: Sequence[ZeroPPConfig], batch: tuple[torch.Tensor, torch.Tensor],
                 with_state: bool = False) -> list[dict[str, Any]]:
    """One forward/backward/step per configuration; the byte ledger of each step.

    batch: the global (x, y); each rank takes its equal slice. Returns per config
    {"ledger": snapshot, "shard_numels": [S per unit], "grad_blocks": [qgZ block per unit],
    "secondary_bytes": hpZ bytes held}, and with ``with_state`` the exact fp32 parameters after
    the step under "state" (gathered after the ledger snapshot, so not counted in it).
    """
    x, y = batch
    b = len(y) // comm.world_size
    out = []
    for cfg in configs:
        engine = ZeroPPEngine(mlp_from_state(sizes, init_state),
                              partial(torch.optim.SGD, lr=0.01), comm, config=cfg)
        comm.ledger.reset()
        loss = F.cross_entropy(engine(x[comm.rank * b:(comm.rank + 1) * b]),
                               y[comm.rank * b:(comm.rank + 1) * b])
        engine.backward(loss)
        secondary = engine.secondary_nbytes()
        engine.step()
        row = {"ledger": comm.ledger.snapshot(),
               "shard_numels": [u.shard_numel for u in engine.units],
               "grad_blocks": [u.grad_block_size for u in engine.units],
               "secondary_bytes": secondary}
        if with_state:
            row["state"] = engine.full_state_dict()
        out.append(row)
    return out


def run_job(fn: Callable[..., Any], topology: Topology, args: Sequence[Any],
            transport: str = "simulator", timeout_s: float = 600.0) -> list[Any]:
    """Run ``fn(comm, *args)`` on every rank: "simulator" (threads) or "gloo" (processes)."""
    if transport == "simulator":
        from .simulator import run_simulated

        return run_simulated(fn, topology, args, timeout_s=timeout_s)
    if transport == "gloo":
        from .launcher import launch

        return launch(fn, topology.world_size, topology.num_nodes, args, timeout_s=timeout_s)
    raise ValueError(f"transport must be 'simulator' or 'gloo', got {transport!r}")
