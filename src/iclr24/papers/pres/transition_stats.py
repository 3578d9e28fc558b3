"""Per-node running statistics of memory transitions (PRES Sec. 4.1, the "prediction" model).

PRES models how a node's memory moves when it is updated, delta_i = s_i(after) - s_i(before), so
that a stale memory can be pushed forward by the expected change. The paper fits a Gaussian
mixture per node; the minimal version kept here is one Gaussian per node with a diagonal
covariance, tracked by exact streaming moments: count n_i, mean mu_i and the sum of squared
deviations M2_i (Welford's algorithm, merged per batch with Chan et al.'s parallel update), so
that after any sequence of updates

    mean[i] = (1 / n_i) sum_k delta_ik,     var[i] = M2[i] / n_i   (population variance)

equal the batch statistics of every delta ever recorded for node i (a test checks this).

Differences from the official code (jwsu825/MDGNN_BS, ``modules/filter.py``): there the update
adds 1 to the running *sum* instead of to the count, so the count stays 0 and its mean divides by
zero; the prediction instead min-max rescales the running sum of increments to [-1, 1] over all
nodes each batch. Here the count, mean and variance are correct per node, and a node that has not
been updated yet predicts no change.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

__all__ = ["MemoryTransitionStats"]


def _check_positive_int(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}")
    return value


class MemoryTransitionStats(nn.Module):
    """Streaming per-node mean and variance of memory changes, kept as registered buffers.

    Args:
        num_nodes: number of nodes N (node ids 0..N-1).
        dim: memory dimension d.
        dtype: floating dtype of the buffers (they follow ``.to()`` / ``.double()`` like any
            buffer).

    Buffers: ``count`` (N,) number of recorded changes per node, ``mean`` (N, d) and ``m2``
    (N, d) the running mean and sum of squared deviations of those changes.
    """

    count: Tensor
    mean: Tensor
    m2: Tensor

    def __init__(self, num_nodes: int, dim: int, *, dtype: torch.dtype = torch.float32) -> None:
        super().__init__()
        self.num_nodes = _check_positive_int(num_nodes, "num_nodes")
        self.dim = _check_positive_int(dim, "dim")
        if not isinstance(dtype, torch.dtype) or not dtype.is_floating_point:
            raise TypeError(f"dtype must be a floating torch.dtype, got {dtype!r}")
        self.register_buffer("count", torch.zeros(num_nodes, dtype=dtype))
        self.register_buffer("mean", torch.zeros(num_nodes, dim, dtype=dtype))
        self.register_buffer("m2", torch.zeros(num_nodes, dim, dtype=dtype))

    def reset_state(self) -> None:
        """Forget every recorded change (all buffers to zero)."""
        self.count.zero_()
        self.mean.zero_()
        self.m2.zero_()

    def _check_nodes(self, nodes: Tensor) -> Tensor:
        if not isinstance(nodes, Tensor) or nodes.dtype not in (torch.int64, torch.int32):
            raise TypeError(f"nodes must be an integer (long) tensor, got "
                            f"{getattr(nodes, 'dtype', type(nodes))}")
        if nodes.dim() != 1:
            raise ValueError(f"nodes must be 1-D, got shape {tuple(nodes.shape)}")
        if nodes.numel() and (int(nodes.min()) < 0 or int(nodes.max()) >= self.num_nodes):
            raise ValueError(f"nodes must be ids in [0, {self.num_nodes}); got ids in "
                             f"[{int(nodes.min())}, {int(nodes.max())}]")
        return nodes.long()

    def _check_values(self, values: Tensor, nodes: Tensor, name: str) -> None:
        if not isinstance(values, Tensor) or not values.is_floating_point():
            raise TypeError(f"{name} must be a floating tensor")
        if values.shape != (nodes.numel(), self.dim):
            raise ValueError(f"{name} must have shape ({nodes.numel()}, {self.dim}) to match "
                             f"nodes, got {tuple(values.shape)}")

    @torch.no_grad()
    def update(self, nodes: Tensor, delta: Tensor) -> None:
        """Record the changes ``delta`` (K, d) of nodes ``nodes`` (K,); ids may repeat, and
        ``delta`` must be finite (ValueError otherwise).

        Each node's new values are reduced to a batch count / mean / M2 and merged with the
        running ones (Chan et al.): with n = n_a + n_b and D = mean_b - mean_a,
        mean = mean_a + D n_b / n and M2 = M2_a + M2_b + D^2 n_a n_b / n.
        """
        nodes = self._check_nodes(nodes)
        self._check_values(delta, nodes, "delta")
        if nodes.numel() == 0:
            return
        if not bool(torch.isfinite(delta).all()):  # one NaN would poison the node's mean forever
            raise ValueError("delta must be finite; got NaN or infinite memory changes for "
                             f"nodes {nodes[~torch.isfinite(delta).all(dim=1)].tolist()[:5]}")
        delta = delta.detach().to(self.mean.dtype)
        uniq, inverse = torch.unique(nodes, return_inverse=True)
        k = uniq.numel()
        n_b = torch.zeros(k, dtype=delta.dtype, device=delta.device).index_add_(
            0, inverse, torch.ones_like(inverse, dtype=delta.dtype))
        sum_b = torch.zeros(k, self.dim, dtype=delta.dtype, device=delta.device).index_add_(
            0, inverse, delta)
        mean_b = sum_b / n_b[:, None]
        dev = delta - mean_b[inverse]
        m2_b = torch.zeros_like(sum_b).index_add_(0, inverse, dev * dev)

        n_a, mean_a, m2_a = self.count[uniq], self.mean[uniq], self.m2[uniq]
        n = n_a + n_b
        diff = mean_b - mean_a
        self.mean[uniq] = mean_a + diff * (n_b / n)[:, None]  # Chan: mean_a + D n_b / n
        self.m2[uniq] = m2_a + m2_b + diff * diff * (n_a * n_b / n)[:, None]
        self.count[uniq] = n

    def variance(self, nodes: Tensor) -> Tensor:
        """Population variance M2 / n of each node's recorded changes, (K, d); 0 where n = 0."""
        nodes = self._check_nodes(nodes)
        n = self.count[nodes].clamp_min(1.0)
        return self.m2[nodes] / n[:, None]

    def predict(self, nodes: Tensor, prev: Tensor) -> Tensor:
        """Predicted memory s_hat = s_prev + mu (K, d) for nodes (K,) with memories prev (K, d).

        A node with no recorded change has mu = 0 (its prediction is its memory).
        """
        nodes = self._check_nodes(nodes)
        self._check_values(prev, nodes, "prev")
        return prev + self.mean[nodes].to(prev.dtype)  # s_hat_i = s_i^prev + mu_i
