"""A synthetic long-range task on trees, standing in for LRGB (Peptides, PCQM-Contact), which
downloads at run time and is out of reach here.

Each graph is a uniformly random tree; a source s and a target t at hop distance exactly
``distance`` are drawn; s carries a one-hot class among ``num_classes`` plus a source indicator,
t a target indicator, every other node zeros. The label is s's class, read out at t: a T-layer
MPNN on the original tree cannot see s when distance > T (chance accuracy), while rewiring that
brings s within T hops of t can solve it. Over-squashing is what LASER's lowest-connectivity
choice is meant to relieve; trees are where it is worst (every path is a bridge).

Distractors (``num_distractors`` > 0) make locality matter, the paper's desideratum (ii): they
look exactly like sources (a one-hot class drawn independently of the label, and the source
indicator) but lie at least ``distractor_distance`` hops from t. The label is the class of the
source *nearest* to t, so information that arrives over edges which ignore the graph's distances
is as likely to be a distractor's as the source's. Without distractors any long edge that happens
to land near s helps, which is what random shortcuts do best (not the paper's point).
``source_mask`` marks the true source, ``distractor_mask`` the distractors.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from iclr24.kits.graphs import random_tree, shortest_path_distances, to_pyg

from .rewiring import _int_at_least

__all__ = ["make_long_range_trees", "receptive_field", "target_logits", "within_receptive_field"]

_MAX_TRIES = 1000


def make_long_range_trees(num_graphs: int, num_nodes: int, *, distance: int = 6,
                          num_classes: int = 4, num_distractors: int = 0,
                          distractor_distance: int | None = None, seed: int) -> list[Any]:
    """``num_graphs`` Data objects: ``x`` (n, num_classes + 2), ``edge_index`` (tree, both
    directions), ``y`` (1,), and bool node masks (n,) ``target_mask`` (t), ``source_mask`` (s)
    and ``distractor_mask`` (the distractors; all False when ``num_distractors`` = 0).

    (s, t) is drawn uniformly among the pairs at hop distance ``distance`` whose t has at least
    ``num_distractors`` nodes at distance >= ``distractor_distance``; the distractors are drawn
    uniformly among those nodes. Trees without such a pair are redrawn. Classes (the label and
    each distractor's) are drawn uniformly and independently.
    """
    num_graphs = _int_at_least("num_graphs", num_graphs, 1)
    num_nodes = _int_at_least("num_nodes", num_nodes, 2)
    distance = _int_at_least("distance", distance, 1)
    num_classes = _int_at_least("num_classes", num_classes, 2)
    num_distractors = _int_at_least("num_distractors", num_distractors, 0)
    if distance >= num_nodes:
        raise ValueError(f"distance must be < num_nodes = {num_nodes}; got {distance}")
    if num_distractors and distractor_distance is None:
        raise ValueError("distractor_distance is required when num_distractors > 0")
    if distractor_distance is not None:
        distractor_distance = _int_at_least("distractor_distance", distractor_distance,
                                            distance + 1)
    if num_distractors + 2 > num_nodes:
        raise ValueError(f"num_distractors must leave room for s and t among num_nodes = "
                         f"{num_nodes}; got {num_distractors}")
    rng = np.random.default_rng(seed)
    graphs = []
    for _ in range(num_graphs):
        for _ in range(_MAX_TRIES):
            tree = random_tree(num_nodes, seed=int(rng.integers(2**31)))
            data = to_pyg(tree)
            dist = shortest_path_distances(data.edge_index, num_nodes)
            pairs = np.argwhere(dist == distance)  # rows (s, t)
            if num_distractors:
                far = (dist >= distractor_distance).sum(axis=0)  # nodes far enough from each t
                pairs = pairs[far[pairs[:, 1]] >= num_distractors]
            if len(pairs):
                break
        else:
            raise ValueError(f"no tree on {num_nodes} nodes with a pair at distance {distance} "
                             f"(and {num_distractors} nodes at distance >= "
                             f"{distractor_distance} from t) in {_MAX_TRIES} draws")
        s, t = pairs[rng.integers(len(pairs))]
        label = int(rng.integers(num_classes))
        x = torch.zeros(num_nodes, num_classes + 2)
        x[s, label] = 1.0
        x[s, num_classes] = 1.0  # source indicator
        x[t, num_classes + 1] = 1.0  # target indicator
        distractor_mask = torch.zeros(num_nodes, dtype=torch.bool)
        if num_distractors:
            for d in rng.choice(np.flatnonzero(dist[t] >= distractor_distance),
                                size=num_distractors, replace=False):
                x[d, int(rng.integers(num_classes))] = 1.0  # a class unrelated to the label
                x[d, num_classes] = 1.0  # indistinguishable from s by its features
                distractor_mask[d] = True
        target_mask = torch.zeros(num_nodes, dtype=torch.bool)
        target_mask[t] = True
        source_mask = torch.zeros(num_nodes, dtype=torch.bool)
        source_mask[s] = True
        data.x, data.y = x, torch.tensor([label])
        data.target_mask, data.source_mask = target_mask, source_mask
        data.distractor_mask = distractor_mask
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


def receptive_field(data: Any, num_layers: int) -> torch.Tensor:
    """Bool (n,): the nodes whose features a ``num_layers``-layer MPNN on ``data.edge_index``
    (messages flow row 0 -> row 1, PyG's source-to-target) can carry to the ``target_mask``
    node, i.e. the nodes with a directed path of at most ``num_layers`` edges to it."""
    num_layers = _int_at_least("num_layers", num_layers, 0)
    n = int(data.num_nodes)
    mask = getattr(data, "target_mask", None)
    tgt = torch.nonzero(mask).flatten() if mask is not None else []
    if len(tgt) != 1:
        raise ValueError(f"data must flag one target (target_mask); got {len(tgt)}")
    step = np.zeros((n, n), dtype=np.float32)
    ei = data.edge_index.cpu().numpy()
    step[ei[1], ei[0]] = 1.0  # reversed edges: walk back from t to the nodes that send to it
    np.fill_diagonal(step, 1.0)
    reached = np.zeros(n, dtype=np.float32)
    reached[int(tgt[0])] = 1.0
    for _ in range(num_layers):
        reached = ((step.T @ reached) > 0).astype(np.float32)
    return torch.as_tensor(reached > 0)


def within_receptive_field(data: Any, num_layers: int) -> bool:
    """Whether a ``num_layers``-layer MPNN on ``data.edge_index`` can carry the true source's
    features (``source_mask``) to the target: an upper bound on what any such model can learn
    on that graph (with distractors, a necessary condition only)."""
    src = getattr(data, "source_mask", None)
    if src is None or int(src.sum()) != 1:
        raise ValueError(f"data must flag one source (source_mask); got "
                         f"{0 if src is None else int(src.sum())}")
    return bool(receptive_field(data, num_layers)[src].any())
