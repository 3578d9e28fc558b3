"""In-process federated simulation: synchronous rounds and an asynchronous event queue.

No processes, no framework: clients are Python objects holding a data partition, local training
runs sequentially in this process, and the asynchronous loop is a virtual clock over a min-heap
of job completions (``heapq``), so a few hundred server updates of a small MLP take seconds on a
2-core CPU.

Determinism. Every random choice is derived from the run's ``seed`` with
``numpy.random.SeedSequence``: client ``k``'s data order in its ``j``-th job is seeded by
``(seed, k, j)`` (independent of scheduling, so compared strategies see the same minibatches for
the same client and job index), job durations by ``(seed, "delays")`` and the choice of which
idle client starts next by ``(seed, "dispatch")``. The same seed gives bit-identical histories.

Asynchronous semantics (FedBuff-style, as CA²FL's spec describes):
1. start ``concurrency`` distinct clients chosen uniformly at random, each with the current model;
2. a job's duration is drawn from the :class:`DelayModel` at dispatch; the client's update
   ``delta`` is computed at dispatch from the model it received (it cannot see later models);
3. pop the earliest completion (ties: first dispatched first), hand ``(client, delta,
   staleness, base)`` to the aggregator, staleness = current version - version received;
4. ``dispatch="immediate"``: the freed slot is refilled right away with a uniformly random idle
   client (the freed one included) and the *current* model; ``dispatch="after_update"``: freed
   slots wait until the aggregator changes the global model, then are refilled with the new
   model (the reading "the clients in S_t download x_{t+1}"; with zero delays and
   concurrency = buffer = N it is exactly synchronous FedAvg).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

import numpy as np
import torch

from .strategies import AsyncAggregator, ClientUpdate, SyncAggregator, check_update

__all__ = [
    "AsyncSimulator",
    "ConstantDelays",
    "DelayModel",
    "ExponentialDelays",
    "FederatedClient",
    "FitConfig",
    "History",
    "derive_seed",
    "lognormal_client_means",
    "run_synchronous",
]


def derive_seed(seed: int, *keys: int | str) -> int:
    """A 63-bit integer seed derived deterministically from ``seed`` and any keys."""
    ints = [int(seed)] + [k if isinstance(k, int) else int.from_bytes(k.encode(), "little")
                          for k in keys]
    return int(np.random.SeedSequence(ints).generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))


@dataclass(frozen=True)
class FitConfig:
    """What the server tells a client for one job.

    round_idx: synchronous round (or the server version the async job started from);
    seed: the job's data-order seed (derived from the run seed, the client and its job count);
    options: strategy-provided settings (``prox_mu``, FedImpro's feature bank, ...).
    """

    round_idx: int
    seed: int
    options: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class FederatedClient(Protocol):
    """A client: ``fit(params (P,), config) -> ClientUpdate`` with ``delta`` of shape (P,)."""

    def fit(self, params: torch.Tensor, config: FitConfig) -> ClientUpdate: ...


@dataclass
class History:
    """What a run recorded.

    records: one dict per evaluation with ``round`` (sync) or ``arrivals``/``version``/``time``
    (async) plus whatever the evaluation function returned; staleness: every update's staleness
    (async only); train: per-round mean client metrics (sync only).
    """

    records: list[dict[str, float]] = field(default_factory=list)
    staleness: list[int] = field(default_factory=list)
    train: list[dict[str, float]] = field(default_factory=list)
    final_params: torch.Tensor | None = None

    def column(self, name: str) -> np.ndarray:
        """All recorded values of ``name`` as a float array (ValueError if never recorded)."""
        if not any(name in r for r in self.records):
            known = sorted({k for r in self.records for k in r})
            raise ValueError(f"history has no column {name!r}; recorded: {known}")
        return np.asarray([r.get(name, np.nan) for r in self.records], dtype=np.float64)

    def last_mean(self, name: str, last: int) -> float:
        """Mean of the last ``last`` recorded values of ``name``."""
        if last < 1:
            raise ValueError(f"last must be >= 1, got {last}")
        return float(np.mean(self.column(name)[-last:]))


EvalFn = Callable[[torch.Tensor], Mapping[str, float]]


def _check_clients(clients: Sequence[FederatedClient]) -> None:
    if len(clients) == 0:
        raise ValueError("clients must not be empty")
    for i, c in enumerate(clients):
        if not callable(getattr(c, "fit", None)):
            raise TypeError(f"clients[{i}] has no fit(params, config) method")


def run_synchronous(
    params: torch.Tensor,
    clients: Sequence[FederatedClient],
    aggregator: SyncAggregator,
    rounds: int,
    *,
    seed: int = 0,
    clients_per_round: int | None = None,
    eval_fn: EvalFn | None = None,
    eval_every: int = 1,
    progress: Callable[[float, str], None] | None = None,
) -> History:
    """Synchronous rounds: sample clients, train each from the global model, aggregate.

    params: (P,) initial global model. Each round ``t`` samples ``clients_per_round`` distinct
    clients (all by default) with a generator seeded by ``(seed, "sample", t)``; client ``k``'s
    job in round ``t`` gets data-order seed ``(seed, k, t)``. ``eval_fn(params)`` is called after
    rounds ``eval_every, 2 eval_every, ...`` and after the last round. Returns a History whose
    records carry ``round`` and the evaluation's metrics.
    """
    _check_clients(clients)
    if not isinstance(rounds, int) or rounds < 0:
        raise ValueError(f"rounds must be a non-negative int, got {rounds!r}")
    n = len(clients)
    m = n if clients_per_round is None else int(clients_per_round)
    if not 1 <= m <= n:
        raise ValueError(f"clients_per_round must be in [1, {n}], got {clients_per_round}")
    if eval_every < 1:
        raise ValueError(f"eval_every must be >= 1, got {eval_every}")
    x = params.detach().clone()
    hist = History()
    if eval_fn is not None:
        hist.records.append({"round": 0.0, **{k: float(v) for k, v in eval_fn(x).items()}})
    for t in range(1, rounds + 1):
        if m == n:
            chosen = list(range(n))
        else:
            rng = np.random.default_rng(derive_seed(seed, "sample", t))
            chosen = sorted(rng.choice(n, size=m, replace=False).tolist())
        options = dict(aggregator.client_config(t))
        updates: list[ClientUpdate] = []
        for k in chosen:
            upd = clients[k].fit(x.clone(), FitConfig(t, derive_seed(seed, k, t), options))
            check_update(upd.delta, x, name=f"update of client {k}")
            upd.extras.setdefault("client_id", k)
            updates.append(upd)
        x = aggregator.aggregate(x, updates, t).detach()
        if updates and updates[0].metrics:
            keys = set.intersection(*(set(u.metrics) for u in updates))
            hist.train.append({key: float(np.mean([u.metrics[key] for u in updates]))
                               for key in sorted(keys)})
        if eval_fn is not None and (t % eval_every == 0 or t == rounds):
            hist.records.append({"round": float(t),
                                 **{k: float(v) for k, v in eval_fn(x).items()}})
        if progress is not None:
            progress(t / max(rounds, 1), f"round {t}/{rounds}")
    hist.final_params = x
    return hist


# --------------------------------------------------------------------------- asynchronous


@runtime_checkable
class DelayModel(Protocol):
    """Simulated job duration: ``sample(client_id, rng) -> float >= 0`` (virtual time units)."""

    def sample(self, client_id: int, rng: np.random.Generator) -> float: ...


class ExponentialDelays:
    """Job time of client k ~ Exponential(mean = means[k]) (heterogeneous client speeds)."""

    def __init__(self, means: Sequence[float] | np.ndarray) -> None:
        m = np.asarray(means, dtype=np.float64)
        if m.ndim != 1 or m.size == 0 or not np.all(np.isfinite(m)) or np.any(m <= 0):
            raise ValueError("means must be a non-empty 1-D array of positive job-time means")
        self.means = m

    @property
    def num_clients(self) -> int:
        """How many clients this law covers (one mean each)."""
        return int(self.means.size)

    def sample(self, client_id: int, rng: np.random.Generator) -> float:
        return float(rng.exponential(self.means[client_id]))


class ConstantDelays:
    """Every job of client k takes exactly ``times[k]`` (a scalar applies to every client)."""

    def __init__(self, times: float | Sequence[float] | np.ndarray = 0.0) -> None:
        t = np.asarray(times, dtype=np.float64)
        if t.ndim > 1 or t.size == 0 or not np.all(np.isfinite(t)) or np.any(t < 0):
            raise ValueError("times must be a scalar or a non-empty 1-D array, finite and >= 0")
        self.times = t

    @property
    def num_clients(self) -> int | None:
        """How many clients this law covers (None for one scalar time shared by all)."""
        return None if self.times.ndim == 0 else int(self.times.size)

    def sample(self, client_id: int, rng: np.random.Generator) -> float:
        return float(self.times if self.times.ndim == 0 else self.times[client_id])


def lognormal_client_means(num_clients: int, sigma: float = 1.0, *, seed: int = 0) -> np.ndarray:
    """Per-client mean job times ``m_k ~ LogNormal(0, sigma^2)``, shape (num_clients,)."""
    if num_clients < 1:
        raise ValueError(f"num_clients must be >= 1, got {num_clients}")
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    return np.random.default_rng(seed).lognormal(0.0, sigma, size=num_clients)


@dataclass(order=True)
class _Job:
    finish: float
    order: int
    client: int = field(compare=False)
    version: int = field(compare=False)
    base: torch.Tensor = field(compare=False)
    delta: torch.Tensor = field(compare=False)


class AsyncSimulator:
    """Event-driven asynchronous FL on a virtual clock (see the module docstring).

    clients: the N clients; aggregator: an :class:`AsyncAggregator` (FedBuff, FedAsync, CA²FL);
    concurrency: M_c, the number of clients training at once (<= N); delays: job-time law;
    client_options: optional ``version -> dict`` merged into each job's FitConfig options.
    """

    def __init__(self, clients: Sequence[FederatedClient], aggregator: AsyncAggregator, *,
                 concurrency: int, delays: DelayModel, seed: int = 0,
                 dispatch: Literal["immediate", "after_update"] = "immediate",
                 client_options: Callable[[int], Mapping[str, Any]] | None = None) -> None:
        _check_clients(clients)
        if not isinstance(concurrency, int) or not 1 <= concurrency <= len(clients):
            raise ValueError(f"concurrency must be an int in [1, {len(clients)}] (number of "
                             f"clients), got {concurrency!r}")
        if dispatch not in ("immediate", "after_update"):
            raise ValueError(f"dispatch must be 'immediate' or 'after_update', got {dispatch!r}")
        if not callable(getattr(delays, "sample", None)):
            raise TypeError("delays must have a sample(client_id, rng) method")
        covered = getattr(delays, "num_clients", None)
        if covered is not None and covered != len(clients):
            raise ValueError(f"delays covers {covered} clients (one job-time law each) but "
                             f"there are {len(clients)} clients")
        for attr in ("on_arrival", "params", "version"):
            if not hasattr(aggregator, attr):
                raise TypeError(f"aggregator has no {attr!r}; expected an AsyncAggregator")
        self.clients = list(clients)
        self.aggregator = aggregator
        self.concurrency = concurrency
        self.delays = delays
        self.seed = int(seed)
        self.dispatch = dispatch
        self.client_options = client_options

    def run(self, *, max_arrivals: int | None = None, max_server_updates: int | None = None,
            eval_fn: EvalFn | None = None, eval_every: int = 1,
            progress: Callable[[float, str], None] | None = None) -> History:
        """Run until ``max_arrivals`` client updates or ``max_server_updates`` global updates.

        ``eval_fn(params)`` is called every ``eval_every`` arrivals (and at the end); records
        carry ``arrivals``, ``version`` (global updates so far) and ``time`` (virtual clock).
        """
        if max_arrivals is None and max_server_updates is None:
            raise ValueError("give max_arrivals or max_server_updates")
        for name, v in (("max_arrivals", max_arrivals), ("max_server_updates", max_server_updates)):
            if v is not None and (not isinstance(v, int) or v < 1):
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if eval_every < 1:
            raise ValueError(f"eval_every must be >= 1, got {eval_every}")
        n = len(self.clients)
        agg = self.aggregator
        delay_rng = np.random.default_rng(derive_seed(self.seed, "delays"))
        pick_rng = np.random.default_rng(derive_seed(self.seed, "dispatch"))
        jobs_done = [0] * n
        idle = set(range(n))
        heap: list[_Job] = []
        order = 0
        now = 0.0
        hist = History()

        def start(client: int) -> None:
            nonlocal order
            idle.discard(client)
            version = agg.version
            base = agg.params.detach().clone()
            opts = dict(self.client_options(version)) if self.client_options else {}
            cfg = FitConfig(version, derive_seed(self.seed, client, jobs_done[client]), opts)
            jobs_done[client] += 1
            upd = self.clients[client].fit(base.clone(), cfg)
            delta = check_update(upd.delta, base, name=f"update of client {client}")
            dur = float(self.delays.sample(client, delay_rng))
            if not dur >= 0:
                raise ValueError(f"delays.sample returned {dur} for client {client}; need >= 0")
            heapq.heappush(heap, _Job(now + dur, order, client, version, base, delta))
            order += 1

        def pick_idle() -> int:
            pool = sorted(idle)
            return pool[int(pick_rng.integers(len(pool)))]

        first = pick_rng.choice(n, size=self.concurrency, replace=False)
        for c in first.tolist():
            start(int(c))
        if eval_fn is not None:
            hist.records.append({"arrivals": 0.0, "version": 0.0, "time": 0.0,
                                 **{k: float(v) for k, v in eval_fn(agg.params).items()}})
        arrivals = 0
        waiting = 0  # freed slots not yet refilled (dispatch="after_update")
        target = max_arrivals if max_arrivals is not None else None
        while True:
            job = heapq.heappop(heap)
            now = job.finish
            staleness = agg.version - job.version
            hist.staleness.append(int(staleness))
            changed = agg.on_arrival(job.client, job.delta, staleness, job.base)
            arrivals += 1
            idle.add(job.client)
            done = ((target is not None and arrivals >= target)
                    or (max_server_updates is not None and agg.version >= max_server_updates))
            if eval_fn is not None and (arrivals % eval_every == 0 or done):
                hist.records.append({"arrivals": float(arrivals), "version": float(agg.version),
                                     "time": now,
                                     **{k: float(v) for k, v in eval_fn(agg.params).items()}})
            if progress is not None:
                frac = (arrivals / target if target is not None
                        else agg.version / max_server_updates)  # type: ignore[operator]
                progress(min(frac, 1.0), f"{arrivals} arrivals, {agg.version} updates")
            if done:
                break
            if self.dispatch == "immediate":
                start(pick_idle())
            else:
                waiting += 1
                if changed:
                    for _ in range(waiting):
                        start(pick_idle())
                    waiting = 0
            if not heap:
                raise RuntimeError("no client is training and none was dispatched; with "
                                   "dispatch='after_update' the buffer must not exceed "
                                   "the concurrency")
        hist.final_params = agg.params.detach().clone()
        return hist
