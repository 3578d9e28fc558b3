"""The DAM network: value-time tokens, one token per basis frequency, cross-attention, and a
head that corrects the least-squares coefficients.

Layout (after the paper's Sec. 3 / App. B; the exact layer order and widths were not retrieved
here, so this follows the spec's recollection and keeps sizes as parameters):

- TV-tokens: an MLP of each context pair (standardised value, log look-back in steps, and
  sin/cos(2 pi nu_k t) at every basis frequency).
- B-tokens: one per frequency: an MLP of (theta0^s_k, theta0^c_k, |theta0_k|, log nu_k) plus a
  learned embedding of k.
- Each layer (pre-norm, residual): self-attention over TV-tokens, cross-attention B <- TV,
  self-attention over B-tokens, an MLP on each token type.
- Head: per B-token linear -> (d theta^s_k, d theta^c_k); the offset from the mean B-token.
  theta = theta0 + d theta, in standardised units, then mapped back to the data's units.

Frequencies a series cannot resolve (above its own Nyquist rate 1 / (2 step)) are masked: their
B-tokens are ignored by attention and their coefficients fixed to 0 (our addition, so one basis
serves 15-minute and weekly data without aliasing).
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn

from .basis import evaluate_basis, init_coefficients, nyquist_mask
from .scaling import robust_stats

__all__ = ["DAM", "DAMLayer"]


class DAMLayer(nn.Module):
    """One backbone layer. tv: (B, n, d), b: (B, K, d)."""

    def __init__(self, d_model: int, n_heads: int, mlp_ratio: int = 2) -> None:
        super().__init__()
        self.n_tv, self.n_b, self.n_x, self.n_bb = (nn.LayerNorm(d_model) for _ in range(4))
        self.n_tv2, self.n_b2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        kw = {"embed_dim": d_model, "num_heads": n_heads, "batch_first": True}
        self.tv_self = nn.MultiheadAttention(**kw)
        self.cross = nn.MultiheadAttention(**kw)
        self.b_self = nn.MultiheadAttention(**kw)
        self.tv_mlp = nn.Sequential(nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(),
                                    nn.Linear(mlp_ratio * d_model, d_model))
        self.b_mlp = nn.Sequential(nn.Linear(d_model, mlp_ratio * d_model), nn.GELU(),
                                   nn.Linear(mlp_ratio * d_model, d_model))

    def forward(self, tv, b, tv_pad, b_pad):
        h = self.n_tv(tv)
        tv = tv + self.tv_self(h, h, h, key_padding_mask=tv_pad, need_weights=False)[0]
        kv = self.n_x(tv)
        b = b + self.cross(self.n_b(b), kv, kv, key_padding_mask=tv_pad, need_weights=False)[0]
        h = self.n_bb(b)
        b = b + self.b_self(h, h, h, key_padding_mask=b_pad, need_weights=False)[0]
        tv = tv + self.tv_mlp(self.n_tv2(tv))
        b = b + self.b_mlp(self.n_b2(b))
        return tv, b


class DAM(nn.Module):
    """DAM: a context of (time, value) points -> basis coefficients of a function of time.

    freqs: (K,) basis frequencies in cycles/day (see :func:`~.basis.log_frequencies`).
    forward(t_ctx, v_ctx, mask=None, step=None) -> theta (B, 2K + 1) in the data's units,
      t_ctx: (B, n) days relative to the forecast origin (<= 0), v_ctx: (B, n) raw values,
      mask: (B, n) bool (True = real point), step: (B,) sampling interval in days (default:
      median spacing of each context).
    predict(theta, t_query) -> (B, m) values at any times t_query (B, m) (days from origin).
    """

    def __init__(self, freqs, d_model: int = 64, n_layers: int = 2, n_heads: int = 4,
                 ridge: float = 1e-3, lookback_scale: float = 4096.0) -> None:
        super().__init__()
        f = np.asarray(freqs, dtype=np.float64)
        if f.ndim != 1 or f.size < 1 or not np.all(np.isfinite(f)) or np.any(f <= 0):
            raise ValueError("freqs must be a non-empty 1-D array of positive frequencies")
        if d_model % n_heads:
            raise ValueError(f"d_model ({d_model}) must be divisible by n_heads ({n_heads})")
        self.register_buffer("freqs", torch.tensor(f, dtype=torch.float32))
        k = f.size
        self.k, self.ridge, self.lookback_scale = k, float(ridge), float(lookback_scale)
        self.tv_embed = nn.Sequential(nn.Linear(2 + 2 * k, d_model), nn.GELU(),
                                      nn.Linear(d_model, d_model))
        self.b_embed = nn.Sequential(nn.Linear(4, d_model), nn.GELU(), nn.Linear(d_model, d_model))
        self.b_index = nn.Embedding(k, d_model)
        self.layers = nn.ModuleList(DAMLayer(d_model, n_heads) for _ in range(n_layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, 2)
        self.offset_head = nn.Linear(d_model, 1)
        for lin in (self.head, self.offset_head):  # start exactly at the least-squares fit
            nn.init.zeros_(lin.weight)
            nn.init.zeros_(lin.bias)

    def _check(self, t_ctx, v_ctx, mask):
        if not isinstance(t_ctx, torch.Tensor) or not isinstance(v_ctx, torch.Tensor):
            raise TypeError("t_ctx and v_ctx must be torch tensors of shape (B, n)")
        if t_ctx.ndim != 2 or t_ctx.shape != v_ctx.shape:
            raise ValueError(f"t_ctx and v_ctx must both be (B, n), got {tuple(t_ctx.shape)} "
                             f"and {tuple(v_ctx.shape)}")
        if mask is None:
            mask = torch.ones_like(t_ctx, dtype=torch.bool)
        if mask.shape != t_ctx.shape:
            raise ValueError(f"mask must have shape {tuple(t_ctx.shape)}")
        if not torch.all(torch.isfinite(t_ctx[mask])) or not torch.all(torch.isfinite(v_ctx[mask])):
            raise ValueError("t_ctx and v_ctx must be finite at every unmasked point")
        if not torch.all(mask.any(-1)):
            raise ValueError("every context needs at least one unmasked point")
        return mask

    def coefficients0(self, t_ctx, v_ctx, mask=None, step=None):
        """The context-only quantities the network starts from, as a tuple:
        theta0 (B, 2K+1) ridge fit in standardised units, center (B,), scale (B,), frequency
        mask (B, K), standardised values (B, n), step (B,), point mask (B, n), cleaned t_ctx."""
        mask = self._check(t_ctx, v_ctx, mask)
        t_ctx, v_ctx = t_ctx.float(), v_ctx.float()
        t_ctx = torch.where(mask, t_ctx, 0.0)
        v_ctx = torch.where(mask, v_ctx, 0.0)
        center, scale = robust_stats(v_ctx, mask)  # context-only statistics
        z = torch.where(mask, (v_ctx - center[:, None]) / scale[:, None], 0.0)
        if step is None:
            dt = torch.diff(t_ctx, dim=-1).abs()
            dt = torch.where(mask[:, 1:] & mask[:, :-1] & (dt > 0), dt, torch.nan)
            step = torch.nan_to_num(torch.nanmedian(dt, dim=-1).values, nan=1.0)
        step = torch.as_tensor(step, dtype=t_ctx.dtype, device=t_ctx.device).expand(t_ctx.shape[0])
        fmask = nyquist_mask(self.freqs, step)
        theta0 = init_coefficients(t_ctx.double(), z.double(), self.freqs.double(), self.ridge,
                                   mask=mask, freq_mask=fmask).float()
        return theta0, center, scale, fmask, z, step, mask, t_ctx

    def forward(self, t_ctx: torch.Tensor, v_ctx: torch.Tensor, mask: torch.Tensor | None = None,
                step: torch.Tensor | float | None = None) -> torch.Tensor:
        theta0, center, scale, fmask, z, step, mask, t_ctx = self.coefficients0(
            t_ctx, v_ctx, mask, step)
        k = self.k
        arg = 2 * math.pi * t_ctx[..., None] * self.freqs
        lookback = torch.log1p((-t_ctx / step[:, None]).clamp(min=0)) / math.log1p(
            self.lookback_scale)
        tv_in = torch.cat([z[..., None], lookback[..., None], torch.sin(arg), torch.cos(arg)], -1)
        tv = self.tv_embed(tv_in)
        th_s, th_c = theta0[:, :k], theta0[:, k:2 * k]
        logf = (torch.log(self.freqs) - torch.log(self.freqs).mean()) / (
            torch.log(self.freqs).std() + 1e-6)
        b_in = torch.stack([th_s, th_c, torch.sqrt(th_s ** 2 + th_c ** 2),
                            logf.expand_as(th_s)], dim=-1)
        b = self.b_embed(b_in) + self.b_index.weight
        tv_pad, b_pad = ~mask, ~fmask
        for layer in self.layers:
            tv, b = layer(tv, b, tv_pad, b_pad)
        b = self.norm(b)
        d = self.head(b) * fmask[..., None]  # (B, K, 2): corrections, masked frequencies stay 0
        pooled = (b * fmask[..., None]).sum(1) / fmask.sum(1, keepdim=True).clamp(min=1)
        theta_z = theta0 + torch.cat([d[..., 0], d[..., 1], self.offset_head(pooled)], dim=-1)
        # back to data units: f = center + scale * f_z
        theta = theta_z * scale[:, None]
        return torch.cat([theta[:, :-1], theta[:, -1:] + center[:, None]], dim=-1)

    def predict(self, theta: torch.Tensor, t_query: torch.Tensor) -> torch.Tensor:
        """Evaluate f at any times: theta (B, 2K+1), t_query (B, m) days from origin -> (B, m)."""
        tq = torch.as_tensor(t_query, dtype=theta.dtype, device=theta.device)
        if torch.isnan(tq).any():
            raise ValueError("t_query contains NaN; pass finite query times (days from origin)")
        if tq.ndim == 1:
            tq = tq.expand(theta.shape[0], -1)
        return evaluate_basis(theta, tq, self.freqs.to(theta.dtype))
