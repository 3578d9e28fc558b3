"""Realism measures computable exactly on the procedural skeleton (stand-ins for FID and foot
skating, whose T2M evaluator and SMPL body are out of reach).

- :func:`bone_length_violation`: mean over frames and bones of |l - L| / L for the true bone
  lengths L; real motions score 0 and the relative representation does not enforce it.
- :func:`motion_statistics`: per sequence, the mean and std over frames of each joint's speed
  and acceleration magnitude (J * 4 numbers).
- :func:`frechet_distance`: || mu_a - mu_b ||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2}) between two
  sets of such vectors (the formula of FID, on these features; ``scipy.linalg.sqrtm``).
"""

from __future__ import annotations

import numpy as np
import torch

from .procedural_motions import BONE_LENGTHS, FPS, bone_lengths

__all__ = ["bone_length_violation", "frechet_distance", "motion_statistics"]


def bone_length_violation(positions: torch.Tensor) -> torch.Tensor:
    """Per sequence (B,) mean relative bone-length error of positions (B, N, J, 3)."""
    true = torch.tensor(BONE_LENGTHS[1:], dtype=positions.dtype, device=positions.device)
    return ((bone_lengths(positions) - true).abs() / true).mean((1, 2))


def motion_statistics(positions: torch.Tensor) -> np.ndarray:
    """(B, 4 J) per-sequence speed/acceleration statistics of positions (B, N, J, 3), N >= 3."""
    if positions.dim() != 4 or positions.shape[1] < 3:
        raise ValueError(f"positions must be (batch, frames >= 3, joints, 3), got "
                         f"{tuple(positions.shape)}")
    vel = (positions[:, 1:] - positions[:, :-1]) * FPS
    acc = (vel[:, 1:] - vel[:, :-1]) * FPS
    speed, accel = vel.norm(dim=-1), acc.norm(dim=-1)                    # (B, N', J)
    feats = torch.cat([speed.mean(1), speed.std(1), accel.mean(1), accel.std(1)], -1)
    return feats.double().cpu().numpy()


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """Frechet distance between Gaussians fitted to rows of ``a`` (n, k) and ``b`` (m, k)."""
    from scipy import linalg

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[1] or min(len(a), len(b)) < 2:
        raise ValueError(f"a and b must be (n >= 2, k) arrays with the same k, got {a.shape} "
                         f"and {b.shape}")
    mu_a, mu_b = a.mean(0), b.mean(0)
    s_a, s_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root = linalg.sqrtm(s_a @ s_b)
    root = np.real(root)                    # tiny imaginary parts from round-off
    return float(((mu_a - mu_b) ** 2).sum() + np.trace(s_a + s_b - 2 * root))
