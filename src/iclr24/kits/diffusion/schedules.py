"""Noise schedules beta_1..beta_T of a discrete Gaussian diffusion.

- ``linear`` (Ho et al. 2020): beta linear from 1e-4 to 0.02 at T = 1000, both ends scaled by
  1000 / T for other T (improved-diffusion's rule, so a short chain still ends near pure noise).
- ``cosine`` (Nichol & Dhariwal 2021): abar(t) = f(t) / f(0), f(t) = cos^2(((t/T + s)/(1 + s)) pi/2)
  with s = 0.008, beta_t = 1 - abar(t)/abar(t-1) clipped at 0.999.
"""

from __future__ import annotations

import math

import torch

__all__ = ["SCHEDULES", "beta_schedule"]

SCHEDULES = ("linear", "cosine")


def beta_schedule(name: str, steps: int, *, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """(steps,) betas of schedule ``name`` (``"linear"`` or ``"cosine"``)."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    if name == "linear":
        scale = 1000.0 / steps
        return torch.linspace(scale * 1e-4, min(scale * 0.02, 0.999), steps, dtype=dtype)
    if name == "cosine":
        s = 0.008

        def f(t: float) -> float:
            return math.cos((t / steps + s) / (1 + s) * math.pi / 2) ** 2

        betas = [min(1 - f(t + 1) / f(t), 0.999) for t in range(steps)]
        return torch.tensor(betas, dtype=dtype)
    raise ValueError(f"schedule must be one of {SCHEDULES}, got {name!r}")
