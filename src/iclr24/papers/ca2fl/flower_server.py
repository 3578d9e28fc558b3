"""CA²FL on Flower (optional ``[flower]`` extra; import this module explicitly).

Flower's built-in strategies are round-synchronous and core Flower has no asynchronous strategy,
so CA²FL runs as a custom ServerApp main loop on the low-level ``Grid`` messaging (the kit's
:class:`~iclr24.kits.federated.flower.AsyncGridServer`): up to M_c nodes train at once, each
reply is fed to the same :class:`~iclr24.papers.ca2fl.server.CA2FL` object the simulator uses
(caches keyed by node id), and the freed node gets the current model. Clients are unchanged
(plain local SGD): :func:`sgd_client_app` wraps the kit's ``TorchClient``.

Limits (issue 38):
- Node count under ``flwr run``: with flwr 1.42 a managed simulation starts **2** SuperNodes
  unless told otherwise (``DEFAULT_SIMULATION_CONFIG.num_supernodes = 2``), so a
  :func:`ca2fl_server_app` asking for ``num_nodes=4`` waits ``node_timeout`` seconds and then
  raises TimeoutError (it would wait forever with an infinite timeout). Run it with
  ``flwr run . local --federation-config "num-supernodes=N"`` (N >= ``num_nodes``) or set it
  once with ``flwr federation simulation-config --num-supernodes N``; ``options.num-supernodes``
  in the SuperLink connection's table still works in 1.42 but is deprecated. The kit's
  in-process ``run_on_simulation_engine`` passes the node count itself, through
  ``flwr.simulation.run_simulation``, which flwr 1.42 marks deprecated (see its docstring).
- Buffers: the kit's flat vector, ``FlatCodec`` and ``TorchClient`` carry a model's
  floating-point buffers (BatchNorm running statistics) after its parameters, so CA²FL caches
  and calibrates those entries exactly as it does the parameters; integer buffers
  (``num_batches_tracked``) stay local to each node (see ``kits.federated.local_training``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from torch import nn

from iclr24.kits.federated import TorchClient, flatten_params
from iclr24.kits.federated.flower import (
    AsyncGridServer,
    FlatCodec,
    Message,
    client_index,
    fit_reply,
    wait_for_nodes,
)

from .server import CA2FL

__all__ = ["ca2fl_grid_server", "ca2fl_server_app", "sgd_client_app"]


def _check_model(model: object, name: str) -> nn.Module:
    """``model`` must be an nn.Module with parameters (its floating buffers travel too)."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"{name} must be a torch.nn.Module, got {type(model).__name__}")
    if next(model.parameters(), None) is None:
        raise ValueError(f"{name} has no parameters to federate")
    return model


def ca2fl_grid_server(grid: Any, model: nn.Module, *, buffer_size: int, concurrency: int,
                      server_lr: float = 1.0,
                      cache_dtype: Literal["float32", "float64", "int8"] | None = None,
                      seed: int = 0, train_config: dict[str, Any] | None = None,
                      num_nodes: int | None = None, node_timeout: float = 120.0,
                      poll_interval: float = 0.05, timeout: float = 3600.0) -> AsyncGridServer:
    """An AsyncGridServer running CA²FL from ``model``'s current state (parameters and
    floating-point buffers) on ``grid``.

    One cache per participating node, buffer M = ``buffer_size``. ``num_nodes``: wait (up to
    ``node_timeout`` s, then TimeoutError) until that many nodes have connected and use the
    first ``num_nodes`` in sorted order (N = num_nodes); None: the nodes connected now.
    """
    model = _check_model(model, "model")
    if num_nodes is None:
        nodes = sorted(int(n) for n in grid.get_node_ids())
        if not nodes:
            raise ValueError("no nodes are connected to the grid; pass num_nodes to wait for "
                             "them (in a Flower run nodes register after the ServerApp starts)")
    else:
        nodes = wait_for_nodes(grid, num_nodes, timeout=node_timeout)
    agg = CA2FL(flatten_params(model), len(nodes), buffer_size, server_lr, cache_dtype)
    return AsyncGridServer(grid, agg, FlatCodec.from_module(model), concurrency=concurrency,
                           train_config=train_config, node_ids=nodes, seed=seed,
                           poll_interval=poll_interval, timeout=timeout)


def ca2fl_server_app(model_fn: Callable[[], nn.Module], *, num_nodes: int, buffer_size: int,
                     concurrency: int, max_server_updates: int, server_lr: float = 1.0,
                     seed: int = 0, node_timeout: float = 120.0,
                     on_finish: Callable[[Any], None] | None = None):  # -> flwr ServerApp
    """A Flower ``ServerApp`` whose main loop runs CA²FL for ``max_server_updates`` updates.

    num_nodes: N, the clients CA²FL keeps caches for; the loop first waits for that many nodes
    to register (TimeoutError after ``node_timeout`` s). Under ``flwr run`` the federation must
    start at least ``num_nodes`` SuperNodes (flwr 1.42's default is 2; see the module
    docstring: ``--federation-config "num-supernodes=N"``). ``on_finish(history)`` receives
    the kit History (final state vector in ``final_params``).
    """
    from flwr.serverapp import ServerApp

    if isinstance(num_nodes, bool) or not isinstance(num_nodes, int) or num_nodes < 1:
        raise ValueError(f"num_nodes must be a positive int, got {num_nodes!r}")
    if not 1 <= concurrency <= num_nodes:
        raise ValueError(f"concurrency must be in [1, num_nodes={num_nodes}], got {concurrency}")
    app = ServerApp()

    @app.main()
    def main(grid: Any, context: Any) -> None:
        server = ca2fl_grid_server(grid, model_fn(), buffer_size=buffer_size,
                                   concurrency=concurrency, server_lr=server_lr, seed=seed,
                                   num_nodes=num_nodes, node_timeout=node_timeout)
        hist = server.run(max_server_updates=max_server_updates)
        if on_finish is not None:
            on_finish(hist)

    return app


def sgd_client_app(client_fn: Callable[[Any], TorchClient], *, seed: int = 0
                   ):  # -> flwr ClientApp
    """A Flower ``ClientApp`` doing plain local SGD (CA²FL's clients are unchanged).

    Under :class:`AsyncGridServer` each job's data order comes from the server's ``job-seed``;
    otherwise from ``seed``, the node's client index (partition id) and the round.
    """
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Any) -> Message:
        client = client_fn(context)
        model = _check_model(client.model, "client_fn(context).model")
        return fit_reply(client, FlatCodec.from_module(model), msg, seed=seed,
                         client_index=client_index(context))

    return app
