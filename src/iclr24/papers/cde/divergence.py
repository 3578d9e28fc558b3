"""The soft-χ² f-divergence of CDE (Cen et al. 2024, §4; official ``cde.py``, ``get_f_div_fn``).

    f(x)        = x log x − x + 1        (x < 1),   ½ (x − 1)²   (x ≥ 1)
    f'(x)       = log x                  (x < 1),   x − 1        (x ≥ 1)
    (f')⁻¹(y)   = exp(y)                 (y < 0),   y + 1        (y ≥ 0)
    f((f')⁻¹(y)) = (y − 1) eʸ + 1        (y < 0),   ½ y²         (y ≥ 0)

f is convex, C¹ at x = 1 with f(1) = f'(1) = 0, so (f')⁻¹ is positive everywhere: the optimal
density ratio w*(y) = (f')⁻¹((e − λ)/α) needs no ReLU (plain χ² would). ``log_f_prime_inv`` is
log w*(y) computed without the exp/log round trip (y for y < 0, log(1 + y) for y ≥ 0), as the
policy-extraction step uses it. Branches are evaluated on clamped arguments so that the
unused side of ``torch.where`` never produces NaN gradients.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import torch

__all__ = ["SoftChi2", "soft_chi2"]

Fn = Callable[[torch.Tensor], torch.Tensor]


class SoftChi2(NamedTuple):
    """The soft-χ² functions, elementwise on tensors."""

    f: Fn
    f_prime: Fn
    f_prime_inv: Fn
    f_of_w: Fn
    log_f_prime_inv: Fn


def _f(x: torch.Tensor) -> torch.Tensor:
    xs = x.clamp(0.0, 1.0)  # the x log x branch only ever sees x in [0, 1]
    return torch.where(x < 1, torch.xlogy(xs, xs) - xs + 1, 0.5 * (x - 1) ** 2)


def _f_prime(x: torch.Tensor) -> torch.Tensor:
    return torch.where(x < 1, torch.log(x.clamp(1e-12, 1.0)), x - 1)


def _f_prime_inv(y: torch.Tensor) -> torch.Tensor:
    return torch.where(y < 0, torch.exp(y.clamp(max=0.0)), y + 1)


def _f_of_w(y: torch.Tensor) -> torch.Tensor:
    yn = y.clamp(max=0.0)
    return torch.where(y < 0, (yn - 1) * torch.exp(yn) + 1, 0.5 * y ** 2)


def _log_f_prime_inv(y: torch.Tensor) -> torch.Tensor:
    return torch.where(y < 0, y, torch.log1p(y.clamp(min=0.0)))


def soft_chi2() -> SoftChi2:
    """(f, f', (f')⁻¹, f∘(f')⁻¹, log (f')⁻¹) of the soft-χ² divergence."""
    return SoftChi2(_f, _f_prime, _f_prime_inv, _f_of_w, _log_f_prime_inv)
