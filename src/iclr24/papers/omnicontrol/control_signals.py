"""Control signals: hints drawn from real motions, and their normalised form for the branch.

The official training draws one controllable joint per sequence (pelvis, feet, head, wrists)
and a uniform number of keyframes in [1, N - 1] (``random_mask_train``); evaluation uses a
fixed joint and density (1, 2, 5 keyframes or a percentage of frames). The branch sees the hint
normalised by the global-position statistics, flattened per frame, zero where not controlled.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["GlobalStatistics", "branch_input", "random_hints"]


@dataclass(frozen=True)
class GlobalStatistics:
    """Per-joint, per-axis mean and std (J, 3) of global positions (the official ``raw_mean``
    / ``raw_std`` that normalise hints)."""

    mean: torch.Tensor
    std: torch.Tensor

    @classmethod
    def of(cls, positions: torch.Tensor, min_std: float = 1e-2) -> GlobalStatistics:
        """Statistics of (B, N, J, 3) positions."""
        if positions.dim() != 4 or positions.shape[-1] != 3:
            raise ValueError(f"positions must be (batch, frames, joints, 3), got "
                             f"{tuple(positions.shape)}")
        flat = positions.reshape(-1, *positions.shape[2:])
        return cls(flat.mean(0), flat.std(0).clamp_min(min_std))


def branch_input(hint: torch.Tensor, mask: torch.Tensor,
                 stats: GlobalStatistics) -> tuple[torch.Tensor, torch.Tensor]:
    """(normalised hint (B, N, J*3) with zeros where not controlled, frames (B, N) with any
    hint) from global hint (B, N, J, 3) and mask (B, N, J)."""
    if hint.shape[:-1] != mask.shape or hint.shape[-1] != 3:
        raise ValueError(f"hint (B, N, J, 3) and mask (B, N, J) disagree: {tuple(hint.shape)} "
                         f"vs {tuple(mask.shape)}")
    norm = (hint - stats.mean.to(hint)) / stats.std.to(hint)
    norm = norm * mask[..., None].to(hint.dtype)
    return norm.flatten(2), mask.any(-1)


def random_hints(positions: torch.Tensor, generator: torch.Generator, *,
                 joints: tuple[int, ...] | None = None, n_keyframes: int | None = None,
                 dense: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """Hints on one random joint per sequence (from ``joints``, default all) of ``positions``
    (B, N, J, 3): ``n_keyframes`` random frames, all frames with ``dense``, or (neither) a
    uniform number in [1, N - 1] as the official training. Returns (hint (B, N, J, 3) with
    zeros where not controlled, mask (B, N, J) bool)."""
    if positions.dim() != 4 or positions.shape[-1] != 3:
        raise ValueError(f"positions must be (batch, frames, joints, 3), got "
                         f"{tuple(positions.shape)}")
    b, n, j, _ = positions.shape
    joints = tuple(range(j)) if joints is None else tuple(joints)
    if not joints or min(joints) < 0 or max(joints) >= j:
        raise ValueError(f"joints must be indices in [0, {j}), got {joints!r}")
    if n_keyframes is not None and not 1 <= n_keyframes <= n:
        raise ValueError(f"n_keyframes must lie in [1, {n}], got {n_keyframes!r}")
    mask = torch.zeros(b, n, j, dtype=torch.bool)
    pick = torch.tensor(joints)[torch.randint(len(joints), (b,), generator=generator)]
    for row in range(b):
        if dense:
            k = n
        elif n_keyframes is not None:
            k = n_keyframes
        else:
            k = int(torch.randint(1, n, (1,), generator=generator))
        frames = torch.randperm(n, generator=generator)[:k]
        mask[row, frames, pick[row]] = True
    mask = mask.to(positions.device)
    return positions * mask[..., None].to(positions.dtype), mask
