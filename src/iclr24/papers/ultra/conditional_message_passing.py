"""The two conditional message-passing networks of ULTRA (Sec. 4.2-4.3), NBFNet-style.

Both stages are the generalised Bellman-Ford iteration of NBFNet (Zhu et al., 2021) with a
DistMult message, sum aggregation, the boundary condition re-injected at every layer, a
LayerNorm/ReLU update and a residual ("short_cut") connection:

    agg_v^l   = sum_{(u, k, v) in E} h_u^l ⊙ w_k^l  +  h_v^0                 (boundary re-injected)
    h_v^{l+1} = ReLU(LayerNorm(W^l [h_v^l ; agg_v^l] + b^l)) + h_v^l           (update + residual)

- :class:`RelationNBFNet` runs on the relation graph G_R with 4 edge types; ``w_k^l`` is a
  learned 4 x d table per layer and the boundary is the *all-ones* vector on the query relation
  (``h_r^0 = 1 if r = q else 0``): no vector is tied to a relation id, which is what lets the
  weights transfer to unseen relation vocabularies.
- :class:`EntityNBFNet` runs on the entity graph with all 2|R| relation types; ``w_r^l =
  MLP^l(R_q)[r]`` projects the query-conditioned relation vectors per layer
  (``project_relations=True``); the boundary is ``R_q[q]`` on the head entity. Candidates are
  scored by ``MLP([h_t^L ; R_q[q]])`` (2d -> 2d -> 1).

Inside the networks node states are laid out node-first, (N, B, d) (one set per query, as in
the original NBFNet), so gathering and summing messages are row operations (``index_select`` /
``index_add_`` over dim 0), several times faster on a CPU than scattering along a middle dim.
The public outputs are batch-first. The layers implement PyG's ``message``/``aggregate``/
``update`` hooks (no override of ``propagate``).
"""

from __future__ import annotations

import torch
from torch import nn
from torch_geometric.nn import MessagePassing

__all__ = ["EntityNBFNet", "GeneralizedRelationalConv", "RelationNBFNet"]


class GeneralizedRelationalConv(MessagePassing):
    """One NBFNet layer with DistMult messages over typed edges, batched over queries.

    States are node-first: x and boundary (N, B, in_dim). in_dim/out_dim: state widths. num_edge_types: size of the learned per-layer relation table
    (used when ``project_relations=False``, e.g. 4 on the relation graph). With
    ``project_relations=True`` the relation vectors are given at call time, (K, B, in_dim), and
    passed through a per-layer Linear-ReLU-Linear projection.
    """

    def __init__(self, in_dim: int, out_dim: int, num_edge_types: int | None = None,
                 project_relations: bool = False) -> None:
        super().__init__(aggr="add", node_dim=0)
        if in_dim < 1 or out_dim < 1:
            raise ValueError(f"in_dim and out_dim must be >= 1; got {in_dim}, {out_dim}")
        self.in_dim, self.out_dim = in_dim, out_dim
        self.project_relations = project_relations
        if project_relations:
            self.relation_projection = nn.Sequential(
                nn.Linear(in_dim, in_dim), nn.ReLU(), nn.Linear(in_dim, in_dim))
        else:
            if num_edge_types is None or num_edge_types < 1:
                raise ValueError("num_edge_types must be >= 1 when project_relations=False")
            self.relation = nn.Embedding(num_edge_types, in_dim)
        self.linear = nn.Linear(2 * in_dim, out_dim)
        self.layer_norm = nn.LayerNorm(out_dim)

    def forward(self, x: torch.Tensor, boundary: torch.Tensor, edge_index: torch.Tensor,
                edge_type: torch.Tensor, relations: torch.Tensor | None = None,
                dense_adjacency: torch.Tensor | None = None) -> torch.Tensor:
        """x, boundary: (N, B, in_dim); edge_index (2, E); edge_type (E,); relations (K, B, in_dim)
        when projecting. Returns (N, B, out_dim) (without the residual, added by the network).

        dense_adjacency: optional (K, N, N) edge counts ``A[k, u, v]`` of the same graph; the sum
        over edges is then computed as K dense products, the same numbers (up to float
        rounding) and much faster on small, dense graphs such as the relation graph.
        """
        n, b = x.shape[0], x.shape[1]
        if self.project_relations:
            if relations is None:
                raise ValueError("relations (K, B, in_dim) are required with project_relations")
            rel = self.relation_projection(relations)  # w^l = MLP^l(R_q)
        else:
            rel = self.relation.weight.unsqueeze(1).expand(-1, b, -1)  # w^l: per-layer table
        if dense_adjacency is not None:
            # agg_v = sum_k sum_u A[k, u, v] (h_u ⊙ w_k): the DistMult messages, summed densely
            msgs = x.unsqueeze(0) * rel.unsqueeze(1)  # (K, N, B, d)
            aggr = torch.einsum("kuv,kuf->vf", dense_adjacency,
                                msgs.reshape(msgs.shape[0], n, -1)).view(n, b, -1)
            return self.update(aggr, x=x, boundary=boundary)
        return self.propagate(edge_index, x=x, relation=rel, edge_type=edge_type,
                              boundary=boundary, size=(n, n))

    def message(self, x_j: torch.Tensor, relation: torch.Tensor,
                edge_type: torch.Tensor) -> torch.Tensor:
        return x_j * relation.index_select(0, edge_type)  # DistMult message h_u ⊙ w_k

    def aggregate(self, inputs: torch.Tensor, index: torch.Tensor,
                  dim_size: int | None = None) -> torch.Tensor:
        n = dim_size if dim_size is not None else int(index.max()) + 1
        out = inputs.new_zeros((n,) + tuple(inputs.shape[1:]))
        return out.index_add_(0, index, inputs)  # sum over incoming edges

    def update(self, aggr_out: torch.Tensor, x: torch.Tensor,
               boundary: torch.Tensor) -> torch.Tensor:
        agg = aggr_out + boundary  # boundary condition re-injected (NBFNet self-message)
        return torch.relu(self.layer_norm(self.linear(torch.cat([x, agg], dim=-1))))


