"""MLP builders and the tanh-squashed Gaussian actor of SAC (CleanRL's continuous-action SAC).

``TanhGaussianActor``: a ~ tanh(u)·scale + bias with u ~ N(μ(s), σ(s)²); the log-standard
deviation is squashed into [log_std_min, log_std_max] = [−5, 2] by
``log σ = min + ½(max − min)(tanh(x) + 1)`` (CleanRL), and

    log π(a|s) = log N(u; μ, σ) − Σ_i log(scale_i (1 − tanh(u_i)²) + 1e−6)

(change of variables through the squashing, SAC paper App. C). ``QNetwork`` maps (s, a) to a
scalar. Everything is an ``nn.Module`` on the device of its inputs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

__all__ = ["QNetwork", "TanhGaussianActor", "mlp"]


def mlp(in_dim: int, out_dim: int, hidden: Sequence[int] = (256, 256), *,
        activation: type[nn.Module] = nn.ReLU,
        output_activation: type[nn.Module] | None = None) -> nn.Sequential:
    """Linear layers of widths ``in_dim -> *hidden -> out_dim`` with ``activation`` between."""
    dims = [in_dim, *hidden, out_dim]
    for name, d in zip(("in_dim", *(["hidden"] * len(hidden)), "out_dim"), dims):
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            raise ValueError(f"{name} widths must be positive ints; got {d!r}")
    layers: list[nn.Module] = []
    for i in range(len(dims) - 1):
        layers.append(nn.Linear(dims[i], dims[i + 1]))
        if i < len(dims) - 2:
            layers.append(activation())
    if output_activation is not None:
        layers.append(output_activation())
    return nn.Sequential(*layers)


class QNetwork(nn.Module):
    """Q(s, a): an MLP on the concatenation, output (n,)."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int] = (256, 256)) -> None:
        super().__init__()
        self.net = mlp(obs_dim + act_dim, 1, hidden)

    def forward(self, obs: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        return self.net(torch.cat([obs, action], dim=-1)).squeeze(-1)


class TanhGaussianActor(nn.Module):
    """π(a|s) = tanh-squashed Gaussian, rescaled to the box [low, high]."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int] = (256, 256), *,
                 action_low: Sequence[float] | float = -1.0,
                 action_high: Sequence[float] | float = 1.0,
                 log_std_min: float = -5.0, log_std_max: float = 2.0) -> None:
        super().__init__()
        if not log_std_min < log_std_max:
            raise ValueError(f"log_std_min must be < log_std_max; got {log_std_min}, "
                             f"{log_std_max}")
        if len(hidden) < 1:
            raise ValueError("hidden must list at least one width")
        self.trunk = mlp(obs_dim, hidden[-1], hidden[:-1], output_activation=nn.ReLU)
        self.mean = nn.Linear(hidden[-1], act_dim)
        self.log_std = nn.Linear(hidden[-1], act_dim)
        low = torch.as_tensor(action_low, dtype=torch.float32).expand(act_dim).clone()
        high = torch.as_tensor(action_high, dtype=torch.float32).expand(act_dim).clone()
        if not bool((high > low).all()) or not bool(torch.isfinite(low).all() and
                                                     torch.isfinite(high).all()):
            raise ValueError("action bounds must be finite with action_high > action_low")
        self.register_buffer("scale", (high - low) / 2)
        self.register_buffer("bias", (high + low) / 2)
        self.log_std_min, self.log_std_max = float(log_std_min), float(log_std_max)

    def distribution_params(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(μ, log σ), each (n, act_dim)."""
        h = self.trunk(obs)
        log_std = torch.tanh(self.log_std(h))
        log_std = self.log_std_min + 0.5 * (self.log_std_max - self.log_std_min) * (log_std + 1)
        return self.mean(h), log_std

    def sample(self, obs: torch.Tensor, generator: torch.Generator | None = None
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(action, log π(action|s) (n,), deterministic action tanh(μ)·scale + bias);
        reparameterised, so the action carries gradients to the actor."""
        mean, log_std = self.distribution_params(obs)
        std = log_std.exp()
        eps = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
        u = mean + std * eps
        y = torch.tanh(u)
        action = y * self.scale + self.bias
        log_prob = torch.distributions.Normal(mean, std).log_prob(u)
        log_prob = log_prob - torch.log(self.scale * (1 - y.pow(2)) + 1e-6)  # tanh Jacobian
        return action, log_prob.sum(-1), torch.tanh(mean) * self.scale + self.bias

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        """The deterministic (evaluation) action."""
        mean, _ = self.distribution_params(obs)
        return torch.tanh(mean) * self.scale + self.bias
