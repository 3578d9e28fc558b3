"""The graph of relations G_R (ULTRA, Sec. 4.1; official ``tasks.build_relation_graph``).

Nodes of G_R are the 2|R| relations of a KG whose inverse edges were already added. With
E_h[v, r] = 1 iff entity v is the head of some r-edge and E_t the same for tails, the four
fundamental interactions are the non-zero patterns of

    A_hh = E_hᵀ E_h,  A_tt = E_tᵀ E_t,  A_ht = E_hᵀ E_t,  A_th = E_tᵀ E_h        (Eq. 1)

A non-zero A_k[r1, r2] becomes the edge r1 -> r2 (messages flow from r1 to r2) with type k,
k = 0 (hh), 1 (tt), 2 (ht), 3 (th), the ids of the official code. Self pairs (r, r) come out of
hh and tt and are kept. G_R has no parameters and is computed once per graph. The official code
multiplies degree-normalised matrices; only the sparsity pattern is used, so we multiply 0/1
matrices.
"""

from __future__ import annotations

import warnings

import torch

__all__ = ["INTERACTION_TYPES", "build_relation_graph"]

INTERACTION_TYPES = ("head_to_head", "tail_to_tail", "head_to_tail", "tail_to_head")


def _incidence(nodes: torch.Tensor, edge_type: torch.Tensor, num_nodes: int,
               num_relations: int) -> torch.Tensor:
    pairs = torch.unique(torch.stack([nodes, edge_type]), dim=1)  # dedupe (entity, relation)
    return torch.sparse_coo_tensor(pairs, torch.ones(pairs.shape[1], device=nodes.device),
                                   (num_nodes, num_relations), check_invariants=True).coalesce()


def build_relation_graph(edge_index: torch.Tensor, edge_type: torch.Tensor, num_relations: int,
                         num_nodes: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Edges of the relation graph.

    edge_index: (2, E) entity edges *with inverses already added*; edge_type: (E,) in
    ``[0, num_relations)`` where ``num_relations`` counts inverse relations too (2|R|).
    Returns ``rel_edge_index`` (2, E_r) over relation ids and ``rel_edge_type`` (E_r,) in
    {0: hh, 1: tt, 2: ht, 3: th}, sorted by (type, source, target).
    """
    edge_index = torch.as_tensor(edge_index, dtype=torch.long)
    edge_type = torch.as_tensor(edge_type, dtype=torch.long)
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"edge_index must have shape (2, E); got {tuple(edge_index.shape)}")
    if edge_type.shape != (edge_index.shape[1],):
        raise ValueError(f"edge_type must have shape ({edge_index.shape[1]},); got "
                         f"{tuple(edge_type.shape)}")
    if edge_index.shape[1] == 0:
        raise ValueError("edge_index is empty: an empty graph has no relation graph")
    if num_relations < 1:
        raise ValueError(f"num_relations must be >= 1; got {num_relations}")
    if int(edge_type.min()) < 0 or int(edge_type.max()) >= num_relations:
        raise ValueError(f"edge_type values must lie in [0, num_relations={num_relations})")
    if num_nodes is None:
        num_nodes = int(edge_index.max()) + 1
    e_h = _incidence(edge_index[0], edge_type, num_nodes, num_relations)  # E_h: (|V|, 2|R|)
    e_t = _incidence(edge_index[1], edge_type, num_nodes, num_relations)  # E_t
    e_h_t, e_t_t = e_h.t().coalesce(), e_t.t().coalesce()
    blocks = []
    for k, (left, right) in enumerate(((e_h_t, e_h), (e_t_t, e_t), (e_h_t, e_t), (e_t_t, e_h))):
        with warnings.catch_warnings():  # torch flags its sparse kernels as beta
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            adj = torch.sparse.mm(left, right).coalesce()  # A_k = E_xᵀ E_y, pattern only
        idx = adj.indices()[:, adj.values() != 0]
        blocks.append((idx, torch.full((idx.shape[1],), k, dtype=torch.long,
                                       device=idx.device)))
    rel_edge_index = torch.cat([b[0] for b in blocks], dim=1)
    rel_edge_type = torch.cat([b[1] for b in blocks])
    return rel_edge_index, rel_edge_type
