"""DAEFR's feature fusion (paper Sec. 3.3, Eq. 6; official ``MultiHeadAttnBlock`` in
``DAEFR/modules/vqvae/vqvae_arch.py``, a RestoreFormer-style block).

Both encoders see the LQ image: f_h = HQ-encoder(x_l), f_l = LQ-encoder(x_l), (B, C, h, w). After
group-normalising both,

    Q = W_q GN(f_l),   K = W_k GN(f_h),   V = W_v GN(f_h)       (1x1 convs, multi-head)
    f_fused = f_h + W_o softmax(Q K^T / sqrt(d_head)) V

so the queries come from the LQ branch and the residual path carries the HQ-encoder features.
The paper uses 256 channels and 8 heads; the claims use 32 channels and 4 heads. GroupNorm uses
gcd(32, C) groups (taming's 32 groups, reduced when C is small).
"""

from __future__ import annotations

import math

import torch
from torch import nn

__all__ = ["CrossAttentionFusion"]


class CrossAttentionFusion(nn.Module):
    """``forward(f_hq, f_lq)`` -> f_hq + cross-attention(queries from f_lq, keys/values from
    f_hq); all (B, dim, h, w). ``dim`` must be divisible by ``heads``."""

    def __init__(self, dim: int = 256, heads: int = 8) -> None:
        super().__init__()
        for arg, v in (("dim", dim), ("heads", heads)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{arg} must be a positive int, got {v!r}")
        if dim % heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.dim, self.heads = dim, heads
        groups = math.gcd(32, dim)
        self.norm_hq = nn.GroupNorm(groups, dim, eps=1e-6)
        self.norm_lq = nn.GroupNorm(groups, dim, eps=1e-6)
        self.q, self.k, self.v, self.proj_out = (nn.Conv2d(dim, dim, 1) for _ in range(4))

    def forward(self, f_hq: torch.Tensor, f_lq: torch.Tensor) -> torch.Tensor:
        for name, f in (("f_hq", f_hq), ("f_lq", f_lq)):
            if not isinstance(f, torch.Tensor) or f.dim() != 4 or f.shape[1] != self.dim:
                raise ValueError(f"{name} must have shape (B, {self.dim}, h, w)")
        if f_hq.shape != f_lq.shape:
            raise ValueError(f"f_hq and f_lq must have the same shape, got {tuple(f_hq.shape)} "
                             f"and {tuple(f_lq.shape)}")
        b, c, h, w = f_hq.shape
        d = c // self.heads
        kv = self.norm_hq(f_hq)
        q = self.q(self.norm_lq(f_lq))  # queries from the LQ-encoder features
        k, v = self.k(kv), self.v(kv)

        def heads(t: torch.Tensor) -> torch.Tensor:  # (B, C, h, w) -> (B, heads, hw, d)
            return t.reshape(b, self.heads, d, h * w).transpose(2, 3)

        attn = torch.softmax(heads(q) @ heads(k).transpose(2, 3) / math.sqrt(d), dim=-1)
        out = (attn @ heads(v)).transpose(2, 3).reshape(b, c, h, w)
        return f_hq + self.proj_out(out)  # residual on the HQ-encoder features
