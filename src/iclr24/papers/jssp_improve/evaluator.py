"""Batched exact schedule evaluation by max-plus message passing (L2S, Sec. 4.3 "message-passing
evaluator"; official ``env/message_passing_evl.Evaluator``).

On the disjunctive graph of a complete schedule (a DAG; node weights = processing times p):

    est(S) = 0,  est(v) = max_{u in pred(v)} est(u) + p(u),   C = est(T)          (forward pass)
    lst(T) = C,  lst(v) = min_{w in succ(v)} lst(w) - p(v)                       (backward pass)

Both are computed with one ``MessagePassing(aggr="max")`` layer iterated over the whole batch (a
disjoint union of schedule graphs): the forward pass sends est(u) + p(u) along arcs; the backward
pass uses ``flow="target_to_source"`` on negated values, -lst(v) = max_w (-lst(w)) + p(v). A node
is *resolved* once all its predecessors (successors, backwards) are; an unresolved flag travels
with the values in the same max-aggregation, and the sweep stops when every node is resolved: at
most |V| sweeps, in practice the number of arcs on the longest path. A node whose flag never
clears lies on a cycle, i.e. the machine orders are infeasible, and raises ``ValueError``.
Values are float64 so integer makespans are exact.
"""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.nn import MessagePassing

__all__ = ["MaxPlusPass", "batched_times"]


class MaxPlusPass(MessagePassing):
    """out[v] = max over arcs (u -> v) of x[u] (``flow="source_to_target"``) or over arcs
    (v -> w) of x[w] (``flow="target_to_source"``); 0 where v has no such arc."""

    def __init__(self, flow: str = "source_to_target") -> None:
        super().__init__(aggr="max", flow=flow)

    def forward(self, x: Tensor, edge_index: Tensor) -> Tensor:
        return self.propagate(edge_index, x=x, size=(x.shape[0], x.shape[0]))

    def message(self, x_j: Tensor) -> Tensor:
        return x_j


_FORWARD = MaxPlusPass("source_to_target")
_BACKWARD = MaxPlusPass("target_to_source")


def _graph_ends(batch, n_nodes: int, device) -> tuple[Tensor, Tensor]:
    ptr = getattr(batch, "ptr", None)
    if ptr is None:
        return (torch.zeros(1, dtype=torch.long, device=device),
                torch.full((1,), n_nodes - 1, dtype=torch.long, device=device))
    ptr = ptr.to(device)
    return ptr[:-1], ptr[1:] - 1


def batched_times(batch) -> tuple[Tensor, Tensor, Tensor]:
    """Earliest and latest start times and makespans of a batch of schedule graphs.

    batch: a ``torch_geometric`` ``Data``/``Batch`` (e.g. from :meth:`Schedule.to_pyg` or
    :func:`schedule_batch`) with ``dur`` (N,) node processing times, ``edge_index`` (2, E) all
    arcs, and ``ptr`` (G+1,) graph offsets when it holds several graphs; in each graph the first
    node is the source S and the last the sink T. Returns est (N,), lst (N,) (float64) and
    makespan (G,). Raises ``ValueError`` for a NaN, infinite or negative ``batch.dur`` (a NaN
    would otherwise vanish in the max-aggregation or propagate to every successor), for node ids
    outside the batch in ``batch.edge_index``, and for a cyclic (infeasible) graph.
    """
    dur = getattr(batch, "dur", None)
    edge_index = getattr(batch, "edge_index", None)
    if not isinstance(dur, Tensor) or dur.ndim != 1:
        raise TypeError("batch.dur must be a 1-D tensor of node processing times")
    if not isinstance(edge_index, Tensor) or edge_index.ndim != 2 or edge_index.shape[0] != 2:
        raise TypeError("batch.edge_index must be a (2, E) integer tensor")
    if dur.is_floating_point() and not bool(torch.isfinite(dur).all()):
        bad = int((~torch.isfinite(dur)).nonzero()[0, 0])
        raise ValueError(f"batch.dur must hold finite processing times; batch.dur[{bad}] = "
                         f"{float(dur[bad])}")
    if bool((dur < 0).any()):
        bad = int((dur < 0).nonzero()[0, 0])
        raise ValueError(f"batch.dur must hold non-negative processing times; batch.dur[{bad}] "
                         f"= {dur[bad].item()}")
    n = dur.shape[0]
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"batch.edge_index must hold node ids in [0, {n}) (batch.dur has {n} "
                         f"nodes), got ids in [{int(edge_index.min())}, {int(edge_index.max())}]")
    device = dur.device
    p = dur.to(torch.float64).unsqueeze(1)
    source, sink = _graph_ends(batch, n, device)

    # forward: column 0 = est(u) + p(u) messages, column 1 = "some predecessor unresolved"
    state = torch.zeros(n, 2, dtype=torch.float64, device=device)
    state[:, 1] = 1.0
    state[source, 1] = 0.0
    for _ in range(n + 1):
        if not bool(state[:, 1].any()):
            break
        send = torch.cat([state[:, :1] + p, state[:, 1:]], dim=1)
        state = _FORWARD(send, edge_index)  # est(v) = max_u est(u) + p(u)
    if bool(state[:, 1].any()):
        raise ValueError("the schedule graph has a cycle: the machine orders are infeasible")
    est = state[:, 0].clone()
    makespan = est[sink]

    # backward on negated values: -lst(v) = max_w (-lst(w)) + p(v), lst(T) = C
    back = torch.zeros(n, 2, dtype=torch.float64, device=device)
    back[:, 1] = 1.0
    back[sink, 0] = -makespan
    back[sink, 1] = 0.0
    for _ in range(n + 1):
        if not bool(back[:, 1].any()):
            break
        back = _BACKWARD(back, edge_index)
        back[:, :1] += p
        back[sink, 0] = -makespan
    if bool(back[:, 1].any()):
        raise ValueError("the schedule graph has a cycle: the machine orders are infeasible")
    lst = -back[:, 0]
    return est, lst, makespan
