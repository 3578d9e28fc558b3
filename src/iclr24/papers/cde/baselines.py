"""The offline-RL baselines of the CDE claims, written here (IN-HOUSE, not the reference
libraries): behaviour cloning, a compact CQL and a compact IQL.

d3rlpy (the spec's source of CQL/IQL/BC) pins gymnasium 1.0 and gym 0.26 and cannot be installed
beside this project's gymnasium 1.4, so these follow the papers and d3rlpy's defaults instead,
on the RL kit's ``TanhGaussianActor`` and ``QNetwork``:

- ``BC``: maximum likelihood of the data actions under a tanh-Gaussian policy (pre-tanh density
  of atanh(a), as CDE's behaviour model); deterministic action tanh(μ(s)).
- ``CQL`` (Kumar et al. 2020, CQL(H) on SAC): twin critics, Polyak targets (τ = 0.005), critic
  loss = TD error + w_cql · (log Σ exp over ``n_action_samples`` uniform, π(·|s) and π(·|s')
  actions with importance weights − Q(s, a_data)); SAC actor with auto-tuned entropy;
  d3rlpy's learning rates (actor 1e-4, critic 3e-4), conservative weight 5, fixed (no Lagrange).
- ``IQL`` (Kostrikov et al. 2022): expectile V (τ = 0.7), twin Q on r + γ V(s'), advantage-
  weighted regression exp(β (min Q − V)) clipped at 100 with β = 3 (the paper's MuJoCo/maze
  setting), lr 3e-4, Polyak targets.

All three read the same ``OfflineDataset`` and standardise observations with its statistics.
Rewards: CDE standardises them and multiplies by 0.1 (official); CQL and IQL use the raw sparse
rewards (d3rlpy's default is no reward scaling); BC ignores them.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from iclr24.kits.reinforcement import QNetwork, TanhGaussianActor, mlp

from .cde import policy_actions
from .dataset import OfflineDataset

__all__ = ["BC", "CQL", "IQL"]

_EPS = 1e-6


def _check_fit(agent, dataset, n_steps) -> None:
    if not isinstance(dataset, OfflineDataset):
        raise TypeError(f"dataset must be an OfflineDataset; got {type(dataset).__name__}")
    if dataset.obs_dim != agent.obs_dim or dataset.act_dim != agent.act_dim:
        raise ValueError(f"dataset has obs/act dims ({dataset.obs_dim}, {dataset.act_dim}); "
                         f"the agent was built for ({agent.obs_dim}, {agent.act_dim})")
    if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive int; got {n_steps!r}")


class _OfflineAgent(nn.Module):
    """Shared pieces: observation standardisation, tensors of the data, ``act``."""

    def __init__(self, obs_dim: int, act_dim: int, hidden: Sequence[int], batch_size: int,
                 seed: int) -> None:
        super().__init__()
        for name, v in (("obs_dim", obs_dim), ("act_dim", act_dim), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int; got {v!r}")
        self.obs_dim, self.act_dim, self.batch_size = obs_dim, act_dim, batch_size
        self.hidden = tuple(hidden)
        torch.manual_seed(seed)
        self.actor = TanhGaussianActor(obs_dim, act_dim, self.hidden)
        self.register_buffer("obs_mean", torch.zeros(obs_dim))
        self.register_buffer("obs_std", torch.ones(obs_dim))
        self.fitted = False

    def _normalise(self, obs) -> torch.Tensor:
        return (torch.as_tensor(np.asarray(obs, np.float32)) - self.obs_mean) / self.obs_std

    def _tensors(self, ds: OfflineDataset):
        self.obs_mean.copy_(torch.as_tensor(ds.obs.mean(0)))
        self.obs_std.copy_(torch.as_tensor(ds.obs.std(0) + 1e-7))
        f = lambda x: torch.as_tensor(np.asarray(x, np.float32))
        return (self._normalise(ds.obs), f(ds.actions), f(ds.rewards),
                self._normalise(ds.next_obs), f(1.0 - ds.terminals))

    def act(self, obs: np.ndarray, deterministic: bool = True,
            generator: torch.Generator | None = None) -> np.ndarray:
        """Actions in [−1, 1] for raw observations (obs_dim,) or (n, obs_dim)."""
        return policy_actions(self, self.actor, obs, deterministic, generator)

    def _log_prob_data(self, obs: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        """Pre-tanh log density of atanh(a) under the actor (n,)."""
        mean, log_std = self.actor.distribution_params(obs)
        u = torch.atanh(actions.clamp(-1 + _EPS, 1 - _EPS))
        return torch.distributions.Normal(mean, log_std.exp()).log_prob(u).sum(-1)


class BC(_OfflineAgent):
    """Behaviour cloning by maximum likelihood (lr 3e-4, Adam). ``successful_only=True`` is
    filtered BC ("%BC", Chen et al. 2021): it clones only the transitions that CDE's official
    ``is_optimal`` weights flag (episodes whose last reward is positive), or all of them when
    fewer than 10 are flagged (the official fallback), i.e. BC given the same success
    information that CDE's policy loss uses."""

    def __init__(self, obs_dim: int, act_dim: int, *, hidden: Sequence[int] = (256, 256),
                 batch_size: int = 256, lr: float = 3e-4, successful_only: bool = False,
                 seed: int = 0) -> None:
        super().__init__(obs_dim, act_dim, hidden, batch_size, seed)
        if not isinstance(successful_only, bool):
            raise TypeError(f"successful_only must be a bool; got "
                            f"{type(successful_only).__name__}")
        self.lr, self.successful_only = lr, successful_only

    def fit(self, dataset: OfflineDataset, n_steps: int,
            generator: torch.Generator | None = None) -> dict[str, list[float]]:
        _check_fit(self, dataset, n_steps)
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        if self.successful_only:
            flags = dataset.optimal_episode_weights()
            if (flags >= 0.5).sum() >= 10:  # else: the official fallback, all transitions
                dataset = dataset.select(flags >= 0.5)
        obs, act, *_ = self._tensors(dataset)
        opt = torch.optim.Adam(self.actor.parameters(), lr=self.lr)
        hist = {"bc_loss": []}
        for _ in range(n_steps):
            idx = torch.randint(0, len(obs), (self.batch_size,), generator=gen)
            loss = -self._log_prob_data(obs[idx], act[idx]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            hist["bc_loss"].append(float(loss.detach()))
        self.fitted = True
        return hist


class CQL(_OfflineAgent):
    """In-house CQL(H) on SAC (see the module docstring)."""

    def __init__(self, obs_dim: int, act_dim: int, *, hidden: Sequence[int] = (256, 256),
                 batch_size: int = 256, gamma: float = 0.99, tau: float = 0.005,
                 actor_lr: float = 1e-4, critic_lr: float = 3e-4, temp_lr: float = 1e-4,
                 conservative_weight: float = 5.0, n_action_samples: int = 10,
                 seed: int = 0) -> None:
        super().__init__(obs_dim, act_dim, hidden, batch_size, seed)
        if isinstance(n_action_samples, bool) or not isinstance(n_action_samples, int) \
                or n_action_samples < 1:
            raise ValueError(f"n_action_samples must be a positive int; got {n_action_samples!r}")
        self.q = nn.ModuleList([QNetwork(obs_dim, act_dim, self.hidden) for _ in range(2)])
        self.q_target = copy.deepcopy(self.q).requires_grad_(False)
        self.log_temp = nn.Parameter(torch.zeros(()))
        self.gamma, self.tau, self.weight, self.k = gamma, tau, conservative_weight, \
            n_action_samples
        self.lrs = (actor_lr, critic_lr, temp_lr)

    def _q_all(self, nets, obs, act) -> torch.Tensor:
        return torch.stack([q(obs, act) for q in nets])  # (2, n)

    def fit(self, dataset: OfflineDataset, n_steps: int,
            generator: torch.Generator | None = None) -> dict[str, list[float]]:
        _check_fit(self, dataset, n_steps)
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        obs, act, rew, nxt, nd = self._tensors(dataset)
        opt_a = torch.optim.Adam(self.actor.parameters(), lr=self.lrs[0])
        opt_q = torch.optim.Adam(self.q.parameters(), lr=self.lrs[1])
        opt_t = torch.optim.Adam([self.log_temp], lr=self.lrs[2])
        m, k, bs = self.act_dim, self.k, self.batch_size
        log_uniform = -m * np.log(2.0)  # density of U[−1, 1]^m
        hist = {"q_loss": [], "cql_penalty": [], "actor_loss": []}
        for _ in range(n_steps):
            idx = torch.randint(0, len(obs), (bs,), generator=gen)
            s, a, r, s2, d = obs[idx], act[idx], rew[idx], nxt[idx], nd[idx]
            temp = self.log_temp.detach().exp()
            with torch.no_grad():
                a2, logp2, _ = self.actor.sample(s2, gen)
                q_next = self._q_all(self.q_target, s2, a2).min(0).values - temp * logp2
                target = r + self.gamma * d * q_next              # soft Bellman target
                s_rep, s2_rep = s.repeat(k, 1), s2.repeat(k, 1)
                a_pi, logp_pi, _ = self.actor.sample(s_rep, gen)
                a_pi2, logp_pi2, _ = self.actor.sample(s2_rep, gen)
                a_rand = torch.rand((k * bs, m), generator=gen) * 2 - 1
            q_data = self._q_all(self.q, s, a)
            # log Σ_a exp Q(s, a) by importance sampling (CQL(H), uniform + policy proposals)
            cat = torch.cat([self._q_all(self.q, s_rep, a_rand) - log_uniform,
                             self._q_all(self.q, s_rep, a_pi) - logp_pi,
                             self._q_all(self.q, s_rep, a_pi2) - logp_pi2], 1)
            lse = torch.logsumexp(cat.view(2, 3 * k, bs), 1) - np.log(3 * k)
            penalty = (lse - q_data).mean()
            q_loss = (q_data - target).pow(2).mean(1).sum() + self.weight * 2 * penalty
            opt_q.zero_grad()
            q_loss.backward()
            opt_q.step()
            a_new, logp_new, _ = self.actor.sample(s, gen)
            actor_loss = (temp * logp_new - self._q_all(self.q, s, a_new).min(0).values).mean()
            opt_a.zero_grad()
            actor_loss.backward()
            opt_a.step()
            temp_loss = -(self.log_temp.exp() * (logp_new.detach() - m)).mean()  # target −m
            opt_t.zero_grad()
            temp_loss.backward()
            opt_t.step()
            with torch.no_grad():
                for p, tp in zip(self.q.parameters(), self.q_target.parameters()):
                    tp.lerp_(p, self.tau)
            hist["q_loss"].append(float(q_loss.detach()))
            hist["cql_penalty"].append(float(penalty.detach()))
            hist["actor_loss"].append(float(actor_loss.detach()))
        self.fitted = True
        return hist


class IQL(_OfflineAgent):
    """In-house IQL (see the module docstring)."""

    def __init__(self, obs_dim: int, act_dim: int, *, hidden: Sequence[int] = (256, 256),
                 batch_size: int = 256, gamma: float = 0.99, tau: float = 0.005,
                 expectile: float = 0.7, beta: float = 3.0, lr: float = 3e-4,
                 seed: int = 0) -> None:
        super().__init__(obs_dim, act_dim, hidden, batch_size, seed)
        if not 0 < expectile < 1:
            raise ValueError(f"expectile must be in (0, 1); got {expectile}")
        self.q = nn.ModuleList([QNetwork(obs_dim, act_dim, self.hidden) for _ in range(2)])
        self.q_target = copy.deepcopy(self.q).requires_grad_(False)
        self.v_net = mlp(obs_dim, 1, self.hidden)
        self.gamma, self.tau, self.expectile, self.beta, self.lr = gamma, tau, expectile, \
            beta, lr

    def fit(self, dataset: OfflineDataset, n_steps: int,
            generator: torch.Generator | None = None) -> dict[str, list[float]]:
        _check_fit(self, dataset, n_steps)
        gen = generator if generator is not None else torch.Generator().manual_seed(0)
        obs, act, rew, nxt, nd = self._tensors(dataset)
        opt_v = torch.optim.Adam(self.v_net.parameters(), lr=self.lr)
        opt_q = torch.optim.Adam(self.q.parameters(), lr=self.lr)
        opt_a = torch.optim.Adam(self.actor.parameters(), lr=self.lr)
        hist = {"v_loss": [], "q_loss": [], "actor_loss": []}
        for _ in range(n_steps):
            idx = torch.randint(0, len(obs), (self.batch_size,), generator=gen)
            s, a, r, s2, d = obs[idx], act[idx], rew[idx], nxt[idx], nd[idx]
            with torch.no_grad():
                q_t = torch.min(self.q_target[0](s, a), self.q_target[1](s, a))
            v = self.v_net(s).squeeze(-1)
            diff = q_t - v
            weight = torch.where(diff > 0, self.expectile, 1 - self.expectile)
            v_loss = (weight * diff.pow(2)).mean()               # expectile regression
            opt_v.zero_grad()
            v_loss.backward()
            opt_v.step()
            with torch.no_grad():
                target = r + self.gamma * d * self.v_net(s2).squeeze(-1)
            q_loss = sum((q(s, a) - target).pow(2).mean() for q in self.q)
            opt_q.zero_grad()
            q_loss.backward()
            opt_q.step()
            adv = (q_t - v.detach())
            w = torch.exp(self.beta * adv).clamp(max=100.0)       # AWR weights
            actor_loss = -(w * self._log_prob_data(s, a)).mean()
            opt_a.zero_grad()
            actor_loss.backward()
            opt_a.step()
            with torch.no_grad():
                for p, tp in zip(self.q.parameters(), self.q_target.parameters()):
                    tp.lerp_(p, self.tau)
            hist["v_loss"].append(float(v_loss.detach()))
            hist["q_loss"].append(float(q_loss.detach()))
            hist["actor_loss"].append(float(actor_loss.detach()))
        self.fitted = True
        return hist
