"""The EX-Graph benchmark's GNN baselines, built from PyG layers, plus DAGNN and the decoders.

The architectures follow the official scripts (Persdre/EX-Graph, DGL there, PyG here):

- ``gcn`` / ``sage``: conv(in, 128) → ReLU → dropout 0.1 → BatchNorm → conv(128, 128) → ReLU →
  dropout → conv(128, out) (``GCNConv``; ``SAGEConv`` with mean aggregation);
- ``gat``: ``GATConv`` with 3 heads (concatenated) → dropout → ELU, twice, then one head;
- ``gatv2``: three ``GATv2Conv`` layers with 3 heads, ELU between, heads averaged at the end;
- ``tagcn``: two ``TAGConv`` layers (K = 2 hops, DGL's default), ReLU and dropout between;
- ``appnp``: MLP in → 128 → 128 → out, then ``APPNP`` propagation (K = 3, α = 0.5 as in the
  official scripts);
- ``ggnn``: two ``GatedGraphConv`` layers (5 GRU steps; inputs zero-padded to the width) and a
  linear head;
- ``dagnn``: :class:`DAGNN` (Liu, Gao & Ji, KDD 2020): an MLP, then K propagation steps whose
  outputs are mixed by learned, node-adaptive retention scores;
- ``rgcn`` (matching task, heterogeneous graph): three ``RGCNConv`` layers over edge types.

Cluster-GCN (needs METIS from pyg-lib/torch-sparse, not installable here) and HIN2Vec are not
provided. :class:`EdgeDecoder` scores [z_u ‖ z_v]: ``linear`` (Ethereum link prediction,
256 → 1) or ``mlp`` (matching, 256 → 128 → 1).
"""

from __future__ import annotations

import itertools
import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch_geometric import nn as gnn
from torch_geometric.nn import MessagePassing
from torch_geometric.nn.conv.gcn_conv import gcn_norm

__all__ = [
    "DAGNN",
    "ENCODERS",
    "DAGNNPropagation",
    "EdgeDecoder",
    "GraphEncoder",
    "RGCNEncoder",
    "message_graph",
]

ENCODERS = ("gcn", "gat", "gatv2", "sage", "tagcn", "appnp", "dagnn", "ggnn")
_EDGE_LEVEL = ("gat", "gatv2")  # attention needs per-edge scores: keep the edge list


def message_graph(model: str, edge_index: torch.Tensor, num_nodes: int) -> torch.Tensor:
    """The graph argument :class:`GraphEncoder` ``model`` should get: the (2, E) edge list for the
    attention models, otherwise the transposed adjacency as a torch CSR tensor (row = target),
    which PyG's layers multiply with one sparse matmul instead of gathering and scattering E
    messages; both give the same output (tested), the CSR path several times faster."""
    from torch_geometric.utils import to_torch_csr_tensor

    if model in _EDGE_LEVEL:
        return edge_index
    with warnings.catch_warnings():  # torch flags sparse CSR as beta on every construction
        warnings.simplefilter("ignore", UserWarning)
        return to_torch_csr_tensor(edge_index.flip(0), size=(num_nodes, num_nodes))


