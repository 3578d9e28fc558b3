"""Flower adapters (optional ``[flower]`` extra): the kit's strategy objects behind Flower.

Import this module explicitly (``from iclr24.kits.federated import flower``); nothing else in the
kit imports flwr. Written against Flower's Message API (flwr 1.42: ``flwr.app``,
``flwr.serverapp.Grid``, ``flwr.serverapp.strategy.FedAvg``).

- :class:`FlatCodec`: a model's federated state (parameters, then floating-point buffers such
  as BatchNorm running statistics; see :func:`~.local_training.federated_state`) as one flat
  vector <-> an ``ArrayRecord`` keyed by ``state_dict`` name (shape- and finiteness-checked, so
  a client returning a wrong-shaped or NaN array is rejected with a message naming the array).
  Buffers thus travel with the model, and Flower's FedAvg (``aggregate_arrayrecords``) sets
  them to the sample-weighted mean of the clients' values, as the in-process FedAvg does.
  Integer buffers (``num_batches_tracked``) stay local to each node and are not sent.
- :class:`SideStateFedAvg`: Flower's FedAvg that also ships server *side state* (an extra
  ``ArrayRecord``) with the model in ``configure_train`` and hands the clients' side records to
  ``aggregate_side`` in ``aggregate_train``; the model itself is still averaged by Flower's own
  code on the model record only. FedImpro's strategy subclasses it.
- :class:`LocalGrid`: a ``Grid`` that answers train messages in this process by calling
  per-node handler functions, replying in order of simulated job completion: for tests and
  debugging server logic without a SuperLink, Ray or the simulation engine.
- :class:`AsyncGridServer`: an asynchronous server loop on Flower's low-level ``Grid`` messaging
  for any :class:`~.strategies.AsyncAggregator` (FedBuff, FedAsync, CA²FL). Core Flower has no
  asynchronous strategy (its strategies are round-synchronous), so this is a ServerApp main loop:
  push train messages to up to ``concurrency`` nodes, pull replies as they arrive, feed each to
  ``aggregator.on_arrival`` (clients keyed by node id), and push the current model to a freed
  node. Clients return their *locally trained model* under ``"arrays"`` (Flower's convention);
  the loop forms ``delta = returned - sent`` against the model that node received. Each job
  carries its own data-order seed ``job-seed`` = derive_seed(seed, client, that client's job
  count), the in-process ``AsyncSimulator``'s derivation, so a node dispatched twice at the same
  server version draws fresh minibatches.
- :func:`run_on_simulation_engine`: run a ServerApp and a ClientApp on Flower's simulation
  engine (``flwr.simulation.run_simulation``, Ray backend) with N virtual nodes, one CPU each;
  deprecated in flwr 1.42 but still its only in-process runner (see its docstring).
- :func:`wait_for_nodes`: block until a number of nodes has registered with the grid (nodes of
  a real Flower run connect after the ServerApp starts), with a timeout and a clear error.

Unit tests drive these hooks with hand-built messages and the in-memory ``LocalGrid``; the
``serial`` tests run FedAvg, FedImpro and CA²FL on Flower's own simulation engine
(``flwr.simulation.run_simulation``, Ray backend; the ``[flower]`` extra installs
``flwr[simulation]``). Reproductions (claims) never launch the engine.
"""

from __future__ import annotations

import heapq
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

try:
    from flwr.app import (
        Array,
        ArrayRecord,
        ConfigRecord,
        Message,
        MessageType,
        MetricRecord,
        RecordDict,
    )
    from flwr.app.metadata import Metadata
    from flwr.serverapp import Grid
    from flwr.serverapp.strategy import FedAvg as _FlowerFedAvg
    from flwr.serverapp.strategy.strategy_utils import (
        aggregate_arrayrecords,
        validate_message_reply_consistency,
    )
except ImportError as exc:  # pragma: no cover - exercised only without flwr
    raise ImportError("iclr24.kits.federated.flower needs Flower: pip install 'iclr24[flower]' "
                      f"(flwr >= 1.20 with the Message API); import failed: {exc}") from exc

