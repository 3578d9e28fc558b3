"""FedImpro's client update and server aggregation (official ``Spliter.split_train``).

Client step on a real batch (x, y) of size B:
1. draw a class-balanced synthetic batch (z_hat, y_hat) from the bank (detached constants);
2. z = L(x); loss = CE(H(z), y) + w(t) CE(H(z_hat), y_hat)   ("gradual2half", w(t) = t / T_w
   with t the *global round*); gradients reach L only through the real rows;
3. SGD step; then fold the detached real features into the local bank.
The client uploads its model delta, its (optionally noised) bank and its class counts n_{k,c}.

Server (:class:`FedImproServer`): FedAvg by sample count for the model, and
:func:`aggregate_class_gaussians` over *all* clients seen so far (estimate_mode "all",
weight "label_size"): a client not sampled this round contributes the previous global statistics
with its last class counts.

Two server variants isolate what the sharing contributes (issue 38): ``FedImproServer(...,
share_statistics=False)`` never updates its bank (every round the clients start from the
initial bank, mu ~ U(0, 1), sigma = sigma_max, and see only their own local statistics: the
class-balanced synthetic labels without any shared information; the ablation), and
:class:`ExactStatisticsServer` replaces the clients' running estimates by the exact per-client
class moments of every client's real features at the new global model, aggregated the same way
(what perfect, current sharing would deliver; a positive control, not private).

Weight schedules (``weight_schedule``): "gradual2half" (real 1, synthetic t/T_w; official README
run), "gradualhalfhalf" (real 1 - w, synthetic w with w = 0.5 t/T_w), "milestone" (real only
before T_w, synthetic only after), "default" (plain CE over the concatenation).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn
from torch.nn.functional import cross_entropy

from iclr24.kits.federated import (
    ClientUpdate,
    FitConfig,
    check_labels,
    fedavg_aggregate,
    flatten_params,
    load_flat_params,
    minibatch_indices,
)

from .feature_bank import (
    ClassGaussianBank,
    aggregate_class_gaussians,
    check_noise_std,
    class_moments,
    privatize,
)
from .split_network import SplitNet

__all__ = [
    "ExactStatisticsServer",
    "FedImproClient",
    "FedImproServer",
    "LocalResult",
    "WeightSchedule",
    "exact_class_gaussians",
    "fedimpro_local_train",
    "fedimpro_loss",
    "head_parameters",
    "synthetic_weight",
]

WeightSchedule = Literal["gradual2half", "gradualhalfhalf", "milestone", "default"]


def synthetic_weight(round_idx: int, schedule: WeightSchedule, max_rounds: int
                     ) -> tuple[float, float] | None:
    """(real weight, synthetic weight) at global round t; None for "default" (concat CE)."""
    if max_rounds < 1:
        raise ValueError(f"max_rounds (T_w) must be >= 1, got {max_rounds}")
    t = float(round_idx)
    if schedule == "gradual2half":
        return 1.0, t / max_rounds  # loss = CE_real + (t / T_w) CE_syn
    if schedule == "gradualhalfhalf":
        w = 0.5 * t / max_rounds
        return 1.0 - w, w
    if schedule == "milestone":
        return (1.0, 0.0) if t < max_rounds else (0.0, 1.0)
    if schedule == "default":
        return None
    raise ValueError(f"weight_schedule must be one of gradual2half, gradualhalfhalf, milestone, "
                     f"default; got {schedule!r}")


def fedimpro_loss(logits_real: torch.Tensor, y: torch.Tensor, logits_syn: torch.Tensor,
                  y_syn: torch.Tensor, weights: tuple[float, float] | None) -> torch.Tensor:
    """CE on real rows and on synthetic rows combined by the schedule's weights."""
    if weights is None:
        return cross_entropy(torch.cat([logits_real, logits_syn]), torch.cat([y, y_syn]))
    w_real, w_syn = weights
    return w_real * cross_entropy(logits_real, y) + w_syn * cross_entropy(logits_syn, y_syn)


@dataclass
class LocalResult:
    """delta: (P,) model change; bank_state: uploaded {"mean","std"} (C, D); class_counts: (C,);
    loss: mean training loss over the local steps."""

    delta: torch.Tensor
    bank_state: dict[str, torch.Tensor]
    class_counts: np.ndarray
    loss: float


