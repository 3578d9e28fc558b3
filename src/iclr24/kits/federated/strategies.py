"""Server-side federated strategies as transport-free math on flat parameter vectors.

Every strategy is written twice over the same code: a pure function (``fedavg_aggregate``,
``fedbuff_step``, ``fedasync_mix``, ...) that maps tensors to tensors, and a small stateful
object that calls it. The objects know nothing about how updates travel, so the same instance
runs inside the in-process simulator (:mod:`.simulation`) and behind Flower
(:mod:`.flower`).

Conventions (shared with CA²FL and FedImpro):
- parameters are one flat float tensor ``x`` of shape ``(P,)`` (for a PyTorch model: its
  parameters, then its floating-point buffers such as BatchNorm running statistics, see
  :func:`~.local_training.federated_state`; the strategies treat every entry alike, so
  FedAvg with server_lr 1 sets them to the sample-weighted mean of the clients' statistics);
- a client update is ``delta = x_local_after_training - x_received`` (shape ``(P,)``), relative
  to the model the client *received*, which may be several server versions old;
- staleness ``tau`` = server version at arrival - server version the client received.

Baselines:
- FedAvg (McMahan et al. 2017): ``x <- x + eta * sum_i n_i delta_i / sum_i n_i``.
- FedProx (Li et al. 2020): FedAvg's aggregation; the client adds ``mu/2 ||w - x||^2`` to its loss
  (see :func:`fedprox_penalty`), so the strategy only ships ``mu`` to the clients.
- FedBuff (Nguyen et al. 2022): buffer M arrivals, ``x <- x + eta * (1/M) sum_i s(tau_i) delta_i``
  (staleness weight ``s`` off by default, i.e. 1).
- FedAsync (Xie et al. 2019): on each arrival ``x <- (1 - a_tau) x + a_tau x_i`` with
  ``x_i = x_received + delta`` and ``a_tau = alpha (1 + tau)^(-a)`` (polynomial staleness).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch

__all__ = [
    "AsyncAggregator",
    "ClientUpdate",
    "FedAsync",
    "FedAvg",
    "FedBuff",
    "FedProx",
    "SyncAggregator",
    "check_update",
    "fedasync_mix",
    "fedavg_aggregate",
    "fedbuff_step",
    "fedprox_penalty",
    "polynomial_staleness",
]


@dataclass
class ClientUpdate:
    """What a client sends back after local training.

    delta: (P,) ``x_local - x_received``; num_examples: samples it trained on (FedAvg weight);
    metrics: scalars (e.g. mean training loss); extras: anything a strategy needs beyond the
    model (FedImpro's feature statistics and class counts, for example).
    """

    delta: torch.Tensor
    num_examples: int
    metrics: dict[str, float] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)


def check_update(delta: Any, params: torch.Tensor, *, name: str = "delta") -> torch.Tensor:
    """Validate a client's update against the global parameters: a finite tensor of shape (P,).

    Raises TypeError for a non-tensor and ValueError for a wrong shape or non-finite values,
    naming the argument, so a misbehaving client is caught at the server boundary.
    """
    if not isinstance(delta, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape {tuple(params.shape)}, "
                        f"got {type(delta).__name__}")
    if delta.shape != params.shape:
        raise ValueError(f"{name} has shape {tuple(delta.shape)}, expected {tuple(params.shape)} "
                         "(the flat global parameter vector)")
    if not torch.isfinite(delta).all():
        raise ValueError(f"{name} contains NaN or inf")
    return delta.to(dtype=params.dtype, device=params.device)


def _check_params(params: Any, name: str = "params") -> torch.Tensor:
    if not isinstance(params, torch.Tensor) or params.ndim != 1 or not params.is_floating_point():
        raise TypeError(f"{name} must be a 1-D floating torch.Tensor (flat parameters), got "
                        f"{type(params).__name__}{tuple(getattr(params, 'shape', ()))}")
    return params


def fedavg_aggregate(params: torch.Tensor, deltas: Sequence[torch.Tensor],
                     weights: Sequence[float] | None = None, server_lr: float = 1.0
                     ) -> torch.Tensor:
    """FedAvg: ``x + eta * sum_i w_i delta_i / sum_i w_i`` (weights default to uniform).

    params: (P,); deltas: K tensors of shape (P,); weights: K non-negative numbers (e.g. sample
    counts). Returns the new (P,) parameters; inputs are not modified.
    """
    params = _check_params(params)
    if len(deltas) == 0:
        raise ValueError("deltas must hold at least one client update")
    w = torch.ones(len(deltas), dtype=params.dtype) if weights is None else \
        torch.as_tensor([float(v) for v in weights], dtype=params.dtype)
    if w.numel() != len(deltas):
        raise ValueError(f"weights has {w.numel()} entries for {len(deltas)} deltas")
    if (w < 0).any() or float(w.sum()) <= 0:
        raise ValueError("weights must be non-negative with a positive sum")
    stacked = torch.stack([check_update(d, params, name=f"deltas[{i}]")
                           for i, d in enumerate(deltas)])
    mean_delta = (w.to(params.device)[:, None] * stacked).sum(0) / w.sum()  # sum_i n_i d_i / n
    return params + server_lr * mean_delta


def fedprox_penalty(local: torch.Tensor, anchor: torch.Tensor, mu: float) -> torch.Tensor:
    """FedProx proximal term ``mu/2 ||w - w_global||^2`` (scalar tensor, differentiable in w)."""
    if mu < 0:
        raise ValueError(f"mu must be >= 0, got {mu}")
    return 0.5 * mu * (local - anchor).pow(2).sum()


def fedbuff_step(params: torch.Tensor, buffered: Sequence[torch.Tensor], server_lr: float = 1.0,
                 weights: Sequence[float] | None = None) -> torch.Tensor:
    """FedBuff's server step: ``x + eta * (1/M) sum_{i in buffer} w_i delta_i`` (w_i = 1 default).

    Note the plain 1/M (not 1/sum w): staleness weights down-weight, they do not renormalise.
    """
    params = _check_params(params)
    if len(buffered) == 0:
        raise ValueError("buffered must hold at least one update")
    w = [1.0] * len(buffered) if weights is None else [float(v) for v in weights]
    if len(w) != len(buffered):
        raise ValueError(f"weights has {len(w)} entries for {len(buffered)} updates")
    total = torch.zeros_like(params)
    for i, (wi, d) in enumerate(zip(w, buffered)):
        total += wi * check_update(d, params, name=f"buffered[{i}]")
    return params + server_lr * total / len(buffered)  # x_{t+1} = x_t + eta * v_t


def polynomial_staleness(tau: float, exponent: float = 0.5) -> float:
    """``s(tau) = (1 + tau)^(-a)``, FedAsync's polynomial staleness function (s(0) = 1)."""
    if tau < 0:
        raise ValueError(f"staleness must be >= 0, got {tau}")
    if exponent < 0:
        raise ValueError(f"exponent must be >= 0, got {exponent}")
    return float((1.0 + tau) ** (-exponent))


def fedasync_mix(params: torch.Tensor, client_model: torch.Tensor, mixing: float) -> torch.Tensor:
    """FedAsync's update ``(1 - a) x + a x_i`` for a mixing weight ``a`` in [0, 1]."""
    if not 0.0 <= mixing <= 1.0:
        raise ValueError(f"mixing must be in [0, 1], got {mixing}")
    client_model = check_update(client_model, _check_params(params), name="client_model")
    return (1.0 - mixing) * params + mixing * client_model


# --------------------------------------------------------------------------- stateful objects


@runtime_checkable
class SyncAggregator(Protocol):
    """A round-synchronous server strategy.

    ``client_config(round_idx)`` is merged into each client's fit configuration (FedProx ships
    ``prox_mu`` this way, FedImpro its feature bank); ``aggregate`` returns the next parameters.
    """

    def client_config(self, round_idx: int) -> dict[str, Any]: ...

    def aggregate(self, params: torch.Tensor, updates: Sequence[ClientUpdate],
                  round_idx: int) -> torch.Tensor: ...


@runtime_checkable
class AsyncAggregator(Protocol):
    """An asynchronous server strategy fed one client update at a time.

    ``on_arrival`` returns True when the global model changed; ``params`` is the current global
    model and ``version`` the number of global updates so far (staleness is measured in it).
    ``base`` is the model the client trained from (needed by FedAsync; others may ignore it).
    """

    @property
    def params(self) -> torch.Tensor: ...

    @property
    def version(self) -> int: ...

    def on_arrival(self, client_id: int, delta: torch.Tensor, staleness: int,
                   base: torch.Tensor | None = None) -> bool: ...


class FedAvg:
    """Synchronous FedAvg, weighted by ``num_examples`` (or uniform with ``weighted=False``)."""

    def __init__(self, server_lr: float = 1.0, weighted: bool = True) -> None:
        if server_lr <= 0:
            raise ValueError(f"server_lr must be > 0, got {server_lr}")
        self.server_lr = float(server_lr)
        self.weighted = bool(weighted)

    def client_config(self, round_idx: int) -> dict[str, Any]:
        return {}

    def aggregate(self, params: torch.Tensor, updates: Sequence[ClientUpdate],
                  round_idx: int) -> torch.Tensor:
        weights = [u.num_examples for u in updates] if self.weighted else None
        return fedavg_aggregate(params, [u.delta for u in updates], weights, self.server_lr)


class FedProx(FedAvg):
    """FedProx: FedAvg aggregation; clients add ``mu/2 ||w - x||^2`` (shipped as ``prox_mu``)."""

    def __init__(self, mu: float = 0.01, server_lr: float = 1.0, weighted: bool = True) -> None:
        super().__init__(server_lr, weighted)
        if mu < 0:
            raise ValueError(f"mu must be >= 0, got {mu}")
        self.mu = float(mu)

    def client_config(self, round_idx: int) -> dict[str, Any]:
        return {"prox_mu": self.mu}


class _AsyncBase:
    def __init__(self, x0: torch.Tensor) -> None:
        self._params = _check_params(x0, "x0").detach().clone()
        self._version = 0

    @property
    def params(self) -> torch.Tensor:
        return self._params

    @property
    def version(self) -> int:
        return self._version

    @staticmethod
    def _check_meta(client_id: int, staleness: int) -> None:
        if not isinstance(client_id, int) or client_id < 0:
            raise ValueError(f"client_id must be a non-negative int, got {client_id!r}")
        if staleness < 0:
            raise ValueError(f"staleness must be >= 0, got {staleness}")


class FedBuff(_AsyncBase):
    """FedBuff: buffer ``buffer_size`` arrivals, then ``x += eta * mean(buffer)``.

    staleness_weight: optional ``tau -> weight`` (e.g. ``polynomial_staleness``); None = 1.
    """

    def __init__(self, x0: torch.Tensor, buffer_size: int, server_lr: float = 1.0,
                 staleness_weight: Callable[[int], float] | None = None) -> None:
        super().__init__(x0)
        if not isinstance(buffer_size, int) or buffer_size < 1:
            raise ValueError(f"buffer_size must be a positive int, got {buffer_size!r}")
        if server_lr <= 0:
            raise ValueError(f"server_lr must be > 0, got {server_lr}")
        self.buffer_size = buffer_size
        self.server_lr = float(server_lr)
        self.staleness_weight = staleness_weight
        self._buffer: list[torch.Tensor] = []
        self._weights: list[float] = []

    def on_arrival(self, client_id: int, delta: torch.Tensor, staleness: int,
                   base: torch.Tensor | None = None) -> bool:
        self._check_meta(client_id, staleness)
        delta = check_update(delta, self._params)
        self._buffer.append(delta)
        self._weights.append(1.0 if self.staleness_weight is None
                             else float(self.staleness_weight(staleness)))
        if len(self._buffer) < self.buffer_size:
            return False
        self._params = fedbuff_step(self._params, self._buffer, self.server_lr, self._weights)
        self._buffer, self._weights = [], []
        self._version += 1
        return True


class FedAsync(_AsyncBase):
    """FedAsync: ``x <- (1 - a s(tau)) x + a s(tau) (base + delta)`` on every arrival."""

    def __init__(self, x0: torch.Tensor, alpha: float = 0.6, staleness_exponent: float = 0.5
                 ) -> None:
        super().__init__(x0)
        if not 0.0 < alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        if staleness_exponent < 0:
            raise ValueError(f"staleness_exponent must be >= 0, got {staleness_exponent}")
        self.alpha = float(alpha)
        self.staleness_exponent = float(staleness_exponent)

    def on_arrival(self, client_id: int, delta: torch.Tensor, staleness: int,
                   base: torch.Tensor | None = None) -> bool:
        self._check_meta(client_id, staleness)
        if base is None:
            raise ValueError("FedAsync needs base (the model the client trained from) to form "
                             "x_i = base + delta")
        base = check_update(base, self._params, name="base")
        delta = check_update(delta, self._params)
        a_tau = self.alpha * polynomial_staleness(staleness, self.staleness_exponent)
        self._params = fedasync_mix(self._params, base + delta, a_tau)  # (1-a)x + a x_i
        self._version += 1
        return True

