"""How local and how sparse a rewiring is, and how much it relieves over-squashing (paper Sec. 3:
desiderata (i) reduce over-squashing, (ii) respect locality, (iii) keep the graph sparse).

- :func:`added_edge_distances`: the original hop distance spanned by every added edge
  (locality; LASER's are 2..L+1 by construction).
- :func:`edge_growth`: (|E'| - |E|) / |E| in ``edge_index`` columns, i.e. in messages passed per
  layer (sparsity; 0 = nothing added).
- :func:`resistance_drop`: 1 - R_tot(G') / R_tot(G), the relative drop of the total effective
  resistance (over-squashing, Black et al. 2023; the paper's Fig. 3 reports such drops).
  ``total_effective_resistance`` itself comes from the graph kit and is re-exported here.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from iclr24.kits.graphs import dense_adjacency, shortest_path_distances, total_effective_resistance

from .rewiring import _graph_arrays

__all__ = ["added_edge_distances", "added_mask", "edge_growth", "resistance_drop",
           "total_effective_resistance"]


def _pair(data_orig: Any, data_rewired: Any) -> tuple[Any, Any, int]:
    e0, n0 = _graph_arrays(data_orig)
    e1, n1 = _graph_arrays(data_rewired)
    if n0 != n1:
        raise ValueError(f"data_orig and data_rewired must have the same nodes; got {n0} and "
                         f"{n1} nodes")
    return e0, e1, n0


def added_mask(data_orig: Any, data_rewired: Any) -> torch.Tensor:
    """Bool (E',): which columns of ``data_rewired.edge_index`` join nodes that are neither equal
    nor adjacent in ``data_orig`` (adjacency read as undirected)."""
    e0, e1, n = _pair(data_orig, data_rewired)
    adj = dense_adjacency(e0, n) > 0
    np.fill_diagonal(adj, True)
    src, dst = e1.cpu().numpy()
    return torch.as_tensor(~adj[src, dst], device=e1.device)


def added_edge_distances(data_orig: Any, data_rewired: Any) -> torch.Tensor:
    """LongTensor (A,): d_G(u, v) in the original graph for each added column (u, v) of
    ``data_rewired.edge_index``, in column order; -1 for pairs in different components."""
    e0, e1, n = _pair(data_orig, data_rewired)
    dist = shortest_path_distances(e0, n)
    mask = added_mask(data_orig, data_rewired).cpu().numpy()
    src, dst = e1.cpu().numpy()[:, mask]
    return torch.as_tensor(dist[src, dst], dtype=torch.long)


def edge_growth(data_orig: Any, data_rewired: Any) -> float:
    """(|E'| - |E|) / |E| counting ``edge_index`` columns (the messages of one layer)."""
    e0, e1, _ = _pair(data_orig, data_rewired)
    if e0.shape[1] == 0:
        raise ValueError("data_orig has no edges; edge growth is undefined")
    return (e1.shape[1] - e0.shape[1]) / e0.shape[1]


def resistance_drop(data_orig: Any, data_rewired: Any) -> float:
    """1 - R_tot(rewired) / R_tot(original) on the undirected graphs (both must be connected for
    the ratio to mean what it says; pairs in different components are left out of R_tot)."""
    e0, e1, n = _pair(data_orig, data_rewired)
    before = total_effective_resistance(e0, n)
    if before == 0:
        raise ValueError("data_orig has zero total effective resistance (no connected pair)")
    return 1.0 - total_effective_resistance(e1, n) / before
