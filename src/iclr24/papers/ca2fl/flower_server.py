"""CA²FL on Flower (optional ``[flower]`` extra; import this module explicitly).

Flower's built-in strategies are round-synchronous and core Flower has no asynchronous strategy,
so CA²FL runs as a custom ServerApp main loop on the low-level ``Grid`` messaging (the kit's
:class:`~iclr24.kits.federated.flower.AsyncGridServer`): up to M_c nodes train at once, each
reply is fed to the same :class:`~iclr24.papers.ca2fl.server.CA2FL` object the simulator uses
(caches keyed by node id), and the freed node gets the current model. Clients are unchanged
(plain local SGD): :func:`sgd_client_app` wraps the kit's ``TorchClient``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from torch import nn

from iclr24.kits.federated import TorchClient, flatten_params
from iclr24.kits.federated.flower import AsyncGridServer, FlatCodec, Message, fit_reply

from .server import CA2FL

__all__ = ["ca2fl_grid_server", "ca2fl_server_app", "sgd_client_app"]


def ca2fl_grid_server(grid: Any, model: nn.Module, *, buffer_size: int, concurrency: int,
                      server_lr: float = 1.0,
                      cache_dtype: Literal["float32", "float64", "int8"] | None = None,
                      seed: int = 0, train_config: dict[str, Any] | None = None,
                      poll_interval: float = 0.05, timeout: float = 3600.0) -> AsyncGridServer:
    """An AsyncGridServer running CA²FL from ``model``'s current parameters on ``grid``.

    One cache per connected node (N = number of nodes), buffer M = ``buffer_size``.
    """
    nodes = sorted(int(n) for n in grid.get_node_ids())
    agg = CA2FL(flatten_params(model), len(nodes), buffer_size, server_lr, cache_dtype)
    return AsyncGridServer(grid, agg, FlatCodec.from_module(model), concurrency=concurrency,
                           train_config=train_config, node_ids=nodes, seed=seed,
                           poll_interval=poll_interval, timeout=timeout)


def ca2fl_server_app(model_fn: Callable[[], nn.Module], *, buffer_size: int, concurrency: int,
                     max_server_updates: int, server_lr: float = 1.0,
                     on_finish: Callable[[Any], None] | None = None):  # -> flwr ServerApp
    """A Flower ``ServerApp`` whose main loop runs CA²FL for ``max_server_updates`` updates.

    ``on_finish(history)`` receives the kit History (final parameters in ``final_params``).
    """
    from flwr.serverapp import ServerApp

    app = ServerApp()

    @app.main()
    def main(grid: Any, context: Any) -> None:
        server = ca2fl_grid_server(grid, model_fn(), buffer_size=buffer_size,
                                   concurrency=concurrency, server_lr=server_lr)
        hist = server.run(max_server_updates=max_server_updates)
        if on_finish is not None:
            on_finish(hist)

    return app


def sgd_client_app(client_fn: Callable[[Any], TorchClient]):  # -> flwr ClientApp
    """A Flower ``ClientApp`` doing plain local SGD (CA²FL's clients are unchanged)."""
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Any) -> Message:
        client = client_fn(context)
        return fit_reply(client, FlatCodec.from_module(client.model), msg,
                         seed=int(context.node_id))

    return app