import numpy as np
import torch
from torch import nn

from .local_training import federated_state
from .simulation import FederatedClient, FitConfig, History, derive_seed
from .strategies import AsyncAggregator, check_update

__all__ = [
    "AsyncGridServer",
    "FlatCodec",
    "LocalGrid",
    "SideStateFedAvg",
    "arrayrecord_to_tensors",
    "client_index",
    "fit_reply",
    "job_seed",
    "run_on_simulation_engine",
    "tensors_to_arrayrecord",
    "wait_for_nodes",
]


def tensors_to_arrayrecord(tensors: Mapping[str, torch.Tensor | np.ndarray]) -> ArrayRecord:
    """{name: tensor} -> ArrayRecord (numpy arrays, same names)."""
    return ArrayRecord({k: Array(np.ascontiguousarray(np.asarray(
        v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v))) for k, v in tensors.items()})


def arrayrecord_to_tensors(record: ArrayRecord) -> dict[str, torch.Tensor]:
    """ArrayRecord -> {name: torch tensor}."""
    return {k: torch.from_numpy(np.array(v.numpy())) for k, v in record.items()}


class FlatCodec:
    """Flat state vector (P,) <-> ArrayRecord {name: array of its shape}.

    shapes: ordered {name: shape}; the vector's layout is their concatenation in this order.
    ``from_module`` lists the model's parameters, then its floating-point buffers, under their
    ``state_dict`` names (:func:`~.local_training.federated_state`, the layout of
    ``flatten_params``), so a model with BatchNorm federates its running statistics too; an
    ArrayRecord built from a whole ``state_dict`` also carries ``num_batches_tracked``, which
    this codec does not expect (integer buffers stay local) and ``decode`` names as unexpected.
    """

    def __init__(self, shapes: Mapping[str, Sequence[int]], dtype: torch.dtype = torch.float32
                 ) -> None:
        if not shapes:
            raise ValueError("shapes must name at least one array")
        self.shapes = {k: tuple(int(s) for s in v) for k, v in shapes.items()}
        self.sizes = {k: int(np.prod(v)) if v else 1 for k, v in self.shapes.items()}
        self.dtype = dtype
        self.numel = sum(self.sizes.values())

    @classmethod
    def from_module(cls, model: nn.Module) -> FlatCodec:
        """The codec of ``model``'s federated state (parameters, then floating buffers)."""
        entries = federated_state(model)
        return cls({n: tuple(t.shape) for n, t in entries}, entries[0][1].dtype)

    def encode(self, flat: torch.Tensor) -> ArrayRecord:
        """(P,) -> ArrayRecord (ValueError for a wrong shape or NaN/inf entries)."""
        if not isinstance(flat, torch.Tensor) or flat.shape != (self.numel,):
            raise ValueError(f"flat must have shape ({self.numel},), got "
                             f"{tuple(getattr(flat, 'shape', ()))}")
        if not torch.isfinite(flat).all():
            raise ValueError("flat contains NaN or inf; refusing to send a non-finite model")
        out, offset = {}, 0
        for k, shape in self.shapes.items():
            out[k] = flat[offset:offset + self.sizes[k]].reshape(shape)
            offset += self.sizes[k]
        return tensors_to_arrayrecord(out)

    def decode(self, record: ArrayRecord, *, who: str = "record") -> torch.Tensor:
        """ArrayRecord -> (P,), checking names, shapes and finiteness (ValueError naming
        ``who`` and the culprit array)."""
        if not isinstance(record, ArrayRecord):
            raise TypeError(f"{who} must be an ArrayRecord, got {type(record).__name__}")
        missing = [k for k in self.shapes if k not in record]
        extra = [k for k in record if k not in self.shapes]
        if missing or extra:
            raise ValueError(f"{who} has arrays {sorted(record.keys())}; expected "
                             f"{list(self.shapes)} (missing {missing}, unexpected {extra})")
        parts = []
        for k, shape in self.shapes.items():
            arr = np.asarray(record[k].numpy())
            if tuple(arr.shape) != shape:
                raise ValueError(f"{who}: array {k!r} has shape {tuple(arr.shape)}, expected "
                                 f"{shape}")
            if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype,
                                                                         np.complexfloating):
                raise ValueError(f"{who}: array {k!r} has dtype {arr.dtype}, expected a real "
                                 "number type")
            if not np.isfinite(arr).all():
                raise ValueError(f"{who}: array {k!r} contains NaN or inf")
            parts.append(torch.as_tensor(arr).reshape(-1).to(self.dtype))
        return torch.cat(parts)


