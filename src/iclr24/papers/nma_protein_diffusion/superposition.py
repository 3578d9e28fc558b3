"""Optimal rigid superposition (Kabsch) of motif coordinates, batched, in torch.

Used by :class:`~.guidance.MotifGuidance` (the official structure conditioner aligns the target
motif onto the current estimate before its L1 loss) and to report motif RMSD and mode overlap.
"""

from __future__ import annotations

import torch

__all__ = ["kabsch_rotation", "motif_rmsd", "superpose"]


def _check_pair(a: torch.Tensor, b: torch.Tensor) -> None:
    for name, v in (("mobile", a), ("reference", b)):
        if not isinstance(v, torch.Tensor) or v.dim() < 2 or v.shape[-1] != 3 \
                or v.shape[-2] < 3:
            raise ValueError(f"{name} must be a tensor of shape (..., n, 3) with n >= 3, got "
                             f"{getattr(v, 'shape', type(v).__name__)}")
    if a.shape[-2] != b.shape[-2]:
        raise ValueError(f"mobile and reference must have the same number of points, got "
                         f"{a.shape[-2]} and {b.shape[-2]}")


def kabsch_rotation(mobile: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """The proper rotation R (..., 3, 3) minimising sum |R (m_i - m0) - (r_i - r0)|^2 over the
    centred point sets mobile, reference (..., n, 3)."""
    _check_pair(mobile, reference)
    m = mobile - mobile.mean(-2, keepdim=True)
    r = reference.to(mobile.dtype) - reference.to(mobile.dtype).mean(-2, keepdim=True)
    cov = m.transpose(-1, -2) @ r  # (..., 3, 3) = sum_i m_i r_i^T
    u, _, vh = torch.linalg.svd(cov)
    d = torch.sign(torch.linalg.det(vh.transpose(-1, -2) @ u.transpose(-1, -2)))
    flip = torch.ones_like(cov[..., 0])
    flip[..., 2] = d  # reflection -> proper rotation
    return vh.transpose(-1, -2) @ torch.diag_embed(flip) @ u.transpose(-1, -2)


def superpose(mobile: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """``mobile`` (..., n, 3) rotated and translated onto ``reference`` (..., n, 3)."""
    rot = kabsch_rotation(mobile, reference)
    m0 = mobile.mean(-2, keepdim=True)
    return (mobile - m0) @ rot.transpose(-1, -2) + reference.to(mobile.dtype).mean(-2, keepdim=True)


def motif_rmsd(mobile: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """RMSD after optimal superposition: (..., n, 3) x (..., n, 3) -> (...,)."""
    aligned = superpose(mobile, reference)
    return (aligned - reference.to(mobile.dtype)).pow(2).sum(-1).mean(-1).sqrt()
