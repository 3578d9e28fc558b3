"""CDE's losses as functions of the quantities of one minibatch (Cen et al. 2024, §4; official
``cde.py``, ``learn_w``). ``CDE.fit`` and the tabular known-answer checks call the same code.

All expectations are weighted means Σ pᵢ xᵢ over the rows of a minibatch (``p=None``: the plain
mean, as the official code), so a dataset can be passed as distinct rows with their empirical
probabilities.
"""

from __future__ import annotations

import torch

from .divergence import soft_chi2

__all__ = ["eta_loss", "ood_penalty", "v_loss"]

_F = soft_chi2()


def _mean(x: torch.Tensor, p: torch.Tensor | None) -> torch.Tensor:
    return x.mean() if p is None else p @ x


def v_loss(adv: torch.Tensor, v_init: torch.Tensor, eta: torch.Tensor, *, alpha: float,
           gamma: float, p: torch.Tensor | None = None
           ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(L_V, L_λ, w) for advantages e_V (n,), V at initial states (m,) and λ_v (scalar).

    L_V = E_D[w (e_V − λ̄) − α f(w)] + λ̄ + (1 − γ) E_{s₀}[V(s₀)],  w = (f')⁻¹((e_V − λ̄)/α)
    (λ̄ = λ_v detached; gradients flow through e_V and w), and
    L_λ = E_D[w̄ (ē_V − λ_v)] + λ_v, whose gradient 1 − E_D[w] drives E_D[w] to 1.
    """
    eta_d = eta.detach()
    y = (adv - eta_d) / alpha
    w = _F.f_prime_inv(y)
    loss = _mean(w * (adv - eta_d) - alpha * _F.f_of_w(y), p) + eta_d \
        + (1 - gamma) * v_init.mean()
    return loss, eta_loss(w.detach(), adv.detach(), eta, p=p), w


def eta_loss(w: torch.Tensor, adv: torch.Tensor, eta: torch.Tensor, *,
             p: torch.Tensor | None = None) -> torch.Tensor:
    """E_D[w (e − λ) + λ] for fixed ratios w and advantages e (the λ_v and λ_e losses)."""
    return _mean(w * (adv - eta) + eta, p)


def ood_penalty(e_ood: torch.Tensor, eta_e: torch.Tensor, *, alpha: float, ood_eps: float
                ) -> torch.Tensor:
    """ReLU(E(s, a_ood) − λ̄_e − α f'(ε̃))² elementwise: zero exactly when the implied ratio
    (f')⁻¹((E − λ_e)/α) is at most ε̃ (f'(ε̃) = log ε̃ for ε̃ < 1)."""
    threshold = eta_e.detach() + alpha * _F.f_prime(torch.as_tensor(ood_eps, dtype=e_ood.dtype))
    return torch.relu(e_ood - threshold).pow(2)
