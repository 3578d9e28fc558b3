"""Node-marking bags of subgraphs (Policy-Learn, Sec. 3 "Subgraph GNNs" and Sec. 4).

For a graph G = (A, X) and a node v, the node-marked subgraph is S_v = (A, [X ‖ e_v]) with e_v
the indicator of v: the connectivity is kept and one extra feature channel marks the root. The
bag after T selections is B_T = {G, S_{v_1}, ..., S_{v_T}}, where the original graph G carries a
zero marking channel (the official code's "subgraph 0").

:func:`node_marked_bag` builds B_T for every graph of a PyG batch as one disjoint-union
``Data`` (copies of each graph side by side), with index vectors that say which subgraph a node
of the bag belongs to, which graph a subgraph comes from, and which original node a bag node
copies. The roots are either integer node indices or *soft* marking vectors: Policy-Learn writes
its straight-through Gumbel-softmax sample into the marking channel so that the task loss
reaches the selection logits (an integer index would cut that gradient).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

__all__ = ["graph_sizes", "node_marked_bag"]


def graph_sizes(data: Any) -> tuple[Tensor, Tensor]:
    """Node counts (B,) and offsets ptr (B + 1,) of the graphs in ``data`` (a PyG ``Batch`` or a
    single ``Data``, which counts as a batch of one graph)."""
    from torch_geometric.data import Data

    if not isinstance(data, Data):
        raise TypeError(f"data must be a torch_geometric Data or Batch, got {type(data).__name__}")
    if data.x is None or data.edge_index is None:
        raise ValueError("data must have node features x (N, F) and edge_index (2, E)")
    num_nodes = data.x.size(0)
    device = data.x.device
    ptr = getattr(data, "ptr", None)
    if ptr is None:
        batch = getattr(data, "batch", None)
        if batch is None:
            ptr = torch.tensor([0, num_nodes], device=device)
        else:
            counts = torch.bincount(batch)
            ptr = torch.cat([counts.new_zeros(1), counts.cumsum(0)])
    counts = ptr[1:] - ptr[:-1]
    if counts.numel() == 0 or bool((counts == 0).any()):
        empty = torch.nonzero(counts == 0).flatten().tolist() if counts.numel() else [0]
        raise ValueError(f"data: graph(s) {empty} have no nodes; a bag of node-marked "
                         "subgraphs needs at least one node per graph")
    return counts, ptr


def _marks_from_roots(roots: Tensor, counts: Tensor) -> tuple[Tensor, Tensor]:
    """Validate integer roots (B, T) (−1 = no subgraph, trailing only); returns the number of
    marked copies per graph (B,) and the roots."""
    if roots.dim() != 2 or roots.size(0) != counts.numel():
        raise ValueError(f"roots must have shape (num_graphs={counts.numel()}, T), got "
                         f"{tuple(roots.shape)}")
    present = roots >= 0
    if bool((roots < -1).any()):
        raise ValueError("roots: entries must be node indices >= 0 or -1 (no subgraph)")
    # -1 only as trailing padding: once absent, every later entry of the row is absent
    if roots.size(1) > 1 and bool((present[:, 1:] & ~present[:, :-1]).any()):
        raise ValueError("roots: -1 (no subgraph) may only pad the end of a row")
    if bool((present & (roots >= counts[:, None])).any()):
        raise ValueError("roots: a node index is not below its graph's number of nodes")
    return present.sum(1), roots


def node_marked_bag(data: Any, roots: Tensor, *, include_original: bool = True) -> Any:
    """The bag {G, S_{v_1}, ..., S_{v_T}} of every graph in ``data`` as one PyG ``Data``.

    Args:
        data: a PyG ``Batch`` (or one ``Data``) with ``x`` (N, F), ``edge_index`` (2, E) and
            optionally ``edge_attr`` (E, D).
        roots: either a LongTensor (B, T) of node indices local to each graph (−1 pads rows of
            graphs that get fewer subgraphs, e.g. the full bag of graphs of different sizes), or
            a float tensor (B, T, max_nodes) of marking vectors (one-hot rows, possibly the
            straight-through samples of Policy-Learn; entry [b, t, i] is the mark of the i-th
            node of graph b in its t-th subgraph). ``max_nodes`` >= the largest graph.
        include_original: put the unmarked graph (zero marking channel) first in every bag.

    Returns:
        ``Data`` with ``x`` (N_bag, F + 1) (marking channel last), ``edge_index`` (2, E_bag),
        ``edge_attr`` (if ``data`` has one), ``subgraph_batch`` (N_bag,) the subgraph of each bag
        node, ``graph_batch`` (S,) the graph of each subgraph, ``node_id`` (N_bag,) the node of
        ``data`` that each bag node copies, ``subgraph_copy`` (S,) the position in its bag
        (0 = original graph when included), and the ints ``num_subgraphs`` = S and
        ``num_parent_graphs`` = B.
    """
    from torch_geometric.data import Data

    counts, ptr = graph_sizes(data)
    if not isinstance(roots, Tensor):
        raise TypeError(f"roots must be a torch.Tensor, got {type(roots).__name__}")
    num_graphs = counts.numel()
    device = data.x.device
    soft = roots.is_floating_point()
    if soft:
        if roots.dim() != 3 or roots.size(0) != num_graphs or roots.size(2) < int(counts.max()):
            raise ValueError(f"roots (marking vectors) must have shape (num_graphs={num_graphs},"
                             f" T, max_nodes >= {int(counts.max())}), got {tuple(roots.shape)}")
        marked = torch.full((num_graphs,), roots.size(1), device=device, dtype=torch.long)
    elif roots.dtype in (torch.long, torch.int32, torch.int16, torch.int8, torch.uint8):
        marked, roots = _marks_from_roots(roots.long(), counts)
    else:
        raise TypeError(f"roots must be an integer or floating tensor, got dtype {roots.dtype}")
    offset = 1 if include_original else 0
    copies = marked + offset
    if bool((copies == 0).any()):
        raise ValueError("roots: every graph needs at least one subgraph when "
                         "include_original=False")

    # subgraph-level indices: subgraph s is copy c of graph b, laid out graph-major
    graph_batch = torch.repeat_interleave(torch.arange(num_graphs, device=device), copies)
    first_copy = torch.cumsum(copies, 0) - copies
    subgraph_copy = torch.arange(graph_batch.numel(), device=device) - first_copy[graph_batch]
    num_subgraphs = graph_batch.numel()
    sub_sizes = counts[graph_batch]
    sub_start = torch.cumsum(sub_sizes, 0) - sub_sizes

    # node-level indices of the bag
    subgraph_batch = torch.repeat_interleave(torch.arange(num_subgraphs, device=device), sub_sizes)
    local = torch.arange(subgraph_batch.numel(), device=device) - sub_start[subgraph_batch]
    node_graph = graph_batch[subgraph_batch]
    node_id = ptr[node_graph] + local

    # edges: group the input's edges by graph, then copy each graph's block once per subgraph
    edge_graph = torch.bucketize(data.edge_index[0], ptr[1:], right=True)
    order = torch.argsort(edge_graph, stable=True)
    edge_index = data.edge_index[:, order]
    e_counts = torch.bincount(edge_graph, minlength=num_graphs)
    e_ptr = torch.cumsum(e_counts, 0) - e_counts
    sub_edges = e_counts[graph_batch]
    edge_sub = torch.repeat_interleave(torch.arange(num_subgraphs, device=device), sub_edges)
    e_local = torch.arange(edge_sub.numel(), device=device) - (torch.cumsum(sub_edges, 0)
                                                               - sub_edges)[edge_sub]
    src = e_ptr[graph_batch][edge_sub] + e_local
    shift = (sub_start[edge_sub] - ptr[graph_batch[edge_sub]])
    bag_edges = edge_index[:, src] + shift

    # marking channel: S_v = (A, [X ‖ e_v]); the original graph gets a zero channel
    copy = subgraph_copy[subgraph_batch] - offset
    is_marked = copy >= 0
    if roots.size(1) == 0:
        mark = data.x.new_zeros(local.numel())
    elif soft:
        mark = roots[node_graph, copy.clamp(min=0), local] * is_marked.to(roots.dtype)
    else:
        root = roots[node_graph, copy.clamp(min=0)]
        mark = (is_marked & (local == root)).to(data.x.dtype)
    x = torch.cat([data.x[node_id], mark.unsqueeze(-1).to(data.x.dtype)], dim=-1)

    bag = Data(x=x, edge_index=bag_edges, num_nodes=x.size(0))
    edge_attr = getattr(data, "edge_attr", None)
    if edge_attr is not None:
        bag.edge_attr = edge_attr[order][src]
    bag.subgraph_batch = subgraph_batch
    bag.graph_batch = graph_batch
    bag.node_id = node_id
    bag.subgraph_copy = subgraph_copy
    bag.num_subgraphs = int(num_subgraphs)
    bag.num_parent_graphs = int(num_graphs)
    return bag