class _DropRunSimulationDeprecation(logging.Filter):
    """Drops flwr's "DEPRECATED FEATURE: The `run_simulation` function ..." log record (flwr
    logs it on its ``flwr`` logger; it is not a ``warnings`` warning)."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        return not ("DEPRECATED FEATURE" in text and "run_simulation" in text)


def run_on_simulation_engine(server_app: Any, client_app: Any, num_nodes: int, *,
                             num_cpus: int | None = None, verbose: bool = False) -> None:
    """Run ``server_app`` against ``num_nodes`` virtual SuperNodes running ``client_app`` on
    Flower's simulation engine (Ray backend; needs ``flwr[simulation]``).

    Each ClientApp instance gets one CPU; Ray starts with ``num_cpus`` (default: min(cores,
    num_nodes)), so that many nodes train at once. The ServerApp runs in a thread of this
    process (its closures can collect results); an exception in it is re-raised here.

    Why ``flwr.simulation.run_simulation``, which flwr 1.42 deprecates ("Please use `flwr run`
    in the CLI instead", ``flwr/simulation/run_simulation.py``): it is the only runner in
    flwr 1.42 that takes ServerApp/ClientApp *objects* and runs them in this process without
    a network. Its replacement, ``flwr run <app-dir> [connection]``, builds a FAB from an app
    directory (``pyproject.toml`` naming the apps as ``module:attribute``) and submits it to
    a SuperLink over the loopback network (the default ``:local:`` connection lazily starts a
    *detached* ``flower-superlink --simulation`` on 127.0.0.1:39091 that outlives the call,
    ``flwr/cli/local_superlink.py``), which runs the apps in a subprocess, so closures,
    results and exceptions do not come back to the caller;
    ``flwr.simulation.run_simulation_process`` is that runtime's worker (it needs a
    SuperLink's SimulationIo API) and ``flwr.simulation.start_simulation`` is the pre-Message
    API engine, deprecated since 1.13. flwr logs the deprecation (a ``DEPRECATED FEATURE``
    record on the ``flwr`` logger, not a Python warning); that one record is filtered here.

    Node count under ``flwr run`` (flwr 1.42): a local simulation SuperLink starts from
    ``DEFAULT_SIMULATION_CONFIG`` (``flwr/supercore/constant.py``: ``num_supernodes=2``,
    ``client_resources_num_cpus=2``), so a ServerApp that waits for 4 nodes (Flower's
    ``sample_nodes`` polls every second without a deadline; :func:`wait_for_nodes` raises
    after its timeout) never gets them unless the run sets ``num-supernodes``: ``flwr run .
    local --federation-config "num-supernodes=4"``, or, for the running SuperLink's later
    runs, ``flwr federation simulation-config --num-supernodes 4``. The older spelling,
    ``options.num-supernodes`` in the SuperLink connection's table (``[superlink.<name>]`` in
    ``$FLWR_HOME/config.toml``; a legacy ``[tool.flwr.federations.<name>]`` table in
    ``pyproject.toml`` is migrated there), still works in 1.42 but is deprecated. This
    function passes ``num_supernodes`` itself, so none of that applies to it.
    """
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes must be a positive int, got {num_nodes!r}")
    cpus = int(num_cpus) if num_cpus is not None else min(os.cpu_count() or 1, num_nodes)
    if cpus < 1:
        raise ValueError(f"num_cpus must be >= 1, got {num_cpus!r}")
    try:
        from flwr.simulation import run_simulation
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("Flower's simulation engine needs flwr[simulation] (Ray): pip install "
                          f"'iclr24[flower]'; import failed: {exc}") from exc
    flwr_logger = logging.getLogger("flwr")
    drop = _DropRunSimulationDeprecation()
    flwr_logger.addFilter(drop)
    try:
        run_simulation(server_app, client_app, num_supernodes=num_nodes,
                       backend_config={"client_resources": {"num_cpus": 1, "num_gpus": 0.0},
                                       "init_args": {"num_cpus": cpus, "num_gpus": 0}},
                       verbose_logging=verbose)
    finally:
        flwr_logger.removeFilter(drop)


def wait_for_nodes(grid: Grid, num_nodes: int, *, timeout: float = 120.0,
                   poll_interval: float = 0.1) -> list[int]:
    """Wait until ``num_nodes`` nodes are connected to ``grid``; return the first ``num_nodes``
    node ids in sorted order (the participating nodes, deterministic for a given set).

    Raises ValueError for a non-positive ``num_nodes`` and TimeoutError, saying how many nodes
    did connect, when fewer than ``num_nodes`` have registered after ``timeout`` seconds.
    """
    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes must be a positive int, got {num_nodes!r}")
    if not timeout >= 0 or not poll_interval > 0:
        raise ValueError(f"timeout must be >= 0 and poll_interval > 0, got {timeout!r}, "
                         f"{poll_interval!r}")
    deadline = time.monotonic() + timeout
    while True:
        nodes = sorted(int(n) for n in grid.get_node_ids())
        if len(nodes) >= num_nodes:
            return nodes[:num_nodes]
        if time.monotonic() >= deadline:
            raise TimeoutError(f"only {len(nodes)} of the {num_nodes} expected nodes connected "
                               f"to the grid within {timeout} s (connected: {nodes})")
        time.sleep(poll_interval)


class SideStateFedAvg(_FlowerFedAvg):
    """Flower FedAvg + side state shipped with the model and aggregated from the replies.

    Subclasses implement ``side_state(server_round) -> ArrayRecord | None`` (sent to every
    sampled node under ``side_key``) and ``aggregate_side(server_round, replies)`` (called with
    the valid reply Messages, so node ids are at hand). The model is averaged by Flower's own
    ``aggregate_arrayrecords`` on the model record alone (Flower's consistency check expects
    exactly one ArrayRecord per reply, so side records are stripped first).
    """

    side_key = "side-state"

    def side_state(self, server_round: int) -> ArrayRecord | None:
        return None

    def aggregate_side(self, server_round: int, replies: list[Message]) -> None:
        return None

    def configure_train(self, server_round: int, arrays: ArrayRecord, config: ConfigRecord,
                        grid: Grid) -> Iterable[Message]:
        messages = list(super().configure_train(server_round, arrays, config, grid))
        side = self.side_state(server_round)
        if side is not None:
            for msg in messages:  # FedAvg shares one RecordDict; setting it is idempotent
                msg.content[self.side_key] = side
        return messages

    def aggregate_train(self, server_round: int, replies: Iterable[Message]
                        ) -> tuple[ArrayRecord | None, MetricRecord | None]:
        valid = [m for m in replies if not m.has_error()]
        if not valid:
            return None, None
        contents = [m.content for m in valid]
        for i, c in enumerate(contents):
            if self.arrayrecord_key not in c.array_records:
                raise ValueError(f"reply {i} from node {valid[i].metadata.src_node_id} has no "
                                 f"model ArrayRecord under {self.arrayrecord_key!r}")
        stripped = [RecordDict({self.arrayrecord_key: c[self.arrayrecord_key],
                                **{k: v for k, v in c.metric_records.items()}})
                    for c in contents]
        validate_message_reply_consistency(stripped, self.weighted_by_key, check_arrayrecord=True)
        arrays = aggregate_arrayrecords(stripped, self.weighted_by_key)
        metrics = self.train_metrics_aggr_fn(stripped, self.weighted_by_key)
        self.aggregate_side(server_round, valid)
        return arrays, metrics


class AsyncGridServer:
    """Asynchronous FL on a Flower ``Grid`` around any AsyncAggregator.

    grid: the ServerApp's Grid; aggregator: FedBuff / FedAsync / CA²FL (its ``num_clients``, if
    any, must equal the number of nodes); codec: model vector <-> ArrayRecord; concurrency: M_c;
    train_config: extra ConfigRecord entries for every train message (the loop adds
    ``server-version``, ``node-job`` (the node's job count) and ``job-seed``); node_ids: the
    participating nodes (default: all connected now, sorted; use :func:`wait_for_nodes` first in
    a real Flower run), node k in that order is client k of the aggregator.
    """

    def __init__(self, grid: Grid, aggregator: AsyncAggregator, codec: FlatCodec, *,
                 concurrency: int, train_config: Mapping[str, Any] | None = None,
                 node_ids: Sequence[int] | None = None, seed: int = 0,
                 poll_interval: float = 0.05, timeout: float = 3600.0) -> None:
        self.grid = grid
        self.aggregator = aggregator
        self.codec = codec
        nodes = sorted(int(n) for n in (grid.get_node_ids() if node_ids is None else node_ids))
        if not nodes:
            raise ValueError("no nodes are connected to the grid")
        if not 1 <= concurrency <= len(nodes):
            raise ValueError(f"concurrency must be in [1, {len(nodes)}] (number of nodes), "
                             f"got {concurrency}")
        n_agg = getattr(aggregator, "num_clients", None)
        if n_agg is not None and n_agg != len(nodes):
            raise ValueError(f"the aggregator keeps {n_agg} client caches but the grid has "
                             f"{len(nodes)} nodes")
        if aggregator.params.shape != (codec.numel,):
            raise ValueError(f"aggregator params have shape {tuple(aggregator.params.shape)}, "
                             f"codec expects ({codec.numel},)")
        self.nodes = nodes
        self.index = {n: i for i, n in enumerate(nodes)}
        self.concurrency = concurrency
        self.train_config = dict(train_config or {})
        self.rng = np.random.default_rng(derive_seed(seed, "grid-dispatch"))
        self.poll_interval = poll_interval
        self.timeout = timeout
        self.in_flight: dict[str, tuple[int, int, torch.Tensor]] = {}
        self.idle = set(nodes)
        self.seed = int(seed)
        self.jobs_done = {n: 0 for n in nodes}  # per-node job counter: seeds each job's data
        self.failures = 0
        self.staleness: list[int] = []

    def _dispatch(self, node: int) -> None:
        agg = self.aggregator
        base = agg.params.detach().clone()
        job = self.jobs_done[node]
        config = ConfigRecord({**self.train_config, "server-version": int(agg.version),
                               "node-job": job,
                               "job-seed": derive_seed(self.seed, self.index[node], job)})
        content = RecordDict({"arrays": self.codec.encode(base), "config": config})
        try:  # inside a Flower runtime the task identity is set
            msg = Message(content, dst_node_id=node, message_type=MessageType.TRAIN,
                          group_id=str(agg.version))
        except RuntimeError:  # outside one (tests, LocalGrid): let the grid fill the metadata
            msg = self.grid.create_message(content, MessageType.TRAIN, node, str(agg.version))
        ids = list(self.grid.push_messages([msg]))
        if len(ids) != 1 or not ids[0]:
            raise RuntimeError(f"the grid did not accept the train message for node {node}")
        self.idle.discard(node)
        self.jobs_done[node] = job + 1
        self.in_flight[ids[0]] = (node, int(agg.version), base)

    def _pick_idle(self) -> int:
        pool = sorted(self.idle)
        return pool[int(self.rng.integers(len(pool)))]

    def handle_reply(self, reply: Message) -> bool:
        """Feed one reply to the aggregator; returns whether the global model changed.

        An error reply frees the node without an update. A reply whose model has the wrong
        arrays/shapes raises ValueError naming the node.
        """
        key = reply.metadata.reply_to_message_id
        if key not in self.in_flight:
            raise ValueError(f"reply to unknown message {key!r} (from node "
                             f"{reply.metadata.src_node_id})")
        node, version, base = self.in_flight.pop(key)
        self.idle.add(node)
        if reply.has_error():
            self.failures += 1
            return False
        content = reply.content
        if "arrays" not in content.array_records:
            raise ValueError(f"reply from node {node} carries no 'arrays' ArrayRecord")
        local = self.codec.decode(content["arrays"], who=f"reply from node {node}")
        delta = check_update(local - base, base, name=f"update from node {node}")
        staleness = self.aggregator.version - version
        self.staleness.append(int(staleness))
        return self.aggregator.on_arrival(self.index[node], delta, staleness, base)

    def run(self, *, max_arrivals: int | None = None, max_server_updates: int | None = None,
            eval_fn: Callable[[torch.Tensor], Mapping[str, float]] | None = None,
            eval_every: int = 1) -> History:
        """Serve until ``max_arrivals`` replies or ``max_server_updates`` global updates."""
        if max_arrivals is None and max_server_updates is None:
            raise ValueError("give max_arrivals or max_server_updates")
        hist = History()
        first = self.rng.choice(len(self.nodes), size=self.concurrency, replace=False)
        for i in first.tolist():
            self._dispatch(self.nodes[i])
        arrivals = 0
        deadline = time.monotonic() + self.timeout
        while True:
            replies = list(self.grid.pull_messages(list(self.in_flight)))
            if not replies:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"no reply within {self.timeout} s; "
                                       f"{len(self.in_flight)} jobs in flight")
                time.sleep(self.poll_interval)
                continue
            deadline = time.monotonic() + self.timeout
            for reply in replies:
                self.handle_reply(reply)
                arrivals += 1
                done = ((max_arrivals is not None and arrivals >= max_arrivals) or
                        (max_server_updates is not None
                         and self.aggregator.version >= max_server_updates))
                if eval_fn is not None and (arrivals % eval_every == 0 or done):
                    hist.records.append({"arrivals": float(arrivals),
                                         "version": float(self.aggregator.version),
                                         **{k: float(v) for k, v in
                                            eval_fn(self.aggregator.params).items()}})
                if done:
                    hist.staleness = list(self.staleness)
                    hist.final_params = self.aggregator.params.detach().clone()
                    return hist
                self._dispatch(self._pick_idle())


def job_seed(seed: int, round_idx: int, client_index: int | None = None) -> int:
    """A synchronous job's data-order seed: derive_seed(seed, client_index, round_idx) (the
    in-process ``run_synchronous`` derivation) or derive_seed(seed, round_idx) without an index."""
    if client_index is None:
        return derive_seed(seed, round_idx)
    return derive_seed(seed, int(client_index), round_idx)


def client_index(context: Any) -> int:
    """The client index of a ClientApp's node: ``node_config["partition-id"]`` (set by Flower's
    simulation engine and by deployments that partition data), else the node id."""
    cfg = getattr(context, "node_config", None) or {}
    return int(cfg["partition-id"]) if "partition-id" in cfg else int(context.node_id)


def fit_reply(client: FederatedClient, codec: FlatCodec, message: Message, *, seed: int = 0,
              client_index: int | None = None, options: Mapping[str, Any] | None = None
              ) -> Message:
    """Run a kit client's ``fit`` on a Flower train message and build the reply.

    Reads the model from ``content["arrays"]`` and the round from the config's
    ``server-round`` (synchronous strategies) or ``server-version`` (AsyncGridServer); replies
    with the locally trained model under ``"arrays"`` and ``num-examples``/``train-loss`` in a
    MetricRecord under ``"metrics"``. The job's data-order seed is the config's ``job-seed``
    when the server sends one (AsyncGridServer does), else :func:`job_seed` of ``seed``,
    ``client_index`` and the round (with ``client_index`` = k it is ``run_synchronous``'s
    seed for client k, so a Flower run reproduces the in-process one).
    """
    content = message.content
    if "arrays" not in content.array_records:
        raise ValueError("train message carries no 'arrays' ArrayRecord")
    params = codec.decode(content["arrays"], who="train message")
    config = content.config_records.get("config", ConfigRecord())
    round_idx = int(config.get("server-round", config.get("server-version", 0)))
    js = (int(config["job-seed"]) if "job-seed" in config
          else job_seed(seed, round_idx, client_index))
    upd = client.fit(params, FitConfig(round_idx, js, dict(options or {})))
    delta = check_update(upd.delta, params, name="client delta")
    metrics = MetricRecord({"num-examples": int(upd.num_examples),
                            **{f"train-{k}": float(v) for k, v in upd.metrics.items()}})
    return Message(RecordDict({"arrays": codec.encode(params + delta), "metrics": metrics}),
                   reply_to=message)


class LocalGrid(Grid):
    """An in-process ``Grid``: node ``k``'s replies come from ``handlers[k](message)``.

    handlers: {node_id: message -> reply message}; job_times: {node_id: virtual duration}
    (default 1 for all). Each pushed message is answered at once but released by
    ``pull_messages`` one at a time in order of virtual completion time (ties: push order), so
    asynchronous server loops see a deterministic arrival order. Messages are built with
    explicit metadata, so no Flower runtime (TaskIdentity) is needed.
    """

    def __init__(self, handlers: Mapping[int, Callable[[Message], Message]],
                 job_times: Mapping[int, float] | None = None, *, run_id: int = 1) -> None:
        if not handlers:
            raise ValueError("handlers must map at least one node id to a handler")
        self.handlers = {int(k): v for k, v in handlers.items()}
        self.job_times = {k: float((job_times or {}).get(k, 1.0)) for k in self.handlers}
        self.run_id = run_id
        self.clock = 0.0
        self._counter = 0
        self._pending: list[tuple[float, int, str, Message]] = []
        self.pushed: list[Message] = []

    # -- abstract Grid API
    def set_run(self, run: Any) -> None:  # pragma: no cover - not used in-process
        self._run = run

    @property
    def run(self) -> Any:  # pragma: no cover - not used in-process
        return getattr(self, "_run", None)

    def create_message(self, content: RecordDict, message_type: str, dst_node_id: int,
                       group_id: str, ttl: float | None = None) -> Message:
        meta = Metadata(run_id=self.run_id, message_id="", src_node_id=0,
                        dst_node_id=int(dst_node_id), reply_to_message_id="",
                        group_id=group_id, created_at=time.time(), ttl=ttl or 43200.0,
                        message_type=message_type)
        return Message(content=content, metadata=meta)

    def get_node_ids(self) -> Iterable[int]:
        return sorted(self.handlers)

    def push_messages(self, messages: Iterable[Message]) -> Iterable[str]:
        ids = []
        for msg in messages:
            node = int(msg.metadata.dst_node_id)
            if node not in self.handlers:
                raise ValueError(f"message addressed to unknown node {node}")
            self._counter += 1
            mid = f"local-{self._counter}"
            msg.metadata.__dict__["_message_id"] = mid
            self.pushed.append(msg)
            reply = self.handlers[node](msg)
            heapq.heappush(self._pending, (self.clock + self.job_times[node], self._counter,
                                           mid, reply))
            ids.append(mid)
        return ids

    def pull_messages(self, message_ids: Iterable[str]) -> Iterable[Message]:
        wanted = set(message_ids)
        if not self._pending or self._pending[0][2] not in wanted:
            return []
        finish, _, _, reply = heapq.heappop(self._pending)
        self.clock = finish
        return [reply]

    def send_and_receive(self, messages: Iterable[Message], *, timeout: float | None = None
                         ) -> Iterable[Message]:
        ids = set(self.push_messages(messages))
        out = []
        while ids:
            got = list(self.pull_messages(ids))
            if not got:
                break
            out.extend(got)
            ids -= {m.metadata.reply_to_message_id for m in got}
        return out