def _check_dim(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be a positive int; got {v!r}")
    return v


class _WeightedSum(MessagePassing):
    """x'_i = Σ_j w_ji x_j over the edges j → i."""

    def __init__(self) -> None:
        super().__init__(aggr="add")

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                edge_weight: torch.Tensor) -> torch.Tensor:
        return self.propagate(edge_index, x=x, edge_weight=edge_weight)

    def message(self, x_j: torch.Tensor, edge_weight: torch.Tensor) -> torch.Tensor:
        return edge_weight.view(-1, 1) * x_j

    def message_and_aggregate(self, adj_t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        from torch_geometric.utils import spmm

        return spmm(adj_t, x, reduce="sum")


class DAGNNPropagation(nn.Module):
    """DAGNN's adaptive propagation (Liu et al. 2020, Eq. 9–11).

    H_0 = Z, H_k = Â H_{k-1} with Â = D̃^{-1/2}(A + I)D̃^{-1/2}; S = σ(stack(H_0..H_K) s) with a
    learned s ∈ R^d; output X_out = Σ_k S_k ⊙ H_k. x: (N, d) → (N, d); the graph is a (2, E)
    edge list or a transposed sparse adjacency. The propagation is a PyG ``MessagePassing``
    (``gcn_norm`` weights, sum aggregation).
    """

    def __init__(self, dim: int, K: int = 10, cached: bool = False) -> None:
        super().__init__()
        _check_dim("dim", dim)
        if isinstance(K, bool) or not isinstance(K, int) or K < 0:
            raise ValueError(f"K must be an int >= 0; got {K!r}")
        self.K = K
        self.cached = cached
        self._cache: tuple[torch.Tensor, torch.Tensor] | None = None
        self.s = nn.Parameter(torch.empty(dim, 1))
        self._step = _WeightedSum()
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.xavier_uniform_(self.s, gain=nn.init.calculate_gain("sigmoid"))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        if self._cache is None:
            ei, w = gcn_norm(edge_index, None, x.size(0), add_self_loops=True, dtype=x.dtype)
            if w is None:  # a sparse adjacency carries its normalised weights itself
                w = torch.empty(0)
            if self.cached:
                self._cache = (ei, w)
        else:
            ei, w = self._cache
        hs = [x]
        for _ in range(self.K):
            hs.append(self._step(hs[-1], ei, w))  # H_k = Â H_{k-1}
        h = torch.stack(hs, dim=1)  # (N, K + 1, d)
        score = torch.sigmoid(h @ self.s)  # S = σ(H s): (N, K + 1, 1)
        return (score * h).sum(dim=1)  # X_out = Σ_k S_k H_k


class DAGNN(nn.Module):
    """Deep Adaptive GNN: MLP(in → hidden → hidden → out, ReLU, dropout before each linear)
    followed by :class:`DAGNNPropagation` with K steps (the official EX-Graph scripts use K = 1
    for link prediction; the DAGNN paper's default is 10). forward(x (N, in), edge_index) →
    (N, out)."""

    def __init__(self, in_dim: int, hidden: int, out_dim: int | None = None, K: int = 10,
                 dropout: float = 0.1, cached: bool = False) -> None:
        super().__init__()
        out_dim = hidden if out_dim is None else out_dim
        dims = [_check_dim("in_dim", in_dim), _check_dim("hidden", hidden), hidden,
                _check_dim("out_dim", out_dim)]
        self.linears = nn.ModuleList(nn.Linear(a, b) for a, b in itertools.pairwise(dims))
        self.dropout = nn.Dropout(dropout)
        self.propagation = DAGNNPropagation(out_dim, K, cached=cached)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        for i, lin in enumerate(self.linears):
            x = lin(self.dropout(x))
            if i < len(self.linears) - 1:
                x = F.relu(x)
        return self.propagation(x, edge_index)


class GraphEncoder(nn.Module):
    """One of the benchmark's node encoders (``ENCODERS``, see the module docstring).

    forward(x: (N, in_dim), edge_index) → (N, out_dim), edge_index a (2, E) edge list or the
    transposed sparse adjacency :func:`message_graph` builds. Messages flow source → target, as
    in the official DGL graphs. ``cached=True`` keeps the normalised adjacency of the first
    graph seen (GCN, APPNP, DAGNN): only for a model that always sees the same graph.
    """

    def __init__(self, name: str, in_dim: int, hidden: int = 128, out_dim: int = 128, *,
                 dropout: float = 0.1, heads: int = 3, dagnn_k: int = 10,
                 cached: bool = False) -> None:
        super().__init__()
        if name not in ENCODERS:
            raise ValueError(f"name must be one of {ENCODERS}; got {name!r}")
        for k, v in (("in_dim", in_dim), ("hidden", hidden), ("out_dim", out_dim),
                     ("heads", heads)):
            _check_dim(k, v)
        self.name = name
        self.dropout = nn.Dropout(dropout)
        self.norm = nn.BatchNorm1d(hidden) if name in ("gcn", "sage") else None
        if name == "gcn":
            self.convs = nn.ModuleList([gnn.GCNConv(in_dim, hidden, cached=cached),
                                        gnn.GCNConv(hidden, hidden, cached=cached),
                                        gnn.GCNConv(hidden, out_dim, cached=cached)])
        elif name == "sage":
            self.convs = nn.ModuleList([gnn.SAGEConv(in_dim, hidden), gnn.SAGEConv(hidden, hidden),
                                        gnn.SAGEConv(hidden, out_dim)])
        elif name == "gat":
            self.convs = nn.ModuleList([gnn.GATConv(in_dim, hidden, heads=heads),
                                        gnn.GATConv(hidden * heads, hidden, heads=heads),
                                        gnn.GATConv(hidden * heads, out_dim, heads=1)])
        elif name == "gatv2":
            self.convs = nn.ModuleList([gnn.GATv2Conv(in_dim, hidden, heads=heads),
                                        gnn.GATv2Conv(hidden * heads, hidden, heads=heads),
                                        gnn.GATv2Conv(hidden * heads, out_dim, heads=heads,
                                                      concat=False)])
        elif name == "tagcn":
            self.convs = nn.ModuleList([gnn.TAGConv(in_dim, hidden, K=2),
                                        gnn.TAGConv(hidden, out_dim, K=2)])
        elif name == "appnp":
            self.mlp = nn.ModuleList([nn.Linear(in_dim, hidden), nn.Linear(hidden, hidden),
                                      nn.Linear(hidden, out_dim)])
            self.propagate = gnn.APPNP(K=3, alpha=0.5, cached=cached)
        elif name == "ggnn":
            if in_dim > hidden:
                raise ValueError(f"ggnn pads inputs to the hidden width: in_dim ({in_dim}) must "
                                 f"be <= hidden ({hidden})")
            self.convs = nn.ModuleList([gnn.GatedGraphConv(hidden, num_layers=5),
                                        gnn.GatedGraphConv(hidden, num_layers=5)])
            self.head = nn.Linear(hidden, out_dim)
        else:
            self.dagnn = DAGNN(in_dim, hidden, out_dim, K=dagnn_k, dropout=dropout,
                               cached=cached)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        name = self.name
        if name in ("gcn", "sage"):
            h = self.norm(self.dropout(F.relu(self.convs[0](x, edge_index))))
            h = self.dropout(F.relu(self.convs[1](h, edge_index)))
            return self.convs[2](h, edge_index)
        if name in ("gat", "gatv2"):
            h = x
            for conv in self.convs[:-1]:
                h = F.elu(self.dropout(conv(h, edge_index)))
            return self.convs[-1](h, edge_index)
        if name == "tagcn":
            h = F.relu(self.convs[0](x, edge_index))
            return self.convs[1](self.dropout(h), edge_index)
        if name == "appnp":
            h = F.relu(self.mlp[0](self.dropout(x)))
            h = F.relu(self.mlp[1](h))
            return self.propagate(self.mlp[2](self.dropout(h)), edge_index)
        if name == "ggnn":
            h = self.convs[1](self.convs[0](x, edge_index), edge_index)
            return self.head(h)
        return self.dagnn(x, edge_index)


class RGCNEncoder(nn.Module):
    """Three ``RGCNConv`` layers (ReLU, dropout between) over typed edges: forward(x (N, in),
    edge_index (2, E), edge_type (E,)) → (N, out)."""

    def __init__(self, in_dim: int, num_relations: int, hidden: int = 128, out_dim: int = 128,
                 *, dropout: float = 0.1) -> None:
        super().__init__()
        _check_dim("num_relations", num_relations)
        self.convs = nn.ModuleList([
            gnn.RGCNConv(_check_dim("in_dim", in_dim), hidden, num_relations),
            gnn.RGCNConv(hidden, hidden, num_relations),
            gnn.RGCNConv(hidden, _check_dim("out_dim", out_dim), num_relations)])
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor,
                edge_type: torch.Tensor) -> torch.Tensor:
        h = x
        for i, conv in enumerate(self.convs):
            h = conv(h, edge_index, edge_type)
            if i < len(self.convs) - 1:
                h = self.dropout(F.relu(h))
        return h


