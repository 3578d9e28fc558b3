"""RQGNN: Rayleigh-quotient learning (RQL) + Chebyshev-wavelet GNN with RQ-pooling (paper Sec. 4,
Algorithms 1-3; official ``model.GADGNN``).

Shapes for a batch of B graphs with N nodes in total and d input channels (h = ``hidden``):

    r_G   = rayleigh_quotient(X)                                    (B, d)
    h_RQ  = act(W6 (W5 r_G))                                        (B, h)   RQL, Alg. 1
    H0    = act(W2 act(W1 X))                                       (N, d)   node pre-MLP
    H     = act(W4 act(W3 [Cheb_1(H0) | ... | Cheb_q(H0)]))        (N, h)   q = ``width`` filters
    a_G   = act(W9 act(W8 r_G))                                     (B, h)   RQ-pooling weights
    h_G   = sum_{i in G} <H_i, a_G> H_i                             (B, h)   raw scores, Alg. 2
    logits = W7 Dropout(BatchNorm([h_G | h_RQ]))                    (B, 2)   Alg. 3

Each Cheb_t is ``torch_geometric.nn.ChebConv(d, d, K=cheb_k)`` with symmetric normalisation and
lambda_max = 2 (PyG's default, as in the code). act is LeakyReLU (slope 0.01), as in the code.

Differences from the official code, on purpose:
- the Chebyshev convolutions live in an ``nn.ModuleList``. The code keeps them in a plain Python
  list, so their weights are never handed to the optimiser (they stay at their random init) nor
  moved by ``.to(device)``; published numbers come from that untrained-filter variant.
- r_G is computed inside ``forward`` from ``data.x`` by message passing (the code precomputes the
  same quantity per graph with a dense scipy Laplacian); ``normalize_rq`` chooses the paper's
  x^T L x / x^T x (default) or the code's x^T L x.
- ``use_rql`` and ``pooling`` switch the two components off for ablations: ``use_rql=False``
  drops h_RQ (the head then reads h_G alone), ``pooling="sum"``/``"mean"`` replaces RQ-pooling by
  a plain global pool.

BatchNorm1d over graphs needs at least two graphs per training batch (as in the code): a
training-mode forward of a single graph raises a ``ValueError`` saying so (PyTorch's own error
comes from deep inside BatchNorm); in eval mode the running statistics serve one graph fine.
"""

from __future__ import annotations

import torch
from torch import nn

from .rayleigh import rayleigh_quotient

__all__ = ["RQGNN"]

_POOLINGS = ("rq", "sum", "mean")


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")
    return value


