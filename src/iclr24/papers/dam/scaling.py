"""Robust standardisation from the context only (no look at the future).

    center = median(v_ctx),  scale = IQR(v_ctx)  (fallback: std, then 1)

The paper standardises each sampled context; median/IQR is the spec's recollection of its
choice (not confirmed), kept here as the one place that decides the scaling.
"""

from __future__ import annotations

import torch

__all__ = ["robust_stats"]


def robust_stats(v_ctx: torch.Tensor, mask: torch.Tensor | None = None,
                 eps: float = 1e-8) -> tuple[torch.Tensor, torch.Tensor]:
    """(center, scale), each (...,), from the valid context values v_ctx (..., n)."""
    if mask is None:
        mask = torch.ones_like(v_ctx, dtype=torch.bool)
    vals = torch.where(mask, v_ctx, torch.nan)
    q = torch.nanquantile(vals, torch.tensor([0.25, 0.5, 0.75], dtype=v_ctx.dtype,
                                             device=v_ctx.device), dim=-1)
    center, iqr = q[1], q[2] - q[0]
    cnt = mask.sum(-1).clamp(min=1)
    mean = torch.where(mask, v_ctx, 0).sum(-1) / cnt
    std = torch.sqrt(torch.where(mask, (v_ctx - mean[..., None]) ** 2, 0).sum(-1) / cnt)
    scale = torch.where(iqr > eps, iqr, torch.where(std > eps, std, torch.ones_like(std)))
    return center, scale
