"""CSPNet, the periodic E(3)-invariant denoiser of DiffCSP (Jiao et al. 2023, Eq. 5-8), as
DiffCSP++ uses it (official ``cspnet.py`` with the lattice fed as its 6 log coefficients k).

    h_i^0     = W [emb(type_i), time_emb(t)]
    m_ij      = phi_m(h_i, h_j, k, psi(f_j - f_i mod 1))       psi: Fourier features, 2 pi n
    h_i^{l+1} = h_i^l + phi_h(h_i^l, mean_j m_ij)            (LayerNorm on the input, ln=True)
    eps_k     = W_k mean_i h_i^L   (6-d lattice output)
    eps_f,i   = W_f h_i^L          (per-atom coordinate score)

The graph is fully connected within a cell (self-loops included). Inputs are invariant to
rotations (k is rotation-free), periodic translations and permutations. The first linear layer
of phi_m acts on the concatenation [h_i, h_j, k, psi]; it is evaluated as the sum of its four
blocks (node blocks once per atom, not once per edge), the same function at a fraction of the
cost. Official defaults: hidden 512, 6 layers, 128 frequencies, time embedding 256; our claims
use smaller sizes (see the claims).
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["CSPNet", "SinusoidalTimeEmbedding"]


class SinusoidalTimeEmbedding(nn.Module):
    """Transformer sinusoids of the (integer) diffusion step: (B,) -> (B, dim)."""

    def __init__(self, dim: int) -> None:
        super().__init__()
        if dim < 4 or dim % 2:
            raise ValueError(f"dim must be an even int >= 4, got {dim}")
        self.dim = dim

    def forward(self, t: torch.Tensor) -> torch.Tensor:
        half = self.dim // 2
        freq = torch.exp(torch.arange(half, device=t.device) * -(math.log(10000) / (half - 1)))
        arg = t.to(freq.dtype)[:, None] * freq[None, :]
        return torch.cat([arg.sin(), arg.cos()], dim=-1)


def _fourier(d: torch.Tensor, n_freqs: int) -> torch.Tensor:
    """(E, 3) fractional differences -> (E, 6 n_freqs) [sin(2 pi n d), cos(2 pi n d)]."""
    freqs = 2 * math.pi * torch.arange(n_freqs, device=d.device, dtype=d.dtype)
    arg = (d[:, :, None] * freqs).reshape(d.shape[0], -1)
    return torch.cat([arg.sin(), arg.cos()], dim=-1)


def _mean_by(x: torch.Tensor, index: torch.Tensor, size: int) -> torch.Tensor:
    out = torch.zeros(size, x.shape[1], dtype=x.dtype, device=x.device)
    out.index_add_(0, index, x)
    cnt = torch.zeros(size, dtype=x.dtype, device=x.device)
    cnt.index_add_(0, index, torch.ones_like(index, dtype=x.dtype))
    return out / cnt.clamp_min(1)[:, None]


class _CSPLayer(nn.Module):
    def __init__(self, hidden: int, dis_dim: int, lattice_dim: int, layer_norm: bool) -> None:
        super().__init__()
        self.hidden = hidden
        self.edge_in = nn.Linear(2 * hidden + lattice_dim + dis_dim, hidden)
        self.edge_out = nn.Linear(hidden, hidden)
        self.node_mlp = nn.Sequential(nn.Linear(2 * hidden, hidden), nn.SiLU(),
                                      nn.Linear(hidden, hidden), nn.SiLU())
        self.norm = nn.LayerNorm(hidden) if layer_norm else nn.Identity()
        self.lattice_dim = lattice_dim

    def forward(self, h: torch.Tensor, lat: torch.Tensor, psi: torch.Tensor,
                edges: torch.Tensor, node2graph: torch.Tensor) -> torch.Tensor:
        x = self.norm(h)
        H, L = self.hidden, self.lattice_dim
        W, b = self.edge_in.weight, self.edge_in.bias
        node_i = F.linear(x, W[:, :H])  # block of h_i
        node_j = F.linear(x, W[:, H:2 * H])  # block of h_j
        graph = F.linear(lat, W[:, 2 * H:2 * H + L], b)  # block of the lattice (+ bias)
        src, dst = edges
        pre = node_i[src] + node_j[dst] + graph[node2graph[src]] + F.linear(psi, W[:, 2 * H + L:])
        m = F.silu(self.edge_out(F.silu(pre)))  # phi_m
        agg = _mean_by(m, src, h.shape[0])
        return h + self.node_mlp(torch.cat([x, agg], dim=1))  # residual phi_h


class CSPNet(nn.Module):
    """Denoiser: ``forward(t, atom_types, frac, k, batch_edges, node2graph, num_crystals)`` ->
    (lattice_out (B, 6), coord_out (N, 3)).

    hidden: width; layers: message-passing layers; num_freqs: Fourier frequencies of the
    fractional differences; time_dim: sinusoidal time embedding; max_types: atomic-number
    vocabulary (types are atomic numbers 1..max_types - 1).
    """

    def __init__(self, hidden: int = 128, layers: int = 4, num_freqs: int = 10,
                 time_dim: int = 256, max_types: int = 100, layer_norm: bool = True) -> None:
        super().__init__()
        for name, v in (("hidden", hidden), ("layers", layers), ("num_freqs", num_freqs),
                        ("max_types", max_types)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        self.num_freqs, self.max_types = num_freqs, max_types
        self.time_embedding = SinusoidalTimeEmbedding(time_dim)
        self.type_embedding = nn.Embedding(max_types, hidden)
        self.atom_in = nn.Linear(hidden + time_dim, hidden)
        self.layers = nn.ModuleList(_CSPLayer(hidden, 6 * num_freqs, 6, layer_norm)
                                    for _ in range(layers))
        self.final_norm = nn.LayerNorm(hidden) if layer_norm else nn.Identity()
        self.coord_out = nn.Linear(hidden, 3, bias=False)
        self.lattice_out = nn.Linear(hidden, 6, bias=False)

    def forward(self, t: torch.Tensor, atom_types: torch.Tensor, frac: torch.Tensor,
                k: torch.Tensor, edges: torch.Tensor, node2graph: torch.Tensor
                ) -> tuple[torch.Tensor, torch.Tensor]:
        """t: (B,) steps; atom_types: (N,); frac: (N, 3); k: (B, 6); edges: (2, E);
        node2graph: (N,)."""
        if atom_types.min() < 0 or atom_types.max() >= self.max_types:
            raise ValueError(f"atom_types must lie in [0, {self.max_types})")
        B = k.shape[0]
        temb = self.time_embedding(t).to(frac.dtype)[node2graph]
        h = self.atom_in(torch.cat([self.type_embedding(atom_types), temb], dim=1))
        src, dst = edges
        psi = _fourier((frac[dst] - frac[src]) % 1.0, self.num_freqs)
        for layer in self.layers:
            h = layer(h, k, psi, edges, node2graph)
        h = self.final_norm(h)
        pooled = _mean_by(h, node2graph, B)
        return self.lattice_out(pooled), self.coord_out(h)
