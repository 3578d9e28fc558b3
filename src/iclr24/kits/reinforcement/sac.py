"""A compact soft actor-critic (Haarnoja et al. 2018), following CleanRL's ``sac_continuous_action``.

Twin Q networks with Polyak-averaged targets, a tanh-Gaussian actor, and the entropy temperature
tuned towards ``target_entropy`` (default −|A|):

    y = r + γ (1 − done) [min_j Q̄_j(s', a') − α log π(a'|s')],   a' ~ π(·|s')
    L_Q = Σ_j E (Q_j(s, a) − y)²
    L_π = E [α log π(ã|s) − min_j Q_j(s, ã)],   ã ~ π(·|s)  (reparameterised)
    L_α = E [−α (log π(ã|s) + target_entropy)]             (α = exp(log α))

CleanRL's defaults: γ 0.99, τ 0.005, batch 256, actor lr 3e-4, critic and α lr 1e-3, the actor
(and α) updated ``policy_frequency`` = 2 times every second step, targets every step.
``SAC.update`` takes any ``Batch`` (a real buffer, or model rollouts in model-based RL);
``train_sac`` runs the online loop on a gymnasium environment.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import nn

from .buffer import Batch, TransitionBuffer
from .networks import QNetwork, TanhGaussianActor

__all__ = ["SAC", "SACConfig", "SACRun", "train_sac"]


@dataclass(frozen=True)
class SACConfig:
    """SAC hyper-parameters (CleanRL defaults)."""

    hidden: Sequence[int] = (256, 256)
    gamma: float = 0.99
    tau: float = 0.005
    batch_size: int = 256
    actor_lr: float = 3e-4
    critic_lr: float = 1e-3
    policy_frequency: int = 2
    target_frequency: int = 1
    alpha: float = 0.2              # initial (or fixed, without autotune) temperature
    autotune: bool = True
    target_entropy: float | None = None  # None: −act_dim
    learning_starts: int = 5000
    buffer_size: int = 1_000_000
    updates_per_step: int = 1

    def __post_init__(self) -> None:
        if not 0 <= self.gamma <= 1:
            raise ValueError(f"gamma must be in [0, 1]; got {self.gamma}")
        if not 0 < self.tau <= 1:
            raise ValueError(f"tau must be in (0, 1]; got {self.tau}")
        for name in ("batch_size", "policy_frequency", "target_frequency", "buffer_size",
                     "updates_per_step"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int; got {v!r}")
        if self.learning_starts < 0:
            raise ValueError(f"learning_starts must be >= 0; got {self.learning_starts}")
        if not self.alpha > 0:
            raise ValueError(f"alpha must be > 0; got {self.alpha}")


class SAC(nn.Module):
    """Actor, twin critics, their targets, the temperature and their optimisers."""

    def __init__(self, obs_dim: int, act_dim: int, config: SACConfig = SACConfig(), *,
                 action_low: Sequence[float] | float = -1.0,
                 action_high: Sequence[float] | float = 1.0) -> None:
        super().__init__()
        self.config = config
        self.actor = TanhGaussianActor(obs_dim, act_dim, config.hidden, action_low=action_low,
                                       action_high=action_high)
        self.q1 = QNetwork(obs_dim, act_dim, config.hidden)
        self.q2 = QNetwork(obs_dim, act_dim, config.hidden)
        self.q1_target = copy.deepcopy(self.q1).requires_grad_(False)
        self.q2_target = copy.deepcopy(self.q2).requires_grad_(False)
        self.target_entropy = (-float(act_dim) if config.target_entropy is None
                               else float(config.target_entropy))
        self.log_alpha = nn.Parameter(torch.tensor(float(np.log(config.alpha))),
                                      requires_grad=config.autotune)
        self.actor_opt = torch.optim.Adam(self.actor.parameters(), lr=config.actor_lr)
        self.critic_opt = torch.optim.Adam([*self.q1.parameters(), *self.q2.parameters()],
                                           lr=config.critic_lr)
        self.alpha_opt = torch.optim.Adam([self.log_alpha], lr=config.critic_lr)
        self.updates = 0

    @property
    def alpha(self) -> float:
        return float(self.log_alpha.detach().exp())

    def act(self, obs: np.ndarray | torch.Tensor, *, deterministic: bool = False,
            generator: torch.Generator | None = None) -> np.ndarray:
        """Actions for a batch (n, obs_dim) or one observation (obs_dim,), as numpy."""
        device = self.log_alpha.device
        x = torch.as_tensor(np.asarray(obs, np.float32), device=device)
        single = x.dim() == 1
        with torch.no_grad():
            x = x[None] if single else x
            a = self.actor(x) if deterministic else self.actor.sample(x, generator)[0]
        a = a.cpu().numpy()
        return a[0] if single else a

    def update(self, batch: Batch, generator: torch.Generator | None = None) -> dict[str, float]:
        """One gradient step on the critics (and, on its schedule, actor, α and targets)."""
        cfg = self.config
        alpha = self.log_alpha.detach().exp()
        with torch.no_grad():
            next_a, next_logp, _ = self.actor.sample(batch.next_obs, generator)
            next_q = torch.min(self.q1_target(batch.next_obs, next_a),
                               self.q2_target(batch.next_obs, next_a)) - alpha * next_logp
            target = batch.rewards + (1 - batch.terminated) * cfg.gamma * next_q  # Bellman y
        q_loss = (nn.functional.mse_loss(self.q1(batch.obs, batch.actions), target)
                  + nn.functional.mse_loss(self.q2(batch.obs, batch.actions), target))
        self.critic_opt.zero_grad()
        q_loss.backward()
        self.critic_opt.step()
        out = {"q_loss": float(q_loss.detach())}
        if self.updates % cfg.policy_frequency == 0:
            for _ in range(cfg.policy_frequency):  # CleanRL: delayed, compensated updates
                a, logp, _ = self.actor.sample(batch.obs, generator)
                min_q = torch.min(self.q1(batch.obs, a), self.q2(batch.obs, a))
                actor_loss = (self.log_alpha.detach().exp() * logp - min_q).mean()
                self.actor_opt.zero_grad()
                actor_loss.backward()
                self.actor_opt.step()
                out["actor_loss"] = float(actor_loss.detach())
                if cfg.autotune:
                    with torch.no_grad():
                        _, logp, _ = self.actor.sample(batch.obs, generator)
                    alpha_loss = (-self.log_alpha.exp() * (logp + self.target_entropy)).mean()
                    self.alpha_opt.zero_grad()
                    alpha_loss.backward()
                    self.alpha_opt.step()
        if self.updates % cfg.target_frequency == 0:
            with torch.no_grad():
                for net, tgt in ((self.q1, self.q1_target), (self.q2, self.q2_target)):
                    for p, tp in zip(net.parameters(), tgt.parameters()):
                        tp.lerp_(p, cfg.tau)  # θ̄ ← τ θ + (1 − τ) θ̄
        self.updates += 1
        out["alpha"] = self.alpha
        return out


@dataclass
class SACRun:
    """What ``train_sac`` returns besides the agent: per-episode returns and lengths."""

    episode_returns: list[float] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)


def train_sac(env, total_steps: int, *, seed: int, config: SACConfig = SACConfig(),
              agent: SAC | None = None,
              progress: Callable[[float, str], None] | None = None) -> tuple[SAC, SACRun]:
    """Online SAC on a gymnasium environment with a Box action space: uniform random actions
    for the first ``learning_starts`` steps, then the actor's samples; ``updates_per_step``
    gradient steps per environment step after that. Truncation is not termination."""
    import gymnasium as gym

    if not isinstance(env.action_space, gym.spaces.Box):
        raise TypeError(f"train_sac needs a Box action space; got {env.action_space}")
    if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 1:
        raise ValueError(f"total_steps must be a positive int; got {total_steps!r}")
    obs_dim = int(np.prod(env.observation_space.shape))
    act_dim = int(np.prod(env.action_space.shape))
    torch.manual_seed(seed)
    agent = agent or SAC(obs_dim, act_dim, config, action_low=env.action_space.low,
                         action_high=env.action_space.high)
    gen = torch.Generator().manual_seed(seed)
    buffer = TransitionBuffer(obs_dim, act_dim, min(config.buffer_size, total_steps),
                              seed=seed)
    env.action_space.seed(seed)
    obs, _ = env.reset(seed=seed)
    run, ep_ret, ep_len = SACRun(), 0.0, 0
    for step in range(total_steps):
        if step < config.learning_starts:
            action = env.action_space.sample()
        else:
            action = agent.act(obs.reshape(-1), generator=gen)
        next_obs, reward, terminated, truncated, _ = env.step(action)
        buffer.add(obs, action, reward, next_obs, terminated)
        ep_ret += float(reward)
        ep_len += 1
        obs = next_obs
        if terminated or truncated:
            run.episode_returns.append(ep_ret)
            run.episode_lengths.append(ep_len)
            ep_ret, ep_len = 0.0, 0
            obs, _ = env.reset()
        if step >= config.learning_starts:
            for _ in range(config.updates_per_step):
                agent.update(buffer.sample(config.batch_size), gen)
        if progress is not None and (step + 1) % max(total_steps // 100, 1) == 0:
            progress((step + 1) / total_steps, f"step {step + 1}/{total_steps}")
    return agent, run