def fedimpro_local_train(net: SplitNet, params: torch.Tensor, bank: ClassGaussianBank,
                         x: torch.Tensor, y: torch.Tensor, *, round_idx: int, lr: float,
                         batch_size: int, generator: torch.Generator, max_rounds: int,
                         epochs: int = 1, weight_schedule: WeightSchedule = "gradual2half",
                         prox_mu: float = 0.0, noise_std: float = 0.0,
                         synthetic_generator: torch.Generator | None = None) -> LocalResult:
    """Local FedImpro training from ``params`` (P,) with the received bank (updated in place).

    x: (n, ...) inputs, y: (n,) labels. Plain SGD (momentum 0, as the official README run);
    ``prox_mu`` adds FedProx's term (FedImpro composes with it); ``noise_std`` noises the
    uploaded statistics (privacy knob). ``generator`` orders the data; ``synthetic_generator``
    (default: the same) draws the synthetic features and the privacy noise.
    """
    if lr <= 0:
        raise ValueError(f"lr must be > 0, got {lr}")
    check_noise_std(noise_std)  # before training, not after it
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"x and y disagree on the number of samples: {x.shape[0]} vs {y.shape[0]}")
    weights = synthetic_weight(round_idx, weight_schedule, max_rounds)
    syn_gen = generator if synthetic_generator is None else synthetic_generator
    load_flat_params(net, params)
    plist = list(net.parameters())
    anchor = [p.detach().clone() for p in plist] if prox_mu > 0 else []
    net.train()
    losses = []
    for idx in minibatch_indices(x.shape[0], batch_size, generator, epochs=epochs):
        xb, yb = x[idx], y[idx]
        z_hat, y_hat = bank.sample(len(idx), syn_gen)  # detached, class-balanced
        z = net.features(xb)
        logits = net.head(torch.cat([z, z_hat]))  # H(concat[z, z_hat])
        loss = fedimpro_loss(logits[: len(idx)], yb, logits[len(idx):], y_hat, weights)
        total = loss
        if prox_mu > 0:
            total = total + 0.5 * prox_mu * sum((p - a).pow(2).sum()
                                                for p, a in zip(plist, anchor))
        for p in plist:
            p.grad = None
        total.backward()
        with torch.no_grad():
            for p in plist:
                if p.grad is not None:
                    p.add_(p.grad, alpha=-lr)
        bank.update(z.detach(), yb)  # local statistics from this batch's real features
        losses.append(float(loss.detach()))
    counts = np.bincount(y.numpy(), minlength=bank.num_classes).astype(np.int64)
    state = privatize(bank.state_dict(), noise_std, syn_gen)
    return LocalResult(flatten_params(net) - params.detach(), state, counts,
                       float(np.mean(losses)) if losses else float("nan"))


class FedImproClient:
    """A simulator/Flower-agnostic FedImpro client holding (x, y).

    The job's FitConfig options must carry ``bank`` (the global {"mean","std"}); ``round_idx``
    is the global round t used by the weight schedule.
    """

    def __init__(self, net: SplitNet, x: torch.Tensor, y: torch.Tensor, *, num_classes: int,
                 lr: float = 0.05, batch_size: int = 32, epochs: int = 1,
                 max_rounds: int = 100, weight_schedule: WeightSchedule = "gradual2half",
                 sigma_max: float = 0.1, nominal_count: float | None = None,
                 ema: Literal["count", "official"] = "count", prox_mu: float = 0.0,
                 noise_std: float = 0.0) -> None:
        if x.shape[0] == 0:
            raise ValueError("a client needs at least one sample")
        if x.shape[0] != y.shape[0]:
            raise ValueError(f"x has {x.shape[0]} rows but y has {y.shape[0]} labels")
        if not torch.isfinite(x).all():
            raise ValueError("x has NaN or inf features")
        check_labels(y, num_classes)  # a label >= num_classes would index past the bank
        noise_std = check_noise_std(noise_std)  # NaN noise would make every upload NaN
        self.net, self.x, self.y = net, x, y
        self.num_classes = num_classes
        self.dim = net.feature_dim(x)
        self.kw = {"lr": lr, "batch_size": batch_size, "epochs": epochs,
                   "max_rounds": max_rounds, "weight_schedule": weight_schedule,
                   "prox_mu": prox_mu, "noise_std": noise_std}
        self.bank_kw = {"sigma_max": sigma_max, "nominal_count": nominal_count, "ema": ema}

    def fit(self, params: torch.Tensor, config: FitConfig) -> ClientUpdate:
        if "bank" not in config.options:
            raise ValueError("FedImproClient needs the global bank in config.options['bank']")
        bank = ClassGaussianBank(self.num_classes, self.dim, **self.bank_kw)  # type: ignore[arg-type]
        bank.load_state_dict(config.options["bank"])
        gen = torch.Generator().manual_seed(config.seed)  # same data order as FedAvg's client
        syn = torch.Generator().manual_seed(config.seed ^ 0x5EED)
        res = fedimpro_local_train(self.net, params, bank, self.x, self.y,
                                   round_idx=config.round_idx, generator=gen,
                                   synthetic_generator=syn,
                                   **self.kw)  # type: ignore[arg-type]
        return ClientUpdate(delta=res.delta, num_examples=int(self.x.shape[0]),
                            metrics={"loss": res.loss},
                            extras={"bank": res.bank_state, "class_counts": res.class_counts})


