"""DS-GNN, the subgraph GNN both of Policy-Learn's networks use (Sec. 4; Bevilacqua et al.,
2022, "DS-GNN").

A shared message-passing GNN runs on every subgraph of a bag independently (the bag is a
disjoint union, see :mod:`.bags`), so node v of subgraph s gets a state h_{s,v}. Then

- the *prediction network* pools nodes per subgraph (mean or sum), averages the subgraph
  vectors of each graph and applies an MLP head: y = MLP(mean_s READOUT_v h_{s,v});
- the *selection network* averages h_{s,v} over the subgraphs of the bag, per original node
  (:meth:`DSGNN.node_embeddings`), which Policy-Learn turns into selection logits.

Layers follow the official code (``CustomGIN``/``CustomGINE`` in ``models.py``): a PyG
``GINConv`` (``GINEConv`` with edge features) with ``train_eps=True`` and the MLP
Linear-BatchNorm-ReLU-Linear, then BatchNorm, ReLU, dropout and a residual connection (an input
``Linear`` maps the features to the hidden width first when residuals are on). The selection
network disables BatchNorm running statistics (``track_running_stats=False``) since its bags
change size from step to step. Not carried over: the official layer's second GIN stream on the
marking channel alone (added back at the end); the marking channel enters the first layer
together with the node features, as the paper's DS-GNN on [X ‖ e_v] does.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

__all__ = ["DSGNN"]

_CONVS = ("gin", "gine")
_READOUTS = ("mean", "sum")
_NORMS = ("batch", "layer")


def _positive_int(value: Any, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class DSGNN(nn.Module):
    """A DS-GNN over node-marked bags (see :func:`.node_marked_bag`).

    Args:
        in_dim: node feature width of the *original* graphs; the bag adds the marking channel,
            so the network reads ``in_dim + 1`` features.
        hidden: width of every layer (official default 64).
        num_layers: message-passing layers (official default 6).
        out_dim: width of the MLP head Linear(h, 2h)-ReLU-Linear(2h, out) applied to the graph
            representation; ``None`` for a network without head (the selection network).
        conv: ``"gin"`` (PyG ``GINConv``) or ``"gine"`` (``GINEConv``, needs ``edge_dim``).
        edge_dim: width of ``edge_attr`` for ``"gine"``.
        readout: node pooling per subgraph, ``"mean"`` (official) or ``"sum"``.
        residual: add each layer's input to its output.
        norm: ``"batch"`` (official default) or ``"layer"`` (the official ``layernorm`` option).
        track_running_stats: BatchNorm running statistics (False in the selection network).
        dropout: dropout after each layer.
    """

    def __init__(self, in_dim: int, hidden: int = 64, num_layers: int = 6,
                 out_dim: int | None = None, *, conv: str = "gin", edge_dim: int | None = None,
                 readout: str = "mean", residual: bool = True, norm: str = "batch",
                 track_running_stats: bool = True, dropout: float = 0.0) -> None:
        super().__init__()
        from torch_geometric.nn import GINConv, GINEConv

        self.in_dim = _positive_int(in_dim, "in_dim")
        self.hidden = _positive_int(hidden, "hidden")
        self.num_layers = _positive_int(num_layers, "num_layers")
        if out_dim is not None:
            _positive_int(out_dim, "out_dim")
        if conv not in _CONVS:
            raise ValueError(f"conv must be one of {_CONVS}, got {conv!r}")
        if conv == "gine":
            _positive_int(edge_dim, "edge_dim (required by conv='gine')")
        if readout not in _READOUTS:
            raise ValueError(f"readout must be one of {_READOUTS}, got {readout!r}")
        if norm not in _NORMS:
            raise ValueError(f"norm must be one of {_NORMS}, got {norm!r}")
        if not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be in [0, 1), got {dropout!r}")
        self.out_dim, self.conv, self.readout = out_dim, conv, readout
        self.residual, self.dropout = bool(residual), float(dropout)

        width = self.in_dim + 1  # original features ‖ marking channel
        self.input = nn.Linear(width, hidden) if residual else None
        if residual:
            width = hidden
        def normalization() -> nn.Module:
            return (nn.BatchNorm1d(hidden, track_running_stats=track_running_stats)
                    if norm == "batch" else nn.LayerNorm(hidden))

        self.convs = nn.ModuleList()
        self.norms = nn.ModuleList()
        for layer in range(num_layers):
            d_in = width if layer == 0 else hidden
            mlp = nn.Sequential(nn.Linear(d_in, hidden), normalization(), nn.ReLU(),
                                nn.Linear(hidden, hidden))
            # GIN: h_v' = MLP((1 + eps) h_v + sum_{u in N(v)} h_u)  (GINE adds ReLU(h_u + W e_uv))
            self.convs.append(GINConv(mlp, train_eps=True) if conv == "gin"
                              else GINEConv(mlp, train_eps=True, edge_dim=edge_dim))
            self.norms.append(normalization())
        self.head = (nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.ReLU(),
                                   nn.Linear(2 * hidden, out_dim))
                     if out_dim is not None else None)

    def _check_bag(self, bag: Any) -> None:
        for name in ("x", "edge_index", "subgraph_batch", "graph_batch"):
            if getattr(bag, name, None) is None:
                raise ValueError(f"bag must come from node_marked_bag (missing {name!r})")
        if bag.x.size(-1) != self.in_dim + 1:
            raise ValueError(f"bag.x must have in_dim + 1 = {self.in_dim + 1} features (node "
                             f"features and the marking channel), got {bag.x.size(-1)}")
        if self.conv == "gine" and getattr(bag, "edge_attr", None) is None:
            raise ValueError("conv='gine' needs bag.edge_attr")

    def node_states(self, bag: Any) -> Tensor:
        """h_{s,v} for every node of every subgraph: (N_bag, hidden)."""
        self._check_bag(bag)
        import torch.nn.functional as F

        h = bag.x if self.input is None else self.input(bag.x)
        for conv, norm in zip(self.convs, self.norms):
            out = (conv(h, bag.edge_index) if self.conv == "gin"
                   else conv(h, bag.edge_index, bag.edge_attr))
            out = F.dropout(torch.relu(norm(out)), self.dropout, training=self.training)
            h = out + h if self.residual else out
        return h

    def subgraph_embeddings(self, bag: Any) -> Tensor:
        """READOUT_v h_{s,v} per subgraph: (S, hidden)."""
        from torch_geometric.nn import global_add_pool, global_mean_pool

        pool = global_mean_pool if self.readout == "mean" else global_add_pool
        return pool(self.node_states(bag), bag.subgraph_batch, size=bag.num_subgraphs)

    def graph_embeddings(self, bag: Any) -> Tensor:
        """mean_s READOUT_v h_{s,v} per graph of the batch: (B, hidden)."""
        from torch_geometric.nn import global_mean_pool

        return global_mean_pool(self.subgraph_embeddings(bag), bag.graph_batch,
                                size=bag.num_parent_graphs)

    def node_embeddings(self, bag: Any, num_nodes: int) -> Tensor:
        """mean_s h_{s,v} per node v of the original graphs: (num_nodes, hidden), where
        ``num_nodes`` is N of the batch the bag was built from."""
        from torch_geometric.nn import global_mean_pool

        if getattr(bag, "node_id", None) is None:
            raise ValueError("bag must come from node_marked_bag (missing 'node_id')")
        return global_mean_pool(self.node_states(bag), bag.node_id, size=num_nodes)

    def forward(self, bag: Any) -> Tensor:
        """Graph predictions (B, out_dim), or graph embeddings (B, hidden) without a head."""
        g = self.graph_embeddings(bag)
        return g if self.head is None else self.head(g)