class _BellmanFord(nn.Module):
    def __init__(self, dim: int, num_layers: int, num_edge_types: int | None,
                 project_relations: bool) -> None:
        super().__init__()
        if dim < 1:
            raise ValueError(f"dim must be >= 1; got {dim}")
        if num_layers < 1:
            raise ValueError(f"num_layers must be >= 1; got {num_layers}")
        self.dim = dim
        self.layers = nn.ModuleList(
            GeneralizedRelationalConv(dim, dim, num_edge_types, project_relations)
            for _ in range(num_layers))

    def _iterate(self, boundary: torch.Tensor, edge_index: torch.Tensor, edge_type: torch.Tensor,
                 relations: torch.Tensor | None = None,
                 dense_adjacency: torch.Tensor | None = None) -> torch.Tensor:
        h = boundary
        for layer in self.layers:
            h = layer(h, boundary, edge_index, edge_type, relations,
                      dense_adjacency) + h  # residual short_cut
        return h


class RelationNBFNet(_BellmanFord):
    """Stage 1: query-conditioned relation representations on the relation graph G_R.

    G_R has only 2|R| nodes but is often nearly complete (e.g. 46k of 48k possible edges on
    Nations), so up to ``dense_max_nodes`` nodes its sum aggregation runs as dense products
    over a (4, 2|R|, 2|R|) adjacency instead of per-edge messages (same result).
    """

    dense_max_nodes = 1024

    def __init__(self, dim: int = 64, num_layers: int = 6) -> None:
        super().__init__(dim, num_layers, num_edge_types=4, project_relations=False)

    def forward(self, rel_edge_index: torch.Tensor, rel_edge_type: torch.Tensor,
                num_relations: int, query_relations: torch.Tensor) -> torch.Tensor:
        """query_relations: (B,) ids in [0, num_relations). Returns R_q: (B, num_relations, d)."""
        b = len(query_relations)
        boundary = torch.zeros(num_relations, b, self.dim, device=query_relations.device)
        boundary[query_relations, torch.arange(b, device=boundary.device)] = 1.0  # h_q^0 = 1
        dense = None
        if num_relations <= self.dense_max_nodes:
            dense = torch.zeros(4, num_relations, num_relations, device=boundary.device)
            dense.index_put_((rel_edge_type, rel_edge_index[0], rel_edge_index[1]),
                             torch.ones(len(rel_edge_type), device=boundary.device),
                             accumulate=True)
        return self._iterate(boundary, rel_edge_index, rel_edge_type,
                             dense_adjacency=dense).transpose(0, 1)


class EntityNBFNet(_BellmanFord):
    """Stage 2: entity-level reasoning conditioned on the head entity and R_q, plus the scorer."""

    def __init__(self, dim: int = 64, num_layers: int = 6) -> None:
        super().__init__(dim, num_layers, num_edge_types=None, project_relations=True)
        self.mlp = nn.Sequential(nn.Linear(2 * dim, 2 * dim), nn.ReLU(), nn.Linear(2 * dim, 1))

    def node_features(self, edge_index: torch.Tensor, edge_type: torch.Tensor, num_nodes: int,
                      relation_reprs: torch.Tensor, heads: torch.Tensor,
                      query_relations: torch.Tensor) -> torch.Tensor:
        """relation_reprs R_q: (B, 2|R|, d); heads, query_relations: (B,).
        Returns [h_v^L ; R_q[q]] for every entity v: (B, num_nodes, 2d)."""
        b = len(heads)
        ar = torch.arange(b, device=heads.device)
        query = relation_reprs[ar, query_relations]  # R_q[q]: (B, d)
        boundary = torch.zeros(num_nodes, b, self.dim, device=heads.device,
                               dtype=relation_reprs.dtype)
        boundary = boundary.index_put((heads, ar), query)  # h_v^0 = R_q[q] if v = h else 0
        h = self._iterate(boundary, edge_index, edge_type, relation_reprs.transpose(0, 1))
        h = h.transpose(0, 1)  # (B, N, d)
        return torch.cat([h, query.unsqueeze(1).expand(-1, num_nodes, -1)], dim=-1)

    def score(self, features: torch.Tensor) -> torch.Tensor:
        """MLP([h_t ; R_q[q]]) -> logits; features (..., 2d) -> (...)."""
        return self.mlp(features).squeeze(-1)
