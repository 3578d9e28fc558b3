"""The Rayleigh-quotient vector r_G of a graph signal (RQGNN, Sec. 3-4, the input of RQL).

For a graph with symmetric normalised Laplacian L = I - D^{-1/2} A D^{-1/2} and node features
X in R^{n x d}, channel j has Rayleigh quotient

    r_G[j] = x_j^T L x_j / x_j^T x_j                       (paper Sec. 3)

and with L = U diag(lambda) U^T, x_hat = U^T x_j it equals sum_k lambda_k x_hat_k^2 / sum_k
x_hat_k^2, the energy-weighted mean frequency ("accumulated spectral energy", paper Sec. 3).

It is computed here by message passing over the edge list, never a dense matrix:

    x^T L x = 1/2 sum_{(u, v) in E, both directions} (x_u / sqrt(d_u) - x_v / sqrt(d_v))^2,

which matches ``scipy.sparse.csgraph.laplacian(A, normed=True)`` also on isolated nodes (degree 0:
a zero row and column of L, so the node contributes nothing to x^T L x). A channel that is zero
on a graph gets r = 0 (0/0 guarded); non-finite features are refused (``ValueError``), since
NaN would fail the x^T x > 0 test and read as such an absent channel. ``normalize=False``
returns the official code's quantity, diag(X^T L X) without the division by x^T x (code: ``utils.generate_batches``).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["rayleigh_quotient"]


def _check_inputs(x: Any, edge_index: Any, batch: Any,
                  num_graphs: int | None) -> tuple[torch.Tensor, torch.Tensor, int]:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() != 2:
        raise TypeError(f"x must be a floating-point tensor of shape (num_nodes, d); got "
                        f"{type(x).__name__} {tuple(getattr(x, 'shape', ()))}")
    n = x.shape[0]
    if n == 0:
        raise ValueError("x has 0 rows: an empty graph has no Rayleigh quotient")
    if not bool(torch.isfinite(x).all()):
        bad = torch.nonzero(~torch.isfinite(x))[:3].tolist()
        raise ValueError(f"x must be finite; got NaN or inf at (node, channel) {bad}: a NaN would "
                         "otherwise read as an absent channel (r = 0)")
    if not isinstance(edge_index, torch.Tensor) or edge_index.dtype != torch.long \
            or edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise TypeError(f"edge_index must be a LongTensor of shape (2, E); got "
                        f"{type(edge_index).__name__} {tuple(getattr(edge_index, 'shape', ()))}")
    if edge_index.numel() and (int(edge_index.min()) < 0 or int(edge_index.max()) >= n):
        raise ValueError(f"edge_index holds node ids outside [0, {n})")
    if batch is None:
        batch = torch.zeros(n, dtype=torch.long, device=x.device)
    elif not isinstance(batch, torch.Tensor) or batch.dtype != torch.long \
            or batch.shape != (n,):
        raise TypeError(f"batch must be a LongTensor of shape (num_nodes={n},); got "
                        f"{type(batch).__name__} {tuple(getattr(batch, 'shape', ()))}")
    elif int(batch.min()) < 0:
        raise ValueError("batch holds negative graph ids")
    b = int(batch.max()) + 1 if num_graphs is None else num_graphs
    if isinstance(b, bool) or not isinstance(b, int) or b < int(batch.max()) + 1:
        raise ValueError(f"num_graphs must be an int >= max(batch) + 1 = {int(batch.max()) + 1}; "
                         f"got {num_graphs!r}")
    sizes = torch.bincount(batch, minlength=b)
    if bool((sizes == 0).any()):
        empty = torch.nonzero(sizes == 0).flatten().tolist()
        raise ValueError(f"graphs {empty[:5]} have no nodes: an empty graph has no Rayleigh "
                         "quotient")
    from torch_geometric.utils import is_undirected

    if edge_index.numel() and not is_undirected(edge_index, num_nodes=n):
        raise ValueError("edge_index must be undirected (every edge in both directions)")
    return edge_index, batch, b


def rayleigh_quotient(x: torch.Tensor, edge_index: torch.Tensor,
                      batch: torch.Tensor | None = None, *, normalize: bool = True,
                      num_graphs: int | None = None) -> torch.Tensor:
    """Per-graph, per-channel Rayleigh quotient of the node features.

    x: (N, d) float node features of B graphs stacked (a PyG batch); edge_index: (2, E) long,
    undirected (both directions; self loops are ignored, as L is defined on A without its
    diagonal); batch: (N,) graph id per node (None: one graph); num_graphs: B when trailing
    graph ids are not in ``batch``.

    Returns (B, d): x_j^T L x_j / x_j^T x_j per graph (``normalize=True``, the paper; 0 where
    the channel is zero on the graph) or x_j^T L x_j (``normalize=False``, the official code).
    Differentiable in ``x``; uses the device and dtype of ``x``.
    """
    if not isinstance(normalize, bool):
        raise TypeError(f"normalize must be a bool; got {normalize!r}")
    edge_index, batch, b = _check_inputs(x, edge_index, batch, num_graphs)
    from torch_geometric.utils import remove_self_loops, scatter

    edge_index, _ = remove_self_loops(edge_index)
    src, dst = edge_index
    n = x.shape[0]
    deg = torch.bincount(src, minlength=n).to(x.dtype)
    inv_sqrt = torch.where(deg > 0, deg.clamp(min=1).rsqrt(), torch.zeros_like(deg))
    y = x * inv_sqrt[:, None]  # D^{-1/2} x
    diff2 = (y[src] - y[dst]).pow(2)  # (E, d)
    # x^T L x = 1/2 sum over both directions of (x_u/sqrt(d_u) - x_v/sqrt(d_v))^2, per graph
    xlx = 0.5 * scatter(diff2, batch[src], dim=0, dim_size=b, reduce="sum")
    if not normalize:
        return xlx
    xx = scatter(x.pow(2), batch, dim=0, dim_size=b, reduce="sum")  # x^T x per graph
    # r_G[j] = x_j^T L x_j / x_j^T x_j, with 0/0 := 0 for a channel absent from the graph
    return torch.where(xx > 0, xlx / xx.clamp(min=torch.finfo(x.dtype).tiny), torch.zeros_like(xx))