class FedImproServer:
    """FedImpro's server for the kit's ``run_synchronous``: FedAvg + bank aggregation.

    Initial bank: mu ~ U(0, 1) (seeded), sigma = sigma_max. Remembers every client's last class
    counts so that clients not sampled in a round contribute the previous global statistics.
    ``share_statistics=False`` is the ablation without sharing: the uploads are checked and the
    counts kept, but the bank is never updated (clients always receive the initial bank).
    """

    def __init__(self, num_classes: int, dim: int, sigma_max: float = 0.1, *, seed: int = 0,
                 server_lr: float = 1.0, share_statistics: bool = True) -> None:
        if not isinstance(share_statistics, bool):
            raise TypeError(f"share_statistics must be a bool, got {share_statistics!r}")
        gen = torch.Generator().manual_seed(seed)
        init = ClassGaussianBank(num_classes, dim, sigma_max, ema="official", generator=gen)
        self.bank: dict[str, torch.Tensor] = init.state_dict()
        self.num_classes, self.sigma_max = num_classes, float(sigma_max)
        self.server_lr = server_lr
        self.share_statistics = share_statistics
        self.counts: dict[int, np.ndarray] = {}

    def client_config(self, round_idx: int) -> dict[str, Any]:
        return {"bank": {k: v.clone() for k, v in self.bank.items()}}

    def aggregate(self, params: torch.Tensor, updates: Sequence[ClientUpdate],
                  round_idx: int) -> torch.Tensor:
        new = fedavg_aggregate(params, [u.delta for u in updates],
                               [u.num_examples for u in updates], self.server_lr)
        self._update_bank(new, updates)
        return new

    def _update_bank(self, new_params: torch.Tensor, updates: Sequence[ClientUpdate]) -> None:
        states, counts = [], []
        fresh = set()
        for u in updates:
            if "bank" not in u.extras or "class_counts" not in u.extras:
                raise ValueError("a FedImpro update needs extras 'bank' and 'class_counts'")
            cid = int(u.extras.get("client_id", len(fresh)))
            fresh.add(cid)
            self.counts[cid] = np.asarray(u.extras["class_counts"])
            states.append(u.extras["bank"])
            counts.append(self.counts[cid])
        if not self.share_statistics:
            return  # ablation: the bank stays the initial one
        for cid, c in sorted(self.counts.items()):  # unsampled clients: previous global stats
            if cid not in fresh:
                states.append(self.bank)
                counts.append(c)
        self.bank = aggregate_class_gaussians(states, np.stack(counts))


def exact_class_gaussians(net: SplitNet, params: torch.Tensor,
                          client_data: Sequence[tuple[torch.Tensor, torch.Tensor]],
                          num_classes: int, sigma_max: float) -> dict[str, torch.Tensor]:
    """The bank that exact sharing would give at the global model ``params``: every client's
    class moments of its real features z = L(x) (population std, capped at sigma_max as the
    clients' banks cap theirs), aggregated by :func:`aggregate_class_gaussians` with the
    clients' class counts. client_data: K pairs (x: (n_k, ...), y: (n_k,)). Returns
    {"mean": (C, D), "std": (C, D)}."""
    if len(client_data) == 0:
        raise ValueError("client_data must hold at least one client's (x, y)")
    if not sigma_max > 0:
        raise ValueError(f"sigma_max must be > 0, got {sigma_max}")
    load_flat_params(net, params)
    states, counts = [], []
    with torch.no_grad():
        for x, y in client_data:
            n, mean, std = class_moments(net.features(x), y, num_classes, unbiased=False)
            states.append({"mean": mean, "std": std.clamp(max=sigma_max)})  # sigma <= s_max
            counts.append(n.numpy())
    return aggregate_class_gaussians(states, np.stack(counts))


class ExactStatisticsServer(FedImproServer):
    """FedImpro's server with perfect sharing (a positive control, not a private protocol):
    after FedAvg, the bank is set to :func:`exact_class_gaussians` of *all* clients' data at
    the new global model, instead of the aggregate of the clients' running estimates.

    net: the model (a SplitNet, its parameters are overwritten); client_data: K pairs (x, y).
    """

    def __init__(self, net: SplitNet, client_data: Sequence[tuple[torch.Tensor, torch.Tensor]],
                 num_classes: int, sigma_max: float = 0.1, *, seed: int = 0,
                 server_lr: float = 1.0) -> None:
        if len(client_data) == 0:
            raise ValueError("client_data must hold at least one client's (x, y)")
        for k, (x, y) in enumerate(client_data):
            if x.shape[0] != y.shape[0]:
                raise ValueError(f"client_data[{k}]: x has {x.shape[0]} rows but y has "
                                 f"{y.shape[0]} labels")
            check_labels(y, num_classes, name=f"client_data[{k}] labels")
        super().__init__(num_classes, net.feature_dim(client_data[0][0]), sigma_max, seed=seed,
                         server_lr=server_lr)
        self.net, self.client_data = net, list(client_data)

    def _update_bank(self, new_params: torch.Tensor, updates: Sequence[ClientUpdate]) -> None:
        self.bank = exact_class_gaussians(self.net, new_params, self.client_data,
                                          self.num_classes, self.sigma_max)


def head_parameters(net: SplitNet) -> list[nn.Parameter]:
    """H's parameters (the part whose gradient dissimilarity FedImpro reduces)."""
    return list(net.high.parameters())
