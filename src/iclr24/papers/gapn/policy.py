"""GAPN's networks: a GCN over the chain graph, the edge-scoring policy, the value network and
the adversarial discriminator (paper Sec. 3–4).

The chain graph has one node per chain and edge weights A_ij = dimer confidence. Each GCN layer
is (paper Eq. 4, Kipf & Welling)

    H^{l+1} = ReLU(D̃^{-1/2} Ã D̃^{-1/2} H^l W^l),   Ã = A + I,  D̃ = diag(Σ_j Ã_ij).

The policy scores a candidate action (i, j) by an MLP on [h_i, h_j, e_ij] and takes a softmax
over the valid pairs only (i placed, j unplaced; the rest are set to −inf before the softmax,
so the action count changes every step). The value network pools node embeddings (mean and
sum/10). The discriminator D_φ(s, a) has its own GCN and scores [h_i, h_j, e_ij] with an MLP;
it is trained to separate native-contact actions from the policy's, and the policy's
adversarial reward is log D_φ(s, a) (paper Eq. 3, GAIL-style).

Inputs are padded batches: node_features (B, N, 4), edge_features (B, N, N, 4), adjacency
(B, N, N), action_mask (B, N, N) bool, node_mask (B, N) bool (True for real chains);
``batch_observations`` builds them from environment observations. The paper's node features are
pooled protein-language-model embeddings; ours are chain size, radius, mean dimer confidence and
the placed flag (no sequences exist in the synthetic benchmark).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from iclr24.kits.reinforcement import mlp

from .environment import EDGE_FEATURES, NODE_FEATURES

__all__ = ["AssemblyDiscriminator", "EdgeScorer", "GAPNPolicy", "GCNEncoder", "ValueNetwork",
           "batch_observations", "normalized_adjacency"]


def normalized_adjacency(adjacency: torch.Tensor, node_mask: torch.Tensor) -> torch.Tensor:
    """D̃^{-1/2} (A + I) D̃^{-1/2} per graph, (B, N, N); padded nodes get zero rows/columns."""
    m = node_mask.to(adjacency.dtype)
    a = adjacency * m[:, :, None] * m[:, None, :]
    a = a + torch.diag_embed(m)                   # Ã = A + I on real nodes
    deg = a.sum(-1)
    inv = torch.where(deg > 0, deg.clamp_min(1e-12).rsqrt(), torch.zeros_like(deg))
    return inv[:, :, None] * a * inv[:, None, :]  # D̃^{-1/2} Ã D̃^{-1/2}


class GCNEncoder(nn.Module):
    """An input projection and ``layers`` GCN layers: (B, N, F) -> (B, N, hidden)."""

    def __init__(self, in_dim: int = NODE_FEATURES, hidden: int = 64, layers: int = 3) -> None:
        super().__init__()
        if layers < 1 or hidden < 1:
            raise ValueError(f"layers and hidden must be >= 1; got {layers}, {hidden}")
        self.inp = nn.Linear(in_dim, hidden)
        self.layers = nn.ModuleList(nn.Linear(hidden, hidden) for _ in range(layers))

    def forward(self, node_features: torch.Tensor, adjacency: torch.Tensor,
                node_mask: torch.Tensor) -> torch.Tensor:
        a_hat = normalized_adjacency(adjacency, node_mask)
        h = torch.relu(self.inp(node_features))
        for layer in self.layers:
            h = torch.relu(a_hat @ layer(h))  # H' = ReLU(Â H W)
        return h * node_mask[..., None].to(h.dtype)


class EdgeScorer(nn.Module):
    """MLP([h_i, h_j, e_ij]) -> scalar for every ordered pair, (B, N, H), (B, N, N, E) ->
    (B, N, N). The first layer is split as W_a h_i + W_b h_j + W_e e_ij + b (the same linear
    map on the concatenation) so the (B, N, N, 2H + E) input is never materialised."""

    def __init__(self, hidden: int, edge_dim: int = EDGE_FEATURES) -> None:
        super().__init__()
        self.src = nn.Linear(hidden, hidden)
        self.dst = nn.Linear(hidden, hidden, bias=False)
        self.edge = nn.Linear(edge_dim, hidden, bias=False)
        self.out = mlp(hidden, 1, ())

    def forward(self, h: torch.Tensor, edge_features: torch.Tensor) -> torch.Tensor:
        z = self.src(h)[:, :, None, :] + self.dst(h)[:, None, :, :] + self.edge(edge_features)
        return self.out(torch.relu(z)).squeeze(-1)

    def pairs(self, h_i: torch.Tensor, h_j: torch.Tensor, e_ij: torch.Tensor) -> torch.Tensor:
        """Scores of given pairs: (B, H), (B, H), (B, E) -> (B,)."""
        z = self.src(h_i) + self.dst(h_j) + self.edge(e_ij)
        return self.out(torch.relu(z)).squeeze(-1)


class GAPNPolicy(nn.Module):
    """π_θ(a = (i, j) | s): logits over valid pairs from a GCN and an edge MLP."""

    def __init__(self, hidden: int = 64, layers: int = 3) -> None:
        super().__init__()
        self.encoder = GCNEncoder(NODE_FEATURES, hidden, layers)
        self.edge_mlp = EdgeScorer(hidden)

    def forward(self, node_features: torch.Tensor, edge_features: torch.Tensor,
                adjacency: torch.Tensor, action_mask: torch.Tensor,
                node_mask: torch.Tensor) -> torch.Tensor:
        """Logits (B, N·N) over flattened pairs i·N + j, −inf where the action is invalid."""
        if not bool(action_mask.flatten(1).any(-1).all()):
            raise ValueError("action_mask must allow at least one action per state")
        h = self.encoder(node_features, adjacency, node_mask)
        logits = self.edge_mlp(h, edge_features)
        logits = logits.masked_fill(~action_mask, float("-inf"))  # mask before the softmax
        return logits.flatten(1)


class ValueNetwork(nn.Module):
    """V(s): GCN, mean and sum/10 pooling over real nodes, MLP -> (B,)."""

    def __init__(self, hidden: int = 64, layers: int = 3) -> None:
        super().__init__()
        self.encoder = GCNEncoder(NODE_FEATURES, hidden, layers)
        self.head = mlp(2 * hidden, 1, (hidden,))

    def forward(self, node_features: torch.Tensor, adjacency: torch.Tensor,
                node_mask: torch.Tensor) -> torch.Tensor:
        h = self.encoder(node_features, adjacency, node_mask)
        total = h.sum(1)
        count = node_mask.sum(1, keepdim=True).clamp_min(1).to(h.dtype)
        return self.head(torch.cat([total / count, total / 10.0], -1)).squeeze(-1)


class AssemblyDiscriminator(nn.Module):
    """D_φ(s, a): logit that action a = (i, j) in state s is a ground-truth (native) action."""

    def __init__(self, hidden: int = 64, layers: int = 3) -> None:
        super().__init__()
        self.encoder = GCNEncoder(NODE_FEATURES, hidden, layers)
        self.edge_mlp = EdgeScorer(hidden)

    def forward(self, node_features: torch.Tensor, edge_features: torch.Tensor,
                adjacency: torch.Tensor, node_mask: torch.Tensor,
                actions: torch.Tensor) -> torch.Tensor:
        """actions: (B, 2) long pairs (i, j) -> logits (B,)."""
        h = self.encoder(node_features, adjacency, node_mask)
        b = torch.arange(h.shape[0], device=h.device)
        i, j = actions[:, 0], actions[:, 1]
        return self.edge_mlp.pairs(h[b, i], h[b, j], edge_features[b, i, j])


def batch_observations(observations: Sequence[dict[str, np.ndarray]],
                       device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """Pad environment observations of different chain counts into one batch (see module
    docstring for the shapes)."""
    if not observations:
        raise ValueError("observations must be non-empty")
    n = max(len(o["placed"]) for o in observations)
    b = len(observations)
    nodes = np.zeros((b, n, NODE_FEATURES), np.float32)
    edges = np.zeros((b, n, n, EDGE_FEATURES), np.float32)
    adj = np.zeros((b, n, n), np.float32)
    mask = np.zeros((b, n, n), bool)
    node_mask = np.zeros((b, n), bool)
    for k, o in enumerate(observations):
        m = len(o["placed"])
        nodes[k, :m] = o["node_features"]
        edges[k, :m, :m] = o["edge_features"]
        adj[k, :m, :m] = o["adjacency"]
        mask[k, :m, :m] = o["action_mask"].astype(bool)
        node_mask[k, :m] = True
    t = {"node_features": nodes, "edge_features": edges, "adjacency": adj,
         "action_mask": mask, "node_mask": node_mask}
    return {k: torch.from_numpy(v).to(device) for k, v in t.items()}
