"""The GNN over LASER's snapshots (paper Sec. 4): each snapshot is its own relation.

``mode="relational"`` (default) is the relational update the paper describes in Section 4
(snapshots as relation types of a multi-relational MPNN), every layer a sum of one
convolution per snapshot with its own weights,

    h^{t+1} = ReLU( BN( sum_{l=0}^{L} Conv_l^{(t)}(h^t, E_l) ) ),

the multi-relational (R-GCN-like) reading the paper gives of LASER; the snapshots G_0 = G,
G_1, ..., G_L are the relations.

``mode="official"`` is what the released code (``dynamic_gnn`` / ``DynamicGNNStackStage``)
runs: every layer but the last is one convolution on the union of all edges (original and
added, snapshot ids ignored); only the last layer is relational, as above.

``progressive=True`` lets layer t (0-based) see the snapshots l <= t only, so snapshot l's
edges enter from layer l on (the "sequential rewiring" view of the snapshots as a time
series); layers past L see all of them.

Snapshot ids only select which convolution an edge feeds; they are never passed to a
convolution as edge weights (the official code keeps them in ``edge_weights``, and a GCNConv
fed with them would scale messages by 1, 2, 3, ...). Defaults follow the official TUDataset
configs: GCN, 4 layers, BatchNorm, ReLU, no dropout, mean pooling, a linear head.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

__all__ = ["SnapshotGNN"]

_CONVS = ("gcn", "gin")
_MODES = ("relational", "official")
_POOLS = ("mean", "sum")


def _make_conv(kind: str, d_in: int, d_out: int) -> nn.Module:
    from torch_geometric.nn import GCNConv, GINConv

    if kind == "gcn":
        return GCNConv(d_in, d_out)
    return GINConv(nn.Sequential(nn.Linear(d_in, d_out), nn.ReLU(), nn.Linear(d_out, d_out)))


class SnapshotGNN(nn.Module):
    """Relational message passing over snapshots -> global pooling -> linear head.

    Args:
        in_dim, hidden, out_dim: feature sizes.
        num_layers: message-passing layers.
        num_snapshots: relations, L + 1 (= ``LaserTransform.max_distance``); edge ids
            0..num_snapshots-1 are accepted.
        conv: ``"gcn"`` (PyG GCNConv, self loops, symmetric normalisation per snapshot) or
            ``"gin"``.
        mode: ``"relational"`` (paper) or ``"official"`` (released code).
        progressive: snapshot l used only from layer l on.
        pool: ``"mean"`` or ``"sum"`` graph pooling.

    ``forward(data)``: logits (B, out_dim) for a PyG Batch with ``x`` (N, in_dim),
    ``edge_index`` (2, E) and ``edge_snapshot`` (E,) (missing = all edges original).
    ``node_embeddings(data)``: (N, hidden) after the last layer; ``head`` maps them to logits.
    """

    def __init__(self, in_dim: int, hidden: int, out_dim: int, *, num_layers: int = 4,
                 num_snapshots: int = 3, conv: str = "gcn", mode: str = "relational",
                 progressive: bool = False, pool: str = "mean", batch_norm: bool = True,
                 dropout: float = 0.0) -> None:
        super().__init__()
        for name, value in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim),
                            ("num_layers", num_layers), ("num_snapshots", num_snapshots)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int; got {value!r}")
        for name, value, options in (("conv", conv, _CONVS), ("mode", mode, _MODES),
                                     ("pool", pool, _POOLS)):
            if value not in options:
                raise ValueError(f"{name} must be one of {options}; got {value!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1); got {dropout!r}")
        self.num_snapshots, self.mode, self.progressive = num_snapshots, mode, bool(progressive)
        self.pool, self.dropout = pool, float(dropout)
        self.layers = nn.ModuleList()
        self.norms = nn.ModuleList()
        for t in range(num_layers):
            d_in = in_dim if t == 0 else hidden
            relational = mode == "relational" or t == num_layers - 1
            width = num_snapshots if relational else 1
            self.layers.append(nn.ModuleList(_make_conv(conv, d_in, hidden) for _ in range(width)))
            self.norms.append(nn.BatchNorm1d(hidden) if batch_norm else nn.Identity())
        self.head = nn.Linear(hidden, out_dim)

    def _snapshots(self, data: Any) -> torch.Tensor:
        ei = data.edge_index
        snap = getattr(data, "edge_snapshot", None)
        if snap is None:
            return torch.zeros(ei.shape[1], dtype=torch.long, device=ei.device)
        if snap.shape != (ei.shape[1],):
            raise ValueError(f"edge_snapshot must have shape (E,) = ({ei.shape[1]},); got "
                             f"{tuple(snap.shape)}")
        if snap.numel() and (int(snap.min()) < 0 or int(snap.max()) >= self.num_snapshots):
            raise ValueError(f"edge_snapshot ids must lie in [0, num_snapshots = "
                             f"{self.num_snapshots}); got range [{int(snap.min())}, "
                             f"{int(snap.max())}]")
        return snap.long()

    def node_embeddings(self, data: Any) -> torch.Tensor:
        """(N, hidden) node states after the last message-passing layer."""
        h = data.x
        if h is None:
            raise ValueError("data.x is None; SnapshotGNN needs node features")
        ei = data.edge_index
        snap = self._snapshots(data)
        for t, (convs, norm) in enumerate(zip(self.layers, self.norms)):
            visible = snap <= t if self.progressive else torch.ones_like(snap, dtype=torch.bool)
            if len(convs) == 1:  # official mode, not the last layer: one conv on the union
                out = convs[0](h, ei[:, visible])
            else:  # sum_l Conv_l(h, E_l): one relation per snapshot, ids select edges only
                out = 0
                for level, conv in enumerate(convs):
                    if self.progressive and level > t:
                        continue
                    out = out + conv(h, ei[:, snap == level])
            h = nn.functional.relu(norm(out))
            h = nn.functional.dropout(h, p=self.dropout, training=self.training)
        return h

    def forward(self, data: Any) -> torch.Tensor:
        from iclr24.kits.graphs import pool_graphs

        return self.head(pool_graphs(self.node_embeddings(data), data, self.pool))
