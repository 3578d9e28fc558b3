"""FedImpro behind Flower (optional ``[flower]`` extra; import this module explicitly).

- :class:`FedImproStrategy`: Flower's FedAvg (via the kit's ``SideStateFedAvg``) that ships the
  global feature bank as an extra ``ArrayRecord`` ("fedimpro-bank": ``mean``, ``std``) in
  ``configure_train`` and, in ``aggregate_train``, aggregates the clients' banks with
  :func:`aggregate_class_gaussians` (per-class weights from each node's uploaded class counts;
  nodes not in this round keep contributing the previous global bank, the official "all" mode).
- :func:`fedimpro_train_reply` / :func:`fedimpro_client_app`: the client side; runs
  :func:`fedimpro_local_train` (through :class:`FedImproClient`) and replies with the trained
  model ("arrays"), its bank plus ``class_counts`` ("fedimpro-bank") and ``num-examples``.

The math is the same transport-free code the in-process simulator runs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from iclr24.kits.federated import FitConfig, check_update
from iclr24.kits.federated.flower import (
    ArrayRecord,
    ConfigRecord,
    FlatCodec,
    Message,
    MetricRecord,
    RecordDict,
    SideStateFedAvg,
    arrayrecord_to_tensors,
    client_index,
    job_seed,
    tensors_to_arrayrecord,
)

from .feature_bank import ClassGaussianBank, aggregate_class_gaussians
from .local_update import FedImproClient

__all__ = ["BANK_KEY", "FedImproStrategy", "fedimpro_client_app", "fedimpro_train_reply"]

BANK_KEY = "fedimpro-bank"


class FedImproStrategy(SideStateFedAvg):
    """Flower FedAvg + FedImpro's shared class-conditional feature bank.

    num_classes, dim: the bank's C x D; sigma_max and seed set the initial bank (mu ~ U(0, 1),
    sigma = sigma_max). Other keyword arguments go to Flower's FedAvg.
    """

    side_key = BANK_KEY

    def __init__(self, num_classes: int, dim: int, sigma_max: float = 0.1, *, seed: int = 0,
                 **fedavg_kwargs: Any) -> None:
        super().__init__(**fedavg_kwargs)
        gen = torch.Generator().manual_seed(seed)
        self.bank = ClassGaussianBank(num_classes, dim, sigma_max, ema="official",
                                      generator=gen).state_dict()
        self.node_counts: dict[int, np.ndarray] = {}

    def side_state(self, server_round: int) -> ArrayRecord:
        return tensors_to_arrayrecord(self.bank)

    def aggregate_side(self, server_round: int, replies: list[Message]) -> None:
        states, counts, fresh = [], [], set()
        c, d = self.bank["mean"].shape
        for msg in replies:
            node = int(msg.metadata.src_node_id)
            if BANK_KEY not in msg.content.array_records:
                raise ValueError(f"reply from node {node} has no {BANK_KEY!r} ArrayRecord")
            rec = arrayrecord_to_tensors(msg.content[BANK_KEY])
            for key, shape in (("mean", (c, d)), ("std", (c, d)), ("class_counts", (c,))):
                if key not in rec or tuple(rec[key].shape) != shape:
                    got = tuple(rec[key].shape) if key in rec else "missing"
                    raise ValueError(f"reply from node {node}: {BANK_KEY}[{key!r}] must have "
                                     f"shape {shape}, got {got}")
            fresh.add(node)
            self.node_counts[node] = rec["class_counts"].numpy().astype(np.float64)
            states.append({"mean": rec["mean"].to(self.bank["mean"].dtype),
                           "std": rec["std"].to(self.bank["std"].dtype)})
            counts.append(self.node_counts[node])
        for node, cnt in sorted(self.node_counts.items()):
            if node not in fresh:  # not sampled this round: previous global statistics
                states.append(self.bank)
                counts.append(cnt)
        if states:
            self.bank = aggregate_class_gaussians(states, np.stack(counts))


def fedimpro_train_reply(client: FedImproClient, message: Message, *, seed: int = 0,
                         client_index: int | None = None) -> Message:
    """Handle one Flower train message with a :class:`FedImproClient`; returns the reply.

    The job seed is the kit's ``job_seed(seed, round, client_index)``: with ``client_index`` = k
    it equals the in-process ``simulate`` seed of client k, so a Flower run reproduces it.
    """
    content = message.content
    codec = FlatCodec.from_module(client.net)
    if "arrays" not in content.array_records:
        raise ValueError("train message carries no 'arrays' ArrayRecord")
    if BANK_KEY not in content.array_records:
        raise ValueError(f"train message carries no {BANK_KEY!r} ArrayRecord (use "
                         "FedImproStrategy on the server)")
    params = codec.decode(content["arrays"], who="train message")
    bank = arrayrecord_to_tensors(content[BANK_KEY])
    config = content.config_records.get("config", ConfigRecord())
    round_idx = int(config.get("server-round", 0))
    upd = client.fit(params, FitConfig(round_idx, job_seed(seed, round_idx, client_index),
                                       {"bank": bank}))
    delta = check_update(upd.delta, params, name="client delta")
    side = tensors_to_arrayrecord({**upd.extras["bank"],
                                   "class_counts": torch.as_tensor(upd.extras["class_counts"])})
    metrics = MetricRecord({"num-examples": int(upd.num_examples),
                            "train-loss": float(upd.metrics["loss"])})
    return Message(RecordDict({"arrays": codec.encode(params + delta), BANK_KEY: side,
                               "metrics": metrics}), reply_to=message)


def fedimpro_client_app(client_fn: Callable[[Any], FedImproClient], *, seed: int = 0
                        ):  # -> flwr ClientApp
    """A Flower ``ClientApp`` whose train handler runs FedImpro.

    client_fn(context) builds the node's :class:`FedImproClient` (its data partition, model);
    jobs are seeded from ``seed``, the node's client index (partition id) and the round.
    """
    from flwr.clientapp import ClientApp

    app = ClientApp()

    @app.train()
    def train(msg: Message, context: Any) -> Message:
        return fedimpro_train_reply(client_fn(context), msg, seed=seed,
                                    client_index=client_index(context))

    return app
