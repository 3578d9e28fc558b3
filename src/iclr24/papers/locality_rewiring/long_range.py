"""A synthetic long-range task on trees, standing in for LRGB (Peptides, PCQM-Contact), which
downloads at run time and is out of reach here.

Each graph is a uniformly random tree; a source s and a target t at hop distance exactly
``distance`` are drawn; s carries a one-hot class among ``num_classes`` plus a source indicator,
t a target indicator, every other node zeros. The label is s's class, read out at t: a T-layer
MPNN on the original tree cannot see s when distance > T (chance accuracy), while rewiring that
brings s within T hops of t can solve it. Over-squashing is what LASER's lowest-connectivity
choice is meant to relieve; trees are where it is worst (every path is a bridge).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from iclr24.kits.graphs import random_tree, shortest_path_distances, to_pyg

from .rewiring import _int_at_least

__all__ = ["make_long_range_trees", "target_logits", "within_receptive_field"]

_MAX_TRIES = 1000


def make_long_range_trees(num_graphs: int, num_nodes: int, *, distance: int = 6,
                          num_classes: int = 4, seed: int) -> list[Any]:
    """``num_graphs`` Data objects: ``x`` (n, num_classes + 2), ``edge_index`` (tree, both
    directions), ``y`` (1,), ``target_mask`` (n,) bool with one True at t.

    Trees without a pair at ``distance`` are redrawn. Classes are drawn uniformly.
    """
    num_graphs = _int_at_least("num_graphs", num_graphs, 1)
    num_nodes = _int_at_least("num_nodes", num_nodes, 2)
    distance = _int_at_least("distance", distance, 1)
    num_classes = _int_at_least("num_classes", num_classes, 2)
    if distance >= num_nodes:
        raise ValueError(f"distance must be < num_nodes = {num_nodes}; got {distance}")
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(num_graphs):
        for _ in range(_MAX_TRIES):
            tree = random_tree(num_nodes, seed=int(rng.integers(2**31)))
            data = to_pyg(tree)
            dist = shortest_path_distances(data.edge_index, num_nodes, max_distance=distance)
            pairs = np.argwhere(dist == distance)
            if len(pairs):
                break
        else:
            raise ValueError(f"no tree on {num_nodes} nodes with a pair at distance {distance} "
                             f"in {_MAX_TRIES} draws")
        s, t = pairs[rng.integers(len(pairs))]
        label = int(rng.integers(num_classes))
        x = torch.zeros(num_nodes, num_classes + 2)
        x[s, label] = 1.0
        x[s, num_classes] = 1.0  # source indicator
        x[t, num_classes + 1] = 1.0  # target indicator
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[t] = True
        data.x, data.y, data.target_mask = x, torch.tensor([label]), mask
        graphs.append(data)
    return graphs


def target_logits(model: torch.nn.Module, batch: Any) -> torch.Tensor:
    """Logits (B, C) read out at each graph's target node: ``model.head`` applied to
    ``model.node_embeddings(batch)[batch.target_mask]`` (one target per graph, in graph order).

    Works for ``SnapshotGNN`` and the graph kit's ``GraphClassifier``; pass it as ``forward`` to
    ``fit_graph_classifier`` / ``evaluate_graph_classifier``.
    """
    h = model.node_embeddings(batch)
    mask = batch.target_mask
    if int(mask.sum()) != batch.num_graphs:
        raise ValueError(f"target_mask must mark exactly one node per graph; got {int(mask.sum())} "
                         f"for {batch.num_graphs} graphs")
    return model.head(h[mask])


def within_receptive_field(data: Any, num_layers: int) -> bool:
    """Whether a ``num_layers``-layer MPNN on ``data.edge_index`` (messages flow row 0 -> row 1,
    PyG's source-to-target) can carry the source's features to the target: a directed path of at
    most ``num_layers`` edges from the node flagged as source (``x[:, -2]``) to the
    ``target_mask`` node. An upper bound on what any such model can learn on that graph."""
    num_layers = _int_at_least("num_layers", num_layers, 0)
    n = int(data.num_nodes)
    src = torch.nonzero(data.x[:, -2]).flatten()
    tgt = torch.nonzero(data.target_mask).flatten()
    if len(src) != 1 or len(tgt) != 1:
        raise ValueError(f"data must flag one source (x[:, -2]) and one target (target_mask); "
                         f"got {len(src)} and {len(tgt)}")
    step = np.zeros((n, n), dtype=bool)
    ei = data.edge_index.cpu().numpy()
    step[ei[0], ei[1]] = True
    np.fill_diagonal(step, True)
    reached = np.zeros(n, dtype=bool)
    reached[int(src[0])] = True
    for _ in range(num_layers):
        reached = (reached.astype(np.float32) @ step.astype(np.float32)) > 0
    return bool(reached[int(tgt[0])])
