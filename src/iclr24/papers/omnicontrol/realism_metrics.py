"""Realism measures computable exactly on the procedural skeleton (stand-ins for FID and foot
skating, whose T2M evaluator and SMPL body are out of reach).

- :func:`bone_length_violation`: mean over frames and bones of |l - L| / L for the true bone
  lengths L; real motions score 0 and the relative representation does not enforce it.
- :func:`motion_statistics`: per sequence, the mean and std over frames of each joint's speed
  and acceleration magnitude (J * 4 numbers).
- :func:`frechet_distance`: || mu_a - mu_b ||^2 + tr(S_a + S_b - 2 (S_a S_b)^{1/2}) between two
  sets of such vectors (the formula of FID, on these features; ``scipy.linalg.sqrtm``).
- :func:`controlled_joint_jerk`: per sequence, the mean magnitude of the third time derivative
  of the controlled joints' trajectories (m/s^3, finite differences at 20 fps). Spatial guidance
  edits the controlled joint at its keyframes only; what it leaves unnatural shows as jumps of
  that joint, which the jerk measures where it happens. Real (procedural) motions are smooth
  sinusoids, so their jerk is the reference, not zero.

Issue 38: the Frechet distance of generated to real statistics came out ~1e5 for every arm at
small, dominated by the small base model's mismatch to real motion, so it could not resolve a
difference between arms (it is still reported); the claim's realism rule reads bone-length
violation and controlled-joint jerk instead.
"""

from __future__ import annotations

import numpy as np
import torch

from .procedural_motions import BONE_LENGTHS, FPS, bone_lengths

__all__ = ["bone_length_violation", "controlled_joint_jerk", "frechet_distance",
           "motion_statistics"]


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


def controlled_joint_jerk(positions: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per sequence (B,) mean jerk magnitude (m/s^3) of the controlled joints.

    positions: (B, N, J, 3) global joint positions, N >= 4; mask: (B, N, J) bool, the hint's
    mask (a joint is controlled when any of its frames is). The jerk of joint j over frames
    n = 0..N-4 is averaged over frames, then over the sequence's controlled joints."""
    if not isinstance(positions, torch.Tensor) or positions.dim() != 4 \
            or positions.shape[1] < 4 or positions.shape[-1] != 3:
        raise ValueError(f"positions must be (batch, frames >= 4, joints, 3), got "
                         f"{tuple(getattr(positions, 'shape', ()))}")
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool \
            or mask.shape != positions.shape[:3]:
        raise ValueError(f"mask must be a bool tensor (batch, frames, joints) = "
                         f"{tuple(positions.shape[:3])}, got "
                         f"{getattr(mask, 'dtype', type(mask).__name__)} "
                         f"{tuple(getattr(mask, 'shape', ()))}")
    joints = mask.any(1).to(positions.dtype)                             # (B, J)
    if torch.any(joints.sum(1) == 0):
        raise ValueError("mask controls no joint in some sequence")
    p = positions
    # jerk: d^3 p / dt^3 ~ (p_{n+3} - 3 p_{n+2} + 3 p_{n+1} - p_n) * fps^3
    jerk = (p[:, 3:] - 3 * p[:, 2:-1] + 3 * p[:, 1:-2] - p[:, :-3]) * FPS ** 3
    per_joint = jerk.norm(dim=-1).mean(1)                                # (B, J)
    return (per_joint * joints).sum(1) / joints.sum(1)
