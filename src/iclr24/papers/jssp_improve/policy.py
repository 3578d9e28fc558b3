"""The L2S policy network (Sec. 4.2, official ``model/actor.Actor`` with ``embedding_type=
"gin+dghan"``).

- Topology module (GIN): ``gin_layers`` ``GINConv`` layers (MLP Linear-BatchNorm-ReLU-Linear,
  mean aggregation, eps = 0 fixed) on all arcs plus self-loops; node embedding = sum of the layer
  outputs, graph embedding = sum over layers of the mean-pooled outputs.
- Context module (DGHAN): ``gat_layers`` layers, each the mean of two ``GATConv`` + ELU (one over
  job arcs, one over machine arcs, both with self-loops, dropout on the input); heads concatenated
  except in the last layer (1 head); graph embedding = mean over nodes.
- Node embedding [h_GIN, h_GAT] (2 hidden) concatenated with the graph embedding [g_GIN, g_GAT]
  (2 hidden) -> ``policy_layers`` blocks Linear-Tanh-Linear -> z_v in R^hidden.
- Move score of the ordered pair (u, v): z_u^T z_v; softmax over the N5 pairs of the graph only
  (the official code fills the n_nodes^2 matrix and masks the rest to -inf, which gives the same
  distribution; scoring only the N5 pairs keeps memory linear in the instance size).

Defaults follow the official training script (hidden 128, 4 + 4 layers, 4 policy blocks, 1 head,
dropout 0); the class in the official code defaults to heads 4 and dropout 0.6.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn
from torch.nn import functional as F

__all__ = ["L2SPolicy"]


def _positive_int(name: str, v) -> int:
    if not isinstance(v, int) or isinstance(v, bool) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return v


class _DGHANLayer(nn.Module):
    def __init__(self, d_in: int, d_out: int, heads: int, concat: bool, dropout: float) -> None:
        super().__init__()
        from torch_geometric.nn import GATConv

        self.dropout = dropout
        self.job = GATConv(d_in, d_out, heads=heads, concat=concat, dropout=dropout)
        self.mch = GATConv(d_in, d_out, heads=heads, concat=concat, dropout=dropout)

    def forward(self, h: Tensor, edge_job: Tensor, edge_mch: Tensor) -> Tensor:
        h = F.dropout(h, p=self.dropout, training=self.training)
        return 0.5 * (F.elu(self.job(h, edge_job)) + F.elu(self.mch(h, edge_mch)))


class L2SPolicy(nn.Module):
    """Move-selection policy pi(a | s) over N5 pairs. Input: a schedule batch with ``x`` (N, 3),
    ``edge_index_job``, ``edge_index_mch``, ``batch`` (N,), ``ptr`` (G+1,), as
    :class:`ImprovementEnv` builds it."""

    def __init__(self, hidden: int = 128, gin_layers: int = 4, gat_layers: int = 4,
                 heads: int = 1, policy_layers: int = 4, dropout: float = 0.0,
                 in_dim: int = 3) -> None:
        super().__init__()
        from torch_geometric.nn import GINConv

        for name, v in (("hidden", hidden), ("gin_layers", gin_layers),
                        ("gat_layers", gat_layers), ("heads", heads),
                        ("policy_layers", policy_layers), ("in_dim", in_dim)):
            _positive_int(name, v)
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.hidden = hidden
        self.gin = nn.ModuleList(
            GINConv(nn.Sequential(nn.Linear(in_dim if i == 0 else hidden, hidden),
                                  nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, hidden)),
                    eps=0.0, train_eps=False, aggr="mean")
            for i in range(gin_layers))
        gat = []
        d = in_dim
        for i in range(gat_layers):
            last = i == gat_layers - 1
            gat.append(_DGHANLayer(d, hidden, 1 if last else heads, not last, dropout))
            d = hidden * heads
        self.gat = nn.ModuleList(gat)
        self.head = nn.ModuleList(
            nn.Sequential(nn.Linear(4 * hidden if i == 0 else hidden, hidden), nn.Tanh(),
                          nn.Linear(hidden, hidden))
            for i in range(policy_layers))

    @classmethod
    def from_official(cls, path, **policy_kwargs) -> L2SPolicy:
        """The policy with the weights of an official L2S checkpoint (``saved_model/*.pth`` of
        zcaicaros/L2S, a local file); see :func:`.official_weights.from_official`."""
        from .official_weights import from_official

        return from_official(path, **policy_kwargs)

    def embed(self, batch) -> Tensor:
        """z: (N, hidden) node vectors whose inner products score the moves."""
        from torch_geometric.nn import global_mean_pool
        from torch_geometric.utils import add_self_loops

        x, b = batch.x, batch.batch
        n = x.shape[0]
        edge_all = add_self_loops(torch.cat([batch.edge_index_job, batch.edge_index_mch], 1),
                                  num_nodes=n)[0]
        h, node_gin, graph_gin = x, 0, 0
        for conv in self.gin:
            h = conv(h, edge_all)
            node_gin = node_gin + h  # node embedding: sum over layers
            graph_gin = graph_gin + global_mean_pool(h, b)  # graph: sum of layer means
        edge_job = add_self_loops(batch.edge_index_job, num_nodes=n)[0]
        edge_mch = add_self_loops(batch.edge_index_mch, num_nodes=n)[0]
        h = x
        for layer in self.gat:
            h = layer(h, edge_job, edge_mch)
        graph_gat = global_mean_pool(h, b)
        z = torch.cat([node_gin, h, graph_gin[b], graph_gat[b]], dim=1)
        for block in self.head:
            z = block(z)
        return z

    def forward(self, batch, moves: Sequence[Sequence[tuple[int, int]]]) -> list[Tensor]:
        """Log-probabilities of the moves: one (len(moves[g]),) tensor per graph g (node ids local
        to graph g; empty where g has no move)."""
        ptr = getattr(batch, "ptr", None)
        if ptr is None or len(moves) != ptr.numel() - 1:
            raise ValueError("moves must hold one list of (u, v) pairs per graph of the batch")
        z = self.embed(batch)
        flat, counts = [], []
        for g, ms in enumerate(moves):
            off = int(ptr[g])
            flat.extend((off + int(u), off + int(v)) for u, v in ms)
            counts.append(len(ms))
        if not flat:
            return [z.new_zeros(0) for _ in moves]
        pairs = torch.tensor(flat, device=z.device)
        scores = (z[pairs[:, 0]] * z[pairs[:, 1]]).sum(-1)  # score(u, v) = z_u^T z_v
        out = []
        for s in torch.split(scores, counts):
            out.append(torch.log_softmax(s, 0) if s.numel() else s)
        return out

    def act(self, batch, moves: Sequence[Sequence[tuple[int, int]]], *,
            generator: torch.Generator | None = None, greedy: bool = False
            ) -> tuple[list[tuple[int, int] | None], Tensor]:
        """Sample (or, with ``greedy``, arg-max) one move per graph. Returns the moves (``None``
        where a graph has none) and their log-probabilities (G,) (0 where no move)."""
        logps = self.forward(batch, moves)
        actions, chosen = [], []
        for ms, lp in zip(moves, logps):
            if not ms:
                actions.append(None)
                chosen.append(lp.new_zeros(()))
                continue
            if greedy:
                i = int(lp.argmax())
            else:
                i = int(torch.multinomial(lp.detach().exp(), 1, generator=generator))
            actions.append(tuple(ms[i]))
            chosen.append(lp[i])
        return actions, torch.stack(chosen)
