"""Training TGN with temporal batches, with or without PRES, and its link-prediction evaluation.

Protocol (as the official code and PyG's TGN example): the stream is split chronologically
70/15/15 (by event count); each epoch resets the memory and the neighbour loader and walks the
training events in order, ``batch_size`` events per optimiser step (the temporal batch b; never
shuffled). Per batch: one uniformly random destination per positive (from the range of
destination ids), embeddings from the memory after the pending messages ("memory update at
start"), BCE on positive vs negative logits, then the batch's events enter the memory and the
neighbour loader, the optimiser steps (Adam) and the memory is detached (truncated backprop).
With PRES the memory is :class:`~.pres_memory.PRESMemory` and the loss adds
beta * (1 - coh(s_prev, s_new)) over the nodes whose memory the pending messages update.

Evaluation continues the memory from the end of training: validation events, then test events,
in batches of ``config.eval_batch_size`` (200, the official default, the same for every training
b), each batch scored before it updates the memory. Negatives are one random destination per
positive from a generator with a fixed seed, so every method sees the same negatives. AP and AUC
are computed over all positives and negatives of the split at once (the official code averages
per-batch AP).

Out of reach here: the JODIE streams and TGB (downloaded at run time), the inductive (new-node)
split, and early stopping on validation AP (patience 5 in the official code); methods are compared
at equal epochs, as the spec asks.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import Tensor

from .coherence import COHERENCE_KINDS, coherence_loss
from .tgn_model import TGNConfig, TGNLinkModel

__all__ = ["SPLITS", "TGNTrainResult", "check_temporal_data", "evaluate_ap", "split_sizes",
           "train_tgn"]

SPLITS = ("train", "val", "test")
_VAL_FRACTION = _TEST_FRACTION = 0.15


def check_temporal_data(data, *, num_nodes: int | None = None) -> None:
    """Raise a clear error unless ``data`` is a TemporalData with 1-D long src/dst/t of equal
    length, 2-D finite float msg, non-decreasing timestamps, and (given ``num_nodes``) ids
    < num_nodes."""
    from torch_geometric.data import TemporalData

    if not isinstance(data, TemporalData):
        raise TypeError(f"data must be a torch_geometric TemporalData, got {type(data).__name__}")
    for key in ("src", "dst", "t", "msg"):
        if getattr(data, key, None) is None:
            raise ValueError(f"data needs a {key!r} attribute")
    n = data.src.numel()
    for key in ("src", "dst", "t"):
        v = getattr(data, key)
        if v.dtype != torch.long or v.dim() != 1 or v.numel() != n:
            raise ValueError(f"data.{key} must be a 1-D LongTensor of {n} events, got "
                             f"{v.dtype} of shape {tuple(v.shape)}")
    if data.msg.dim() != 2 or data.msg.shape[0] != n or not data.msg.is_floating_point():
        raise ValueError(f"data.msg must be a float (num_events, msg_dim) tensor, got "
                         f"{data.msg.dtype} of shape {tuple(data.msg.shape)}")
    if not bool(torch.isfinite(data.msg).all()):
        bad = int(torch.nonzero(~torch.isfinite(data.msg).all(dim=1))[0])
        raise ValueError(f"data.msg must be finite; event {bad} has a NaN or infinite feature")
    if n < 10:
        raise ValueError(f"data needs at least 10 events for a 70/15/15 split, got {n}")
    if bool((data.t[1:] < data.t[:-1]).any()):
        first = int(torch.nonzero(data.t[1:] < data.t[:-1])[0]) + 1
        raise ValueError(f"data.t must be sorted (non-decreasing); event {first} has t = "
                         f"{int(data.t[first])} < {int(data.t[first - 1])}. Sort the stream by "
                         "time first (temporal batches must be chronological)")
    if min(int(data.src.min()), int(data.dst.min())) < 0:
        raise ValueError("data.src and data.dst must be non-negative node ids")
    if num_nodes is not None:
        top = max(int(data.src.max()), int(data.dst.max()))
        if top >= num_nodes:
            raise ValueError(f"data holds node id {top} but the model's memory has {num_nodes} "
                             f"nodes (ids 0..{num_nodes - 1})")


def split_sizes(num_events: int) -> tuple[int, int]:
    """(end of train, end of validation) for the chronological 70/15/15 split."""
    n_test = round(_TEST_FRACTION * num_events)
    n_val = round(_VAL_FRACTION * num_events)
    return num_events - n_val - n_test, num_events - n_test


@dataclass
class TGNTrainResult:
    """A trained TGN and its per-epoch history.

    model: the :class:`~.tgn_model.TGNLinkModel`, in eval mode, memory as at the end of training.
    history: one dict per epoch: ``loss``, ``bce``, ``coherence`` (means over batches),
        ``seconds`` (wall) and ``cpu_seconds`` (process CPU) of the training pass, ``batches``,
        and ``gamma``.
    """

    model: TGNLinkModel
    history: list[dict] = field(default_factory=list)
    batch_size: int = 0
    train_end_state: dict = field(default_factory=dict, repr=False)
    dst_range: tuple[int, int] = (0, 0)

    @property
    def epoch_seconds(self) -> float:
        """Mean wall time of a training epoch."""
        return sum(h["seconds"] for h in self.history) / len(self.history)


def _snapshot(model: TGNLinkModel) -> dict:
    loader = model.neighbor_loader
    state = {key: value.clone() for key, value in model.memory.state_dict().items()
             if key.endswith(("memory", "last_update", "count", "mean", "m2"))}
    return {"memory": state, "neighbors": loader.neighbors.clone(), "e_id": loader.e_id.clone(),
            "cur_e_id": loader.cur_e_id}


def _restore(model: TGNLinkModel, snapshot: dict) -> None:
    model.memory.load_state_dict(snapshot["memory"], strict=False)
    base = model.memory.base if model.uses_pres else model.memory
    base._reset_message_store()
    loader = model.neighbor_loader
    loader.neighbors.copy_(snapshot["neighbors"])
    loader.e_id.copy_(snapshot["e_id"])
    loader.cur_e_id = snapshot["cur_e_id"]


def _check_int(value: object, name: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}, got {value!r}")
    return value


def train_tgn(data, batch_size: int = 200, epochs: int = 10, use_pres: bool = False,
              beta: float = 0.1, *, gamma: float = 0.9, learnable_gamma: bool = False,
              coherence: str = "cosine", detach_coherence: bool = False,
              store_fused: bool = False, config: TGNConfig | None = None, seed: int = 0,
              progress: Callable[[float, str], None] | None = None) -> TGNTrainResult:
    """Train TGN (optionally with PRES) on the first 70% of ``data`` with temporal batches.

    Args:
        data: ``TemporalData`` (src, dst, t sorted, msg), e.g. :func:`make_drifting_stream`.
        batch_size: events per temporal batch b.
        epochs: passes over the training events (memory and neighbour loader reset each).
        use_pres: wrap the memory in PRESMemory and add the coherence term.
        beta: weight of the coherence term (PRES only).
        gamma, learnable_gamma: PRESMemory's fusion weight.
        coherence: "cosine" or "inner" (see :func:`coherence_loss`).
        detach_coherence: detach the coherence term as the official code does (no gradient).
        store_fused: False (default, the official placement) fuses only the memory the
            embeddings read; True also stores the fused memory (this project's variant).
        config: model sizes and optimiser settings (default :class:`TGNConfig`()).
        seed: seeds the initialisation, dropout and the training negatives.
        progress: optional ``progress(fraction, message)`` callback.

    Returns a :class:`TGNTrainResult`; score it with :func:`evaluate_ap`.
    """
    check_temporal_data(data)
    batch_size = _check_int(batch_size, "batch_size")
    epochs = _check_int(epochs, "epochs")
    _check_int(seed, "seed", 0)
    if not isinstance(use_pres, bool):
        raise TypeError(f"use_pres must be a bool, got {use_pres!r}")
    if isinstance(beta, bool) or not isinstance(beta, (int, float)) \
            or not 0 <= beta < math.inf:
        raise ValueError(f"beta must be a finite number >= 0, got {beta!r}")
    if coherence not in COHERENCE_KINDS:
        raise ValueError(f"coherence must be one of {COHERENCE_KINDS}, got {coherence!r}")
    config = TGNConfig() if config is None else config
    if not isinstance(config, TGNConfig):
        raise TypeError(f"config must be a TGNConfig, got {type(config).__name__}")
    from torch_geometric.loader import TemporalDataLoader

    progress = progress or (lambda *args: None)
    device = data.src.device
    num_nodes = max(int(data.src.max()), int(data.dst.max())) + 1
    train_end, _ = split_sizes(data.num_events)
    train_data = data[:train_end]
    lo, hi = int(data.dst.min()), int(data.dst.max())

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        pres = {"gamma": gamma, "learnable_gamma": learnable_gamma,
                "store_fused": store_fused} if use_pres else None
        model = TGNLinkModel(num_nodes, data.msg.size(-1), config, pres=pres).to(device)
        optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
        negatives = torch.Generator().manual_seed(seed)
        bce_fn = torch.nn.BCEWithLogitsLoss()
        result = TGNTrainResult(model=model, batch_size=batch_size, dst_range=(lo, hi))
        for epoch in range(epochs):
            model.train()
            model.reset_state()
            sums = {"loss": 0.0, "bce": 0.0, "coherence": 0.0}
            batches = 0
            wall, cpu = time.perf_counter(), time.process_time()
            for batch in TemporalDataLoader(train_data, batch_size=batch_size):
                optimizer.zero_grad()
                src, dst = batch.src, batch.dst
                neg_dst = torch.randint(lo, hi + 1, (src.numel(),), generator=negatives)
                pos, neg, (prev, new) = model.score(src, dst, neg_dst.to(device), data.t,
                                                    data.msg, memory_change=use_pres)
                bce = bce_fn(pos, torch.ones_like(pos)) + bce_fn(neg, torch.zeros_like(neg))
                loss = bce
                if use_pres:
                    coh = coherence_loss(prev, new, coherence, detach=detach_coherence)
                    loss = bce + beta * coh  # L = L_BCE + beta (1 - coh(s_prev, s_new))
                    sums["coherence"] += float(coh.detach())
                model.observe(src, dst, batch.t, batch.msg)
                loss.backward()
                optimizer.step()
                model.memory.detach()
                sums["loss"] += float(loss.detach())
                sums["bce"] += float(bce.detach())
                batches += 1
            g = model.memory.gamma if use_pres else 0.0
            g = g.detach() if isinstance(g, torch.Tensor) else g
            result.history.append({
                "epoch": epoch, **{k: v / batches for k, v in sums.items()},
                "seconds": time.perf_counter() - wall, "cpu_seconds": time.process_time() - cpu,
                "batches": batches, "gamma": float(g)})
            progress((epoch + 1) / epochs, f"b = {batch_size}, epoch {epoch + 1}/{epochs}")
        with torch.no_grad():
            model.eval()  # flushes the pending messages into the memory (PRES-corrected)
        result.train_end_state = _snapshot(model)
    return result


@torch.no_grad()
def _run_events(model: TGNLinkModel, data, start: int, end: int, *, score: bool,
                generator: torch.Generator, dst_range: tuple[int, int]) -> tuple[Tensor, Tensor]:
    from torch_geometric.loader import TemporalDataLoader

    pos_all, neg_all = [], []
    lo, hi = dst_range
    for batch in TemporalDataLoader(data[start:end], batch_size=model.config.eval_batch_size):
        src, dst = batch.src, batch.dst
        if score:
            neg_dst = torch.randint(lo, hi + 1, (src.numel(),), generator=generator)
            pos, neg, _ = model.score(src, dst, neg_dst.to(src.device), data.t, data.msg)
            pos_all.append(pos)
            neg_all.append(neg)
        model.observe(src, dst, batch.t, batch.msg)
    if not score:
        return torch.empty(0), torch.empty(0)
    return torch.cat(pos_all), torch.cat(neg_all)


def evaluate_ap(result: TGNTrainResult, data, split: str = "test", *,
                negative_seed: int = 12345) -> dict[str, float]:
    """Transductive link prediction on ``split`` ("val" or "test") of ``data``: {"ap", "auc",
    "f1", "precision", "recall"} of the positives vs one fixed-seed random destination each.

    The memory restarts from its state at the end of training; "test" first replays the
    validation events (memory and neighbours only), as the test events follow them in time.
    ``data`` must be the stream the model was trained on.
    """
    from iclr24.kits.graphs import link_metrics

    if not isinstance(result, TGNTrainResult):
        raise TypeError(f"result must be the TGNTrainResult of train_tgn, got "
                        f"{type(result).__name__}")
    if split not in ("val", "test"):
        raise ValueError(f"split must be 'val' or 'test', got {split!r}")
    model = result.model
    check_temporal_data(data, num_nodes=model.num_nodes)
    train_end, val_end = split_sizes(data.num_events)
    model.eval()
    _restore(model, result.train_end_state)
    generator = torch.Generator().manual_seed(negative_seed)
    if split == "test":
        _run_events(model, data, train_end, val_end, score=False, generator=generator,
                    dst_range=result.dst_range)
        start, end = val_end, data.num_events
    else:
        start, end = train_end, val_end
    pos, neg = _run_events(model, data, start, end, score=True, generator=generator,
                           dst_range=result.dst_range)
    return link_metrics(pos, neg)
