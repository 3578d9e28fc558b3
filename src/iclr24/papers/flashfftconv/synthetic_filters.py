"""Synthetic long-convolution filters for the experiments (spec, reproductions 1 and 3).

* :func:`decaying_noise_filter`: the spec's Hyena-style decaying filter
  ``k[h, t] = randn · exp(−α_h t / L)``, ``α_h`` evenly spaced in [1, 10] (exactness data).
* :func:`smooth_filter`: a smooth, decaying filter like Hyena's implicit filters: a few
  low-frequency sinusoids (≤ ``max_cycles`` cycles over the sequence) under Hyena's default
  ``ExponentialModulation`` (decay rates from reaching 1% at 30% of L (fast) to 150% of L (slow)).
  Its energy sits at low frequencies and early taps.
* :func:`white_noise_filter`: i.i.d. Gaussian taps, flat spectrum, no decay — the worst case for
  both sparse variants.

All return float64 (H, L) tensors drawn from an explicit ``torch.Generator``.
"""

from __future__ import annotations

import math

import torch

__all__ = ["decaying_noise_filter", "smooth_filter", "white_noise_filter"]


def _check(h: int, length: int, generator: torch.Generator) -> None:
    if isinstance(h, bool) or not isinstance(h, int) or h < 1:
        raise ValueError(f"h (channels) must be a positive int, got {h!r}")
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise ValueError(f"length must be a positive int, got {length!r}")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")


def decaying_noise_filter(h: int, length: int, generator: torch.Generator,
                          alpha_range: tuple[float, float] = (1.0, 10.0)) -> torch.Tensor:
    """``randn · exp(−α_h t/L)`` with α_h = linspace(*alpha_range, h). Returns (h, length)."""
    _check(h, length, generator)
    t = torch.arange(length, dtype=torch.float64) / length
    alpha = torch.linspace(alpha_range[0], alpha_range[1], h, dtype=torch.float64)
    noise = torch.randn(h, length, generator=generator, dtype=torch.float64)
    return noise * torch.exp(-alpha[:, None] * t[None, :])


def smooth_filter(h: int, length: int, generator: torch.Generator, n_modes: int = 8,
                  max_cycles: float = 16.0, fast_decay_pct: float = 0.3,
                  slow_decay_pct: float = 1.5, target: float = 1e-2) -> torch.Tensor:
    """``exp(−α_h t/L) · Σ_j a_j sin(2π f_j t/L + φ_j)``, f_j ~ U[0, max_cycles), a_j ~ N(0, 1/J),
    φ_j ~ U[0, 2π); α_h = |ln target| / pct for pct from fast to slow (Hyena's defaults).
    Returns (h, length)."""
    _check(h, length, generator)
    t = torch.arange(length, dtype=torch.float64) / length
    alpha = torch.linspace(abs(math.log(target)) / fast_decay_pct,
                           abs(math.log(target)) / slow_decay_pct, h, dtype=torch.float64)
    f = torch.rand(h, n_modes, 1, generator=generator, dtype=torch.float64) * max_cycles
    phase = torch.rand(h, n_modes, 1, generator=generator, dtype=torch.float64) * 2 * math.pi
    amp = torch.randn(h, n_modes, 1, generator=generator, dtype=torch.float64) / math.sqrt(n_modes)
    wave = (amp * torch.sin(2 * math.pi * f * t[None, None, :] + phase)).sum(1)
    return wave * torch.exp(-alpha[:, None] * t[None, :])


def white_noise_filter(h: int, length: int, generator: torch.Generator) -> torch.Tensor:
    """i.i.d. N(0, 1/L) taps. Returns (h, length)."""
    _check(h, length, generator)
    return torch.randn(h, length, generator=generator, dtype=torch.float64) / math.sqrt(length)
