"""The code-index predictor of DAEFR stage 3 (CodeFormer's transformer; official
``DAEFR/models/daefr.py``: ``feat_emb``, ``position_emb``, ``TransformerSALayer``,
``idx_pred_layer``).

Each of the h*w feature vectors is a token: a linear map to ``dim``, ``layers`` pre-LayerNorm
self-attention layers (the learned positional embedding is added to queries and keys only, as in
CodeFormer), GELU MLP of width ``mlp``, then LayerNorm + a bias-free linear map to one logit per
code. Paper: 256 -> 512, 9 layers, 8 heads, MLP 1024, 256 positions, 1024 codes; the claims use
32 -> 64, 3 layers, 4 heads, MLP 128, 16 positions, 64 codes.
"""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["CodePredictor"]


class _SelfAttentionLayer(nn.Module):
    def __init__(self, dim: int, heads: int, mlp: int) -> None:
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

    def forward(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        h = self.norm1(x)
        qk = h + pos  # position enters queries and keys, not values
        x = x + self.attn(qk, qk, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class CodePredictor(nn.Module):
    """``forward(f)`` with f: (B, in_dim, h, w), h*w == n_positions -> logits (B, h*w, n_codes)
    in row-major position order (the order of a (B, h, w) index grid flattened)."""

    def __init__(self, in_dim: int = 256, dim: int = 512, layers: int = 9, heads: int = 8,
                 mlp: int = 1024, n_codes: int = 1024, n_positions: int = 256) -> None:
        super().__init__()
        for arg, v in (("in_dim", in_dim), ("dim", dim), ("layers", layers), ("heads", heads),
                       ("mlp", mlp), ("n_codes", n_codes), ("n_positions", n_positions)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{arg} must be a positive int, got {v!r}")
        if dim % heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.in_dim, self.n_codes, self.n_positions = in_dim, n_codes, n_positions
        self.feat_emb = nn.Linear(in_dim, dim)
        self.position_emb = nn.Parameter(torch.zeros(n_positions, dim))
        self.layers = nn.ModuleList(_SelfAttentionLayer(dim, heads, mlp) for _ in range(layers))
        self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, n_codes, bias=False))
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m: nn.Module) -> None:  # CodeFormer's init
        if isinstance(m, nn.Linear):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        if not isinstance(f, torch.Tensor) or f.dim() != 4 or f.shape[1] != self.in_dim \
                or f.shape[2] * f.shape[3] != self.n_positions:
            raise ValueError(f"f must have shape (B, {self.in_dim}, h, w) with h*w = "
                             f"{self.n_positions}, got {tuple(getattr(f, 'shape', ()))}")
        x = self.feat_emb(f.flatten(2).transpose(1, 2))  # (B, hw, dim)
        for layer in self.layers:
            x = layer(x, self.position_emb)
        return self.head(x)
