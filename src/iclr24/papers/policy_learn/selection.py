"""Subgraph selection policies: Policy-Learn's learned sequential policy (Sec. 4, Alg. 1) and
the random and full-bag baselines.

Policy-Learn builds the bag one subgraph at a time. At step t = 1..T the selection network (a
DS-GNN, :class:`.DSGNN`) runs on the current bag B_{t-1} = {G, S_{v_1}, ..., S_{v_{t-1}}};

    z_v = mean_s h_{s,v} + mean_u mean_s h_{s,u}        (node + graph representation)
    l_v = MLP(z_v),  MLP = Linear(d, 2d) - ReLU - Linear(2d, 1)

masks nodes already selected (unless the graph has no more than T nodes) and padding with −∞,
samples with the straight-through Gumbel-softmax (k = ``num_marked`` = 1)

    y_soft = softmax((l + g) / tau),  g ~ Gumbel(0, 1)  (no noise at evaluation)
    y      = onehot(argmax y_soft) − stopgrad(y_soft) + y_soft,

and writes the vector y (not its arg-max index) into the marking channel of S_{v_t}, so that the
task loss back-propagates into the logits. After T steps the prediction network (another DS-GNN)
solves the task on B_T. During training a fraction ``drop_ratio`` of all nodes of the mini-batch
is also masked (exploration, as in the official code, across the batch rather than per graph).

Baselines with the same prediction-network interface: :class:`RandomPolicy` (T nodes uniformly
without replacement, as ESAN's random policy) and :class:`FullBag` (all n node-marked subgraphs).
All three take a PyG ``Batch`` of the original graphs and return ``(logits, selected)``.

Randomness (Gumbel noise, node dropping, random roots) comes from a ``torch.Generator`` seeded at
construction, so a run is reproducible; the noise is drawn on the CPU and moved to the inputs'
device.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from .bags import graph_sizes, node_marked_bag
from .networks import DSGNN

__all__ = ["FullBag", "PolicyLearn", "RandomPolicy", "straight_through_gumbel"]


def _check_tau(tau: Any) -> float:
    if isinstance(tau, bool) or not isinstance(tau, (int, float)) or not tau > 0:
        raise ValueError(f"tau must be a number > 0 (the Gumbel-softmax temperature), got {tau!r}")
    return float(tau)


def _check_steps(T: Any) -> int:
    if isinstance(T, bool) or not isinstance(T, int) or T < 1:
        raise ValueError(f"T must be a positive int (number of selected subgraphs), got {T!r}")
    return T


def straight_through_gumbel(logits: Tensor, allowed: Tensor, *, tau: float = 1.0,
                            noise: bool = True, generator: torch.Generator | None = None
                            ) -> tuple[Tensor, Tensor]:
    """Masked straight-through Gumbel-softmax over the last axis (one sample per row, k = 1).

    Args:
        logits: (B, n) unnormalised selection scores.
        allowed: (B, n) bool, False entries get −∞ *before* the noise is added.
        tau: temperature > 0.
        noise: add Gumbel(0, 1) noise (training); False gives the plain arg-max (evaluation).
        generator: CPU generator for the noise.

    Returns:
        y (B, n): one-hot in value, gradient of softmax((l + g)/tau) (straight-through);
        index (B,): the selected column per row.
    """
    tau = _check_tau(tau)
    if logits.dim() != 2 or allowed.shape != logits.shape or allowed.dtype != torch.bool:
        raise ValueError(f"logits (B, n) and a bool mask allowed of the same shape expected, got "
                         f"{tuple(logits.shape)} and {tuple(allowed.shape)} {allowed.dtype}")
    empty = ~allowed.any(-1)
    if bool(empty.any()):
        # a fully masked row would give softmax(−∞, ..., −∞) = NaN
        rows = torch.nonzero(empty).flatten().tolist()
        raise ValueError(f"allowed: every node of row(s) {rows} is masked; at least one "
                         "selectable node per graph is needed")
    masked = logits.masked_fill(~allowed, float("-inf"))
    if noise:
        # g = −log(E), E ~ Exp(1), is Gumbel(0, 1)
        e = torch.empty(logits.shape, dtype=logits.dtype).exponential_(generator=generator)
        masked = masked - e.log().to(logits.device)
    y_soft = torch.softmax(masked / tau, dim=-1)  # softmax((l + g) / tau)
    index = y_soft.argmax(-1)
    y_hard = torch.zeros_like(y_soft).scatter_(-1, index.unsqueeze(-1), 1.0)
    return y_hard - y_soft.detach() + y_soft, index  # straight-through estimator


def _dense_valid(counts: Tensor, width: int) -> Tensor:
    """(B, width) bool: column i exists in graph b."""
    return torch.arange(width, device=counts.device)[None, :] < counts[:, None]


class PolicyLearn(nn.Module):
    """Policy-Learn: a selection DS-GNN picks T node-marked subgraphs one at a time, a prediction
    DS-GNN classifies/regresses the bag {G, S_{v_1}, ..., S_{v_T}}.

    Args:
        selection: a :class:`DSGNN` without head (``out_dim=None``); official: 6 layers, width
            64, residual, BatchNorm without running statistics.
        prediction: a :class:`DSGNN` with a head (its ``out_dim`` is the task's width).
        T: number of selected subgraphs (official ``num_subgraphs`` = T + 1).
        tau: Gumbel-softmax temperature > 0 (official grid 0.33, 0.66, 1, 2).
        drop_ratio: fraction of the batch's nodes masked at each training step (grid 0, 0.3,
            0.5).
        seed: seeds the generator of the Gumbel noise and of node dropping.

    ``forward(batch)`` takes a PyG ``Batch`` of B original graphs with ``x`` (N, in_dim) and
    returns ``(logits (B, out_dim), selected (B, T))``, the selected nodes as indices local to
    each graph. ``last_logits`` keeps the masked selection logits (B, max_nodes) of the last
    step (before noise) for inspection.
    """

    def __init__(self, selection: DSGNN, prediction: DSGNN, T: int = 2, tau: float = 1.0,
                 drop_ratio: float = 0.0, *, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(selection, DSGNN) or not isinstance(prediction, DSGNN):
            raise TypeError("selection and prediction must be DSGNN instances")
        if selection.head is not None:
            raise ValueError("selection must be a DSGNN without head (out_dim=None)")
        if prediction.head is None:
            raise ValueError("prediction must be a DSGNN with a head (out_dim set)")
        if selection.in_dim != prediction.in_dim:
            raise ValueError(f"selection.in_dim ({selection.in_dim}) and prediction.in_dim "
                             f"({prediction.in_dim}) must match")
        if isinstance(drop_ratio, bool) or not isinstance(drop_ratio, (int, float)) \
                or not 0.0 <= drop_ratio < 1.0:
            raise ValueError(f"drop_ratio must be in [0, 1), got {drop_ratio!r}")
        self.selection, self.prediction = selection, prediction
        self.T, self.tau, self.drop_ratio = _check_steps(T), _check_tau(tau), float(drop_ratio)
        d = selection.hidden
        self.node_selector = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, 1))
        self.generator = torch.Generator().manual_seed(int(seed))
        self.last_logits: Tensor | None = None

    def selection_logits(self, batch: Any, marks: Tensor) -> Tensor:
        """l_v for every node of the batch given the marking vectors chosen so far,
        ``marks`` (B, t, max_nodes): (N,)."""
        from torch_geometric.nn import global_mean_pool

        bag = node_marked_bag(batch, marks)
        node = self.selection.node_embeddings(bag, batch.x.size(0))   # mean_s h_{s,v}
        owner = _node_graph(batch)
        graph = global_mean_pool(node, owner, size=bag.num_parent_graphs)
        return self.node_selector(node + graph[owner]).squeeze(-1)    # MLP(z_v + z_G)

    def forward(self, batch: Any) -> tuple[Tensor, Tensor]:
        from torch_geometric.utils import to_dense_batch

        counts, _ = graph_sizes(batch)
        owner = _node_graph(batch)
        width = int(counts.max())
        num_graphs = counts.numel()
        valid = _dense_valid(counts, width)
        reselect = counts <= self.T  # official: re-selection allowed if n <= T
        marks = batch.x.new_zeros(num_graphs, 0, width)
        taken = torch.zeros_like(valid)
        selected = []
        for _ in range(self.T):
            logits = self.selection_logits(batch, marks)
            dense, _ = to_dense_batch(logits, owner, fill_value=0.0, max_num_nodes=width,
                                      batch_size=num_graphs)
            allowed = valid & ~(taken & ~reselect[:, None])
            if self.training and self.drop_ratio > 0:
                # drop_ratio of all nodes of the mini-batch (official: across the batch)
                num_drop = int(self.drop_ratio * logits.numel())
                perm = torch.randperm(logits.numel(), generator=self.generator)[:num_drop]
                keep = torch.ones(logits.numel(), dtype=torch.bool)
                keep[perm] = False
                kept, _ = to_dense_batch(keep.to(valid.device), owner, fill_value=False,
                                         max_num_nodes=width, batch_size=num_graphs)
                allowed = allowed & kept
            self.last_logits = dense.detach().masked_fill(~allowed, float("-inf"))
            y, index = straight_through_gumbel(dense, allowed, tau=self.tau,
                                               noise=self.training, generator=self.generator)
            marks = torch.cat([marks, y.unsqueeze(1).to(marks.dtype)], dim=1)
            taken = taken.scatter(1, index.unsqueeze(1), True)
            selected.append(index)
        logits = self.prediction(node_marked_bag(batch, marks))
        return logits, torch.stack(selected, dim=1)


def _node_graph(batch: Any) -> Tensor:
    b = getattr(batch, "batch", None)
    return b if b is not None else batch.x.new_zeros(batch.x.size(0), dtype=torch.long)


class RandomPolicy(nn.Module):
    """Uniform random selection of T node-marked subgraphs (ESAN's random policy; official
    ``RandomSelection``): T distinct nodes per graph (with replacement when n < T), drawn anew at
    every forward, in training and evaluation alike. ``forward(batch) -> (logits, selected)``."""

    def __init__(self, prediction: DSGNN, T: int = 2, *, seed: int = 0) -> None:
        super().__init__()
        if not isinstance(prediction, DSGNN) or prediction.head is None:
            raise TypeError("prediction must be a DSGNN with a head (out_dim set)")
        self.prediction, self.T = prediction, _check_steps(T)
        self.generator = torch.Generator().manual_seed(int(seed))

    def forward(self, batch: Any) -> tuple[Tensor, Tensor]:
        counts, _ = graph_sizes(batch)
        width = int(counts.max())
        valid = _dense_valid(counts, width).cpu()
        keys = torch.rand(valid.shape, generator=self.generator).masked_fill(~valid, -1.0)
        k = min(self.T, width)
        roots = keys.topk(k, dim=1).indices  # uniform T-subset of the valid nodes
        if k < self.T:
            roots = torch.cat([roots, roots.new_zeros(roots.size(0), self.T - k)], dim=1)
        small = counts.cpu() < self.T
        if bool(small.any()):
            # fewer nodes than T: sample with replacement
            u = torch.rand(int(small.sum()), self.T, generator=self.generator)
            roots[small] = (u * counts.cpu()[small, None]).long()
        roots = roots.to(batch.x.device)
        return self.prediction(node_marked_bag(batch, roots)), roots


class FullBag(nn.Module):
    """The full node-marking bag: G and all n marked subgraphs S_v (official ``AllSelection``).
    ``forward(batch) -> (logits, selected)`` with ``selected`` (B, max_nodes), −1 padding."""

    def __init__(self, prediction: DSGNN) -> None:
        super().__init__()
        if not isinstance(prediction, DSGNN) or prediction.head is None:
            raise TypeError("prediction must be a DSGNN with a head (out_dim set)")
        self.prediction = prediction

    def forward(self, batch: Any) -> tuple[Tensor, Tensor]:
        counts, _ = graph_sizes(batch)
        width = int(counts.max())
        roots = torch.arange(width, device=batch.x.device).repeat(counts.numel(), 1)
        roots = roots.masked_fill(~_dense_valid(counts, width), -1)
        return self.prediction(node_marked_bag(batch, roots)), roots