class RQGNN(nn.Module):
    """Rayleigh Quotient GNN for graph-level anomaly detection; ``forward(data) -> (B, 2)``.

    in_dim: node feature channels d; hidden: h (64 in the paper); width: number of parallel
    Chebyshev filters q (4); cheb_k: Chebyshev order K (6, the paper's "depth"); dropout: before
    the head (0.4); batch_norm: BatchNorm1d on [h_G | h_RQ] (on in the paper); normalize_rq:
    paper (True) or code (False) Rayleigh quotient; use_rql / pooling: ablation switches.
    """

    def __init__(self, in_dim: int, hidden: int = 64, width: int = 4, cheb_k: int = 6,
                 dropout: float = 0.4, *, normalize_rq: bool = True, batch_norm: bool = True,
                 use_rql: bool = True, pooling: str = "rq", num_classes: int = 2) -> None:
        super().__init__()
        from torch_geometric.nn import ChebConv

        d, h = _positive_int("in_dim", in_dim), _positive_int("hidden", hidden)
        q, k = _positive_int("width", width), _positive_int("cheb_k", cheb_k)
        _positive_int("num_classes", num_classes)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) \
                or not 0.0 <= dropout < 1.0:
            raise ValueError(f"dropout must be a number in [0, 1); got {dropout!r}")
        if pooling not in _POOLINGS:
            raise ValueError(f"pooling must be one of {_POOLINGS}; got {pooling!r}")
        for name, flag in (("normalize_rq", normalize_rq), ("batch_norm", batch_norm),
                           ("use_rql", use_rql)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool; got {flag!r}")
        self.in_dim, self.normalize_rq, self.use_rql, self.pooling = d, normalize_rq, use_rql, pooling
        self.act = nn.LeakyReLU()
        self.pre1, self.pre2 = nn.Linear(d, d), nn.Linear(d, d)  # W1, W2
        self.cheb = nn.ModuleList(ChebConv(d, d, K=k, normalization="sym") for _ in range(q))
        self.post1, self.post2 = nn.Linear(q * d, h), nn.Linear(h, h)  # W3, W4
        self.pool1, self.pool2 = nn.Linear(d, h), nn.Linear(h, h)  # W8, W9 (RQ-pooling)
        self.rql1, self.rql2 = nn.Linear(d, h), nn.Linear(h, h)  # W5, W6 (RQL)
        head_in = 2 * h if use_rql else h
        self.norm = nn.BatchNorm1d(head_in) if batch_norm else nn.Identity()
        self.drop = nn.Dropout(dropout)
        self.head = nn.Linear(head_in, num_classes)  # W7

    def node_embeddings(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        """H (N, hidden): pre-MLP, q parallel Chebyshev filters, post-MLP."""
        h0 = self.act(self.pre2(self.act(self.pre1(x))))  # H0 = act(W2 act(W1 X))
        filtered = torch.cat([conv(h0, edge_index) for conv in self.cheb], dim=-1)  # (N, q d)
        return self.act(self.post2(self.act(self.post1(filtered))))  # act(W4 act(W3 .))

    def forward(self, data) -> torch.Tensor:
        """Logits (B, num_classes) for a PyG ``Batch`` (or one ``Data``) with ``x``, ``edge_index``."""
        x, edge_index = getattr(data, "x", None), getattr(data, "edge_index", None)
        if not isinstance(x, torch.Tensor) or x.dim() != 2 or x.shape[1] != self.in_dim:
            raise ValueError(f"data.x must be a tensor of shape (N, in_dim={self.in_dim}); got "
                             f"{tuple(getattr(x, 'shape', ()))}")
        x = x.float()
        batch = getattr(data, "batch", None)
        if batch is None:
            batch = torch.zeros(x.shape[0], dtype=torch.long, device=x.device)
        num_graphs = int(getattr(data, "num_graphs", 1) or 1)
        if self.training and isinstance(self.norm, nn.BatchNorm1d) and num_graphs < 2:
            raise ValueError("a training batch must hold at least 2 graphs: BatchNorm1d over "
                             f"graphs has no batch statistics for {num_graphs} graph (call "
                             "model.eval() to score a single graph, or build RQGNN with "
                             "batch_norm=False)")
        r = rayleigh_quotient(x, edge_index, batch, normalize=self.normalize_rq,
                              num_graphs=num_graphs)  # r_G (B, d)
        from torch_geometric.utils import scatter

        h = self.node_embeddings(x, edge_index)
        if self.pooling == "rq":
            a = self.act(self.pool2(self.act(self.pool1(r))))  # a_G = act(W9 act(W8 r_G))
            scores = (h * a[batch]).sum(dim=-1, keepdim=True)  # s_i = <H_i, a_G>
            h_graph = scatter(scores * h, batch, dim=0, dim_size=num_graphs, reduce="sum")
        else:
            h_graph = scatter(h, batch, dim=0, dim_size=num_graphs, reduce=self.pooling)
        if self.use_rql:
            h_rq = self.act(self.rql2(self.rql1(r)))  # h_RQ = act(W6 W5 r_G)
            h_graph = torch.cat([h_graph, h_rq], dim=-1)
        return self.head(self.drop(self.norm(h_graph)))