class EdgeDecoder(nn.Module):
    """Scores an ordered pair from its endpoint embeddings: logit = f([z_u ‖ z_v]).

    kind="linear": one Linear(2·dim, 1) (the official Ethereum link-prediction decoder);
    kind="mlp": Linear(2·dim, 128) → ReLU → Linear(128, 1) (the official matching decoder).
    forward(z_src (E, dim), z_dst (E, dim)) → (E,) logits. Order matters: (u, v) ≠ (v, u).
    """

    def __init__(self, kind: str = "linear", dim: int = 128, hidden: int = 128) -> None:
        super().__init__()
        if kind not in ("linear", "mlp"):
            raise ValueError(f"kind must be 'linear' or 'mlp'; got {kind!r}")
        _check_dim("dim", dim)
        self.kind = kind
        if kind == "linear":
            self.net = nn.Linear(2 * dim, 1)
        else:
            self.net = nn.Sequential(nn.Linear(2 * dim, _check_dim("hidden", hidden)), nn.ReLU(),
                                     nn.Linear(hidden, 1))

    def forward(self, z_src: torch.Tensor, z_dst: torch.Tensor) -> torch.Tensor:
        if z_src.shape != z_dst.shape or z_src.dim() != 2:
            raise ValueError(f"z_src and z_dst must both be (E, dim); got {tuple(z_src.shape)} "
                             f"and {tuple(z_dst.shape)}")
        return self.net(torch.cat([z_src, z_dst], dim=1)).squeeze(-1)
