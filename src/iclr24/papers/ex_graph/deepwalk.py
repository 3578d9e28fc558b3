"""DeepWalk (Node2Vec with p = q = 1): uniform random walks + skip-gram with negative sampling.

The EX-Graph scripts call PyG's ``Node2Vec`` (128-d, walk length 20, context 5, 10 walks per
node, one negative, SparseAdam lr 0.01). PyG's walker needs pyg-lib or torch-cluster, neither of
which installs here (no wheels for this torch on PyPI), so the walks are drawn with numpy on a
CSR of the symmetrised graph and the skip-gram loss is PyG's:

    L = -log σ(z_u · z_v)  over (u, v) within a context window of a walk
        -log(1 - σ(z_u · z_n)) over uniform random nodes n                (Perozzi et al. 2014)

Isolated nodes walk in place (as torch-cluster does).
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["deepwalk_embeddings", "uniform_random_walks"]


def uniform_random_walks(edge_index: torch.Tensor, num_nodes: int, *, walk_length: int,
                         walks_per_node: int, seed: int) -> np.ndarray:
    """(num_nodes · walks_per_node, walk_length) uniform walks on the undirected version of the
    graph, each starting node ``walks_per_node`` times; a node without neighbours stays put."""
    if isinstance(walk_length, bool) or not isinstance(walk_length, int) or walk_length < 2:
        raise ValueError(f"walk_length must be an int >= 2; got {walk_length!r}")
    if isinstance(walks_per_node, bool) or not isinstance(walks_per_node, int) \
            or walks_per_node < 1:
        raise ValueError(f"walks_per_node must be a positive int; got {walks_per_node!r}")
    ei = torch.as_tensor(edge_index).long().numpy()
    src = np.concatenate([ei[0], ei[1]])
    dst = np.concatenate([ei[1], ei[0]])
    order = np.argsort(src, kind="stable")
    src, dst = src[order], dst[order]
    rowptr = np.concatenate([[0], np.cumsum(np.bincount(src, minlength=num_nodes))])
    deg = np.diff(rowptr)
    rng = np.random.default_rng(seed)
    walks = np.empty((num_nodes * walks_per_node, walk_length), dtype=np.int64)
    walks[:, 0] = np.tile(np.arange(num_nodes), walks_per_node)
    for t in range(1, walk_length):
        cur = walks[:, t - 1]
        d = deg[cur]
        pick = rowptr[cur] + (rng.random(len(cur)) * np.maximum(d, 1)).astype(np.int64)
        walks[:, t] = np.where(d > 0, dst[np.minimum(pick, len(dst) - 1)], cur)
    return walks


def deepwalk_embeddings(edge_index: torch.Tensor, num_nodes: int, *, dim: int = 128,
                        walk_length: int = 20, context_size: int = 5, walks_per_node: int = 10,
                        num_negative: int = 1, epochs: int = 1, lr: float = 0.01,
                        batch_size: int = 128, seed: int = 0) -> torch.Tensor:
    """(num_nodes, dim) DeepWalk embeddings (defaults: the official scripts' settings)."""
    if isinstance(context_size, bool) or not isinstance(context_size, int) \
            or not 2 <= context_size <= walk_length:
        raise ValueError(f"context_size must be an int in [2, walk_length]; got {context_size!r}")
    gen = torch.Generator().manual_seed(seed)
    emb = torch.nn.Embedding(num_nodes, dim, sparse=True)
    with torch.no_grad():
        emb.weight.normal_(0.0, 1.0, generator=gen)
    opt = torch.optim.SparseAdam(list(emb.parameters()), lr=lr)
    for epoch in range(epochs):
        walks = torch.from_numpy(uniform_random_walks(
            edge_index, num_nodes, walk_length=walk_length, walks_per_node=walks_per_node,
            seed=seed * 1000 + epoch))
        walks = walks[torch.randperm(len(walks), generator=gen)]
        for start in range(0, len(walks), batch_size):
            rw = walks[start:start + batch_size].unfold(1, context_size, 1).reshape(-1,
                                                                                  context_size)
            neg = torch.randint(0, num_nodes, (len(rw) * num_negative, context_size),
                                generator=gen)
            neg[:, 0] = rw[:, 0].repeat(num_negative)
            opt.zero_grad()
            loss = _skipgram_loss(emb, rw, positive=True) + _skipgram_loss(emb, neg,
                                                                            positive=False)
            loss.backward()
            opt.step()
    return emb.weight.detach().clone()


def _skipgram_loss(emb: torch.nn.Embedding, windows: torch.Tensor, *, positive: bool
                   ) -> torch.Tensor:
    h_start = emb(windows[:, :1])  # (B, 1, d)
    h_rest = emb(windows[:, 1:])  # (B, c - 1, d)
    score = (h_start * h_rest).sum(-1).reshape(-1)
    eps = 1e-15
    if positive:
        return -torch.log(torch.sigmoid(score) + eps).mean()  # -log σ(z_u·z_v)
    return -torch.log(1 - torch.sigmoid(score) + eps).mean()  # -log(1 - σ(z_u·z_n))
