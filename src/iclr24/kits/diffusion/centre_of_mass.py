"""Centre-of-mass-free Gaussian noise for point clouds (coordinates up to translation).

Protein backbones and molecules are modelled without their centre of mass: data are centred and
the noise lives in the subspace where the (masked) mean over points is zero, so every x_t of the
chain is centred too (as in E(n)-equivariant diffusion and Genie).
"""

from __future__ import annotations

import torch

__all__ = ["com_free_noise", "remove_com"]


def _mask(x: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    if x.dim() < 2:
        raise ValueError(f"x must be (..., N, D) point coordinates, got shape {tuple(x.shape)}")
    if mask is None:
        return torch.ones(x.shape[:-1], dtype=x.dtype, device=x.device)
    if mask.shape != x.shape[:-1]:
        raise ValueError(f"mask must have shape {tuple(x.shape[:-1])} (one flag per point), "
                         f"got {tuple(mask.shape)}")
    m = mask.to(x.dtype)
    if torch.any(m.sum(-1) == 0):
        raise ValueError("mask selects no point in some structure")
    return m


def remove_com(x: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
    """``x`` (..., N, D) minus the mean of its (masked) points; masked-out points are set to 0."""
    m = _mask(x, mask)[..., None]
    com = (x * m).sum(-2, keepdim=True) / m.sum(-2, keepdim=True)
    return (x - com) * m


def com_free_noise(shape: tuple[int, ...], generator: torch.Generator | None = None, *,
                   mask: torch.Tensor | None = None, dtype: torch.dtype = torch.float32,
                   device: torch.device | str | None = None) -> torch.Tensor:
    """Standard Gaussian noise (..., N, D) projected onto the zero-(masked-)mean subspace.

    Each point's marginal is N(0, (1 - 1/n) I) for n real points (the projection removes one
    point's worth of variance per dimension); masked-out points get 0.
    """
    z = torch.randn(shape, generator=generator, dtype=dtype,
                    device=device if device is not None else
                    (generator.device if generator is not None else None))
    return remove_com(z, mask if mask is None else mask.to(z.device))
