"""Baseline graph classifiers built from PyG layers, shared by every graph paper's baseline arms.

``GraphClassifier(conv, ...)``: ``num_layers`` message-passing layers (``GINConv`` with a 2-layer
MLP, ``GCNConv`` with self loops and symmetric normalisation, or ``ChebConv`` with K =
``cheb_k``), each followed by optional BatchNorm, ReLU and dropout; then a global sum or mean
pool and a linear head. The same class with the same arguments is the GIN / GCN / ChebNet arm
in policy_learn, rqgnn and locality_rewiring, so their baselines are identical.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["GraphClassifier", "pool_graphs"]

_CONVS = ("gin", "gcn", "cheb")
_POOLS = ("sum", "mean")


def pool_graphs(h: torch.Tensor, data, pool: str = "sum") -> torch.Tensor:
    """Node states (N, d) -> one row per graph (B, d) by PyG's global sum or mean pooling over
    ``data.batch`` (a single graph when absent; empty trailing graphs kept via ``num_graphs``)."""
    from torch_geometric.nn import global_add_pool, global_mean_pool

    if pool not in _POOLS:
        raise ValueError(f"pool must be one of {_POOLS}; got {pool!r}")
    batch = getattr(data, "batch", None)
    if batch is None:
        batch = torch.zeros(h.shape[0], dtype=torch.long, device=h.device)
    size = getattr(data, "num_graphs", None)
    return (global_add_pool if pool == "sum" else global_mean_pool)(h, batch, size)


class GraphClassifier(nn.Module):
    """Message passing -> global pooling -> linear head: logits (B, out_dim) for a PyG Batch."""

    def __init__(self, conv: str, in_dim: int, hidden: int, out_dim: int, *, num_layers: int = 3,
                 pool: str = "sum", cheb_k: int = 3, dropout: float = 0.0,
                 batch_norm: bool = False) -> None:
        super().__init__()
        from torch_geometric.nn import ChebConv, GCNConv, GINConv

        if conv not in _CONVS:
            raise ValueError(f"conv must be one of {_CONVS}; got {conv!r}")
        if pool not in _POOLS:
            raise ValueError(f"pool must be one of {_POOLS}; got {pool!r}")
        for name, value in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim),
                            ("num_layers", num_layers), ("cheb_k", cheb_k)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int; got {value!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1); got {dropout!r}")
        self.conv, self.pool, self.dropout = conv, pool, float(dropout)
        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for layer in range(num_layers):
            d_in = in_dim if layer == 0 else hidden
            if conv == "gin":
                mlp = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden))
                self.convs.append(GINConv(mlp, train_eps=False))
            elif conv == "gcn":
                self.convs.append(GCNConv(d_in, hidden))
            else:
                self.convs.append(ChebConv(d_in, hidden, K=cheb_k, normalization="sym"))
            self.norms.append(nn.BatchNorm1d(hidden) if batch_norm else nn.Identity())
        self.head = nn.Linear(hidden, out_dim)

    def node_embeddings(self, data) -> torch.Tensor:
        """(N, hidden) node states after the last message-passing layer."""
        h = data.x
        if h is None:
            raise ValueError("data.x is None; graph classifiers need node features")
        for conv, norm in zip(self.convs, self.norms):
            h = nn.functional.relu(norm(conv(h, data.edge_index)))
            h = nn.functional.dropout(h, p=self.dropout, training=self.training)
        return h

    def forward(self, data) -> torch.Tensor:
        return self.head(pool_graphs(self.node_embeddings(data), data, self.pool))
