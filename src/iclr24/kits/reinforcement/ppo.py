"""The generic pieces of PPO (Schulman et al. 2017): GAE and the clipped losses.

    δ_t = r_t + γ V(s_{t+1}) (1 − done_t) − V(s_t)
    Â_t = δ_t + γ λ (1 − done_t) Â_{t+1}                       (GAE, Schulman et al. 2016)
    L_π = −E min(ρ_t Â_t, clip(ρ_t, 1 − ε, 1 + ε) Â_t),   ρ_t = exp(log π_new − log π_old)
    L_V = ½ E max((V − R)², (V_old + clip(V − V_old, −ε_v, ε_v) − R)²)

``done_t`` marks that the episode ended at step t (the value after it is not bootstrapped).
Tensors are 1-D over time (or (T, N) for N parallel environments); the losses average.
"""

from __future__ import annotations

import torch

__all__ = ["clipped_policy_loss", "clipped_value_loss", "gae"]


def gae(rewards: torch.Tensor, values: torch.Tensor, dones: torch.Tensor,
        last_value: torch.Tensor | float, *, gamma: float = 0.99,
        lam: float = 0.95) -> tuple[torch.Tensor, torch.Tensor]:
    """(advantages, returns = advantages + values), same shape as ``rewards`` (T, ...).

    values[t] = V(s_t); last_value = V(s_T) for bootstrapping the final step.
    """
    if not 0 <= gamma <= 1 or not 0 <= lam <= 1:
        raise ValueError(f"gamma and lam must be in [0, 1]; got {gamma}, {lam}")
    rewards = torch.as_tensor(rewards, dtype=torch.float32)
    values = torch.as_tensor(values, dtype=torch.float32, device=rewards.device)
    dones = torch.as_tensor(dones, dtype=torch.float32, device=rewards.device)
    if rewards.dim() < 1 or rewards.shape[0] == 0:
        raise ValueError("rewards must be a non-empty (T, ...) tensor")
    if values.shape != rewards.shape or dones.shape != rewards.shape:
        raise ValueError(f"rewards, values and dones must share a shape; got "
                         f"{tuple(rewards.shape)}, {tuple(values.shape)}, {tuple(dones.shape)}")
    next_value = torch.as_tensor(last_value, dtype=torch.float32,
                                 device=rewards.device).expand_as(rewards[0])
    adv = torch.zeros_like(rewards)
    running = torch.zeros_like(rewards[0])
    for t in range(rewards.shape[0] - 1, -1, -1):
        nonterminal = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_value * nonterminal - values[t]  # δ_t
        running = delta + gamma * lam * nonterminal * running               # Â_t
        adv[t] = running
        next_value = values[t]
    return adv, adv + values


def clipped_policy_loss(log_prob: torch.Tensor, old_log_prob: torch.Tensor,
                        advantages: torch.Tensor, *, clip: float = 0.2) -> torch.Tensor:
    """PPO's clipped surrogate, negated for minimisation."""
    if not clip > 0:
        raise ValueError(f"clip must be > 0; got {clip}")
    ratio = torch.exp(log_prob - old_log_prob)
    return -torch.min(ratio * advantages,
                      torch.clamp(ratio, 1 - clip, 1 + clip) * advantages).mean()


def clipped_value_loss(values: torch.Tensor, old_values: torch.Tensor, returns: torch.Tensor,
                       *, clip: float | None = 0.2) -> torch.Tensor:
    """½ E max((V − R)², (V_clipped − R)²); ``clip=None`` gives the plain ½ E (V − R)²."""
    plain = (values - returns).pow(2)
    if clip is None:
        return 0.5 * plain.mean()
    if not clip > 0:
        raise ValueError(f"clip must be > 0 or None; got {clip}")
    clipped = old_values + torch.clamp(values - old_values, -clip, clip)
    return 0.5 * torch.max(plain, (clipped - returns).pow(2)).mean()
