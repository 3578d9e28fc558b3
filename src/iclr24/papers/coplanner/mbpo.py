"""MBPO (Janner et al. 2019) with COPlanner's two plug-ins (COPlanner Alg. 2; official
``DMC-MBPO-COPlanner/mbrl/algorithms/mbpo.py``).

The loop, per real environment step t:

1. act in the real environment: the SAC policy's sample (MBPO) or, with ``use_optimistic``,
   UP-MPC(s, sign = +1, rate = α_o) (optimistic exploration: prefer candidates whose predicted
   future is uncertain);
2. every ``freq_train_model`` steps (from ``initial_steps`` on): refit the ``GaussianEnsemble``
   on the real buffer, then start ``rollouts_per_step · freq_train_model`` model rollouts from
   real states, ``rollout_length`` steps each (the schedule grows it linearly per epoch), each
   action the policy's sample (MBPO) or, with ``use_conservative``, UP-MPC(s, sign = −1,
   rate = α_c) (conservative rollouts). The generated transitions go to the SAC buffer with the
   model's reward, never penalised: uncertainty only steers which action is taken;
3. ``sac_updates_per_step`` SAC updates on the SAC buffer (``real_data_ratio`` = 0, as in the
   official config: SAC learns from model data only).

The first ``initial_steps`` steps act with the untrained policy (official: 5 000 steps);
evaluation uses the deterministic policy mean on a separate environment instance, never UP-MPC.
``COPlannerConfig``'s defaults are the official DMC ones (pendulum swingup override); the claims
shrink them (see ``claims.py``). With ``use_conservative = use_optimistic = False`` this is plain
MBPO, the paper's baseline, sharing every other line.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from iclr24.kits.reinforcement import SAC, SACConfig, TransitionBuffer, evaluate_policy

from .dynamics_model import GaussianEnsemble
from .planner import up_mpc_action

__all__ = ["MBPO", "COPlannerConfig", "MBPOHistory", "RolloutBatch", "rollout_length"]

Dynamics = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]


def _pos_int(name: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be an int >= 1; got {v!r}")


@dataclass(frozen=True)
class COPlannerConfig:
    """Hyper-parameters of MBPO + COPlanner (defaults: official ``mbpo.yaml`` and the DMC
    pendulum-swingup override; the model size is the proposed API's, with no elites)."""

    # COPlanner (UP-MPC)
    use_conservative: bool = True
    use_optimistic: bool = True
    conservative_rate: float = 2.0      # α_c
    optimistic_rate: float = 1.0        # α_o
    n_candidates: int = 5               # N_c ("ntraj")
    planning_horizon: int = 5           # H
    reward_gamma: float = 0.97          # γ_r
    uncertainty_gamma: float = 0.97     # γ_u
    # dynamics model
    n_members: int = 5
    model_hidden: int = 200
    model_layers: int = 4
    model_lr: float = 1e-3
    model_weight_decay: float = 1e-5
    model_batch_size: int = 256
    validation_ratio: float = 0.2
    patience: int = 5
    max_model_epochs: int = 50
    model_noise: str = "shared"
    # MBPO
    initial_steps: int = 5000
    freq_train_model: int = 250
    rollouts_per_step: int = 400
    rollout_schedule: tuple[int, int, int, int] = (20, 150, 1, 4)  # epochs a→b, length c→d
    epoch_length: int = 1000
    retain_epochs: int = 1
    sac_updates_per_step: int = 10
    sac: SACConfig = field(default_factory=lambda: SACConfig(
        hidden=(512, 512), critic_lr=3e-4, policy_frequency=1, learning_starts=0))

    def __post_init__(self) -> None:
        for name in ("n_candidates", "planning_horizon", "n_members", "model_hidden",
                     "model_layers", "model_batch_size", "patience", "max_model_epochs",
                     "freq_train_model", "rollouts_per_step", "epoch_length", "retain_epochs"):
            _pos_int(name, getattr(self, name))
        if isinstance(self.initial_steps, bool) or not isinstance(self.initial_steps, int) \
                or self.initial_steps < 2:
            raise ValueError(f"initial_steps must be an int >= 2 (the model needs data); got "
                             f"{self.initial_steps!r}")
        if self.sac_updates_per_step < 0:
            raise ValueError(f"sac_updates_per_step must be >= 0; got {self.sac_updates_per_step}")
        for name in ("conservative_rate", "optimistic_rate"):
            if not getattr(self, name) >= 0:
                raise ValueError(f"{name} must be >= 0; got {getattr(self, name)}")
        for name in ("reward_gamma", "uncertainty_gamma"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1]; got {getattr(self, name)}")
        a, b, c, d = self.rollout_schedule
        if not (0 <= a < b and 1 <= c and 1 <= d):
            raise ValueError(f"rollout_schedule must be (epoch_a < epoch_b, length_a >= 1, "
                             f"length_b >= 1); got {self.rollout_schedule}")
        if not isinstance(self.sac, SACConfig):
            raise TypeError(f"sac must be a SACConfig; got {type(self.sac).__name__}")


def rollout_length(schedule: tuple[int, int, int, int], epoch: int) -> int:
    """mbrl-lib's truncated linear schedule at (1-based) ``epoch``: length c up to epoch a,
    d from epoch b, linear in between (truncated to an int)."""
    a, b, c, d = schedule
    frac = 0.0 if epoch <= a else min((epoch - a) / (b - a), 1.0)
    return int(c + frac * (d - c))


@dataclass
class MBPOHistory:
    """What ``MBPO.train`` records. eval_*: one entry per evaluation (mean undiscounted return
    of the deterministic policy); episode_*: every finished real training episode;
    refit_*: one entry per model refit (val_mse of the model, mean uncertainty u and, when
    ``true_dynamics`` is given, mean ‖ŝ' − f(s, a)‖₂ of the generated rollout transitions)."""

    eval_steps: list[int] = field(default_factory=list)
    eval_returns: list[float] = field(default_factory=list)
    episode_returns: list[float] = field(default_factory=list)
    episode_terminated: list[bool] = field(default_factory=list)
    refit_steps: list[int] = field(default_factory=list)
    model_val_mse: list[float] = field(default_factory=list)
    rollout_uncertainty: list[float] = field(default_factory=list)
    rollout_error: list[float] = field(default_factory=list)
    rollout_lengths: list[int] = field(default_factory=list)
    wall_s: float = 0.0


@dataclass(frozen=True)
class RolloutBatch:
    """Model-generated transitions (numpy): obs (n, d_o), actions (n, d_a), rewards (n,),
    next_obs (n, d_o), terminated (n,), uncertainty (n,) (u of the chosen (s, a))."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    uncertainty: np.ndarray


class MBPO:
    """MBPO, optionally with COPlanner's conservative rollouts and optimistic exploration.

    env: a gymnasium environment with Box spaces (the training instance); termination_fn:
    next_obs (n, d_o) -> (n,) bool, the known termination rule used in model rollouts (MBPO's);
    seed: seeds the networks, the buffers, the planner and the environment.
    """

    def __init__(self, env: Any, config: COPlannerConfig = COPlannerConfig(), *, seed: int,
                 termination_fn: Callable[[np.ndarray], np.ndarray]) -> None:
        import gymnasium as gym

        if not isinstance(config, COPlannerConfig):
            raise TypeError(f"config must be a COPlannerConfig; got {type(config).__name__}")
        if not isinstance(env.action_space, gym.spaces.Box) or \
                not isinstance(env.observation_space, gym.spaces.Box):
            raise TypeError("MBPO needs Box observation and action spaces")
        self.env, self.config, self.seed = env, config, int(seed)
        self.termination_fn = termination_fn
        self.obs_dim = int(np.prod(env.observation_space.shape))
        self.act_dim = int(np.prod(env.action_space.shape))
        torch.manual_seed(self.seed)
        self.agent = SAC(self.obs_dim, self.act_dim, config.sac,
                         action_low=env.action_space.low, action_high=env.action_space.high)
        self.model = GaussianEnsemble(self.obs_dim, self.act_dim, config.n_members,
                                      config.model_hidden, config.model_layers,
                                      noise=config.model_noise)
        self.generator = torch.Generator().manual_seed(self.seed)
        self._rng = np.random.default_rng(self.seed)
        self.sac_buffer: TransitionBuffer | None = None
        self.real_buffer: TransitionBuffer | None = None  # set by train: every real transition

    # -- the two uses of UP-MPC ----------------------------------------------------------
    def _policy(self, obs: torch.Tensor, generator: torch.Generator | None) -> torch.Tensor:
        return self.agent.actor.sample(obs, generator)[0]

    def _plan(self, obs: torch.Tensor, sign: int, rate: float) -> torch.Tensor:
        c = self.config
        return up_mpc_action(obs, self._policy, self.model, n_candidates=c.n_candidates,
                             horizon=c.planning_horizon, gamma_r=c.reward_gamma,
                             gamma_u=c.uncertainty_gamma, rate=rate, sign=sign,
                             generator=self.generator)

    def explore_action(self, obs: np.ndarray) -> np.ndarray:
        """The real-environment action: UP-MPC(+, α_o) with ``use_optimistic``, else π's sample."""
        o = np.asarray(obs, np.float32)
        if o.size != self.obs_dim:
            raise ValueError(f"obs must have {self.obs_dim} entries; got shape {o.shape}")
        if not np.isfinite(o).all():
            raise ValueError(f"obs must be finite; got {o.reshape(-1).tolist()}")
        x = torch.as_tensor(o.reshape(1, -1))
        with torch.no_grad():
            if self.config.use_optimistic and self.model.fitted:
                a = self._plan(x, +1, self.config.optimistic_rate)
            else:
                a = self._policy(x, self.generator)
        return a[0].numpy()

    def generate_rollouts(self, start_obs: np.ndarray, length: int, *,
                          conservative: bool | None = None,
                          rate: float | None = None) -> RolloutBatch:
        """Roll the model ``length`` steps from each row of start_obs (n, d_o), every action from
        UP-MPC(−, rate) if ``conservative`` (default: the config's ``use_conservative``; rate
        default α_c) else from π; rows stop after a predicted termination. Returns every
        generated transition."""
        _pos_int("length", length)
        rate = self.config.conservative_rate if rate is None else float(rate)
        if not rate >= 0:
            raise ValueError(f"rate must be >= 0; got {rate}")
        if not self.model.fitted:
            raise RuntimeError("the model is not fitted yet")
        conservative = self.config.use_conservative if conservative is None else conservative
        obs = torch.as_tensor(np.asarray(start_obs, np.float32))
        if obs.dim() != 2 or obs.shape[1] != self.obs_dim or obs.shape[0] < 1:
            raise ValueError(f"start_obs must have shape (n, {self.obs_dim}) with n >= 1; got "
                             f"{tuple(obs.shape)}")
        if not bool(torch.isfinite(obs).all()):
            raise ValueError("start_obs must be finite; got NaN or infinite entries")
        alive = np.ones(obs.shape[0], dtype=bool)
        parts: list[tuple[np.ndarray, ...]] = []
        with torch.no_grad():
            for _ in range(length):
                if conservative:  # a = UP-MPC(s, −1, α_c)
                    act = self._plan(obs, -1, rate)
                else:
                    act = self._policy(obs, self.generator)
                nxt, rew, unc = self.model.sample(obs, act, self.generator)
                term = np.asarray(self.termination_fn(nxt.numpy()), dtype=bool)
                parts.append(tuple(x[alive] for x in (obs.numpy(), act.numpy(), rew.numpy(),
                                                      nxt.numpy(), term, unc.numpy())))
                alive &= ~term
                obs = nxt
                if not alive.any():
                    break
        o, a, r, n, t, u = (np.concatenate(col) for col in zip(*parts))
        return RolloutBatch(o, a, r, n, t.astype(np.float32), u)

    # -- training ----------------------------------------------------------------------
    def _refit_and_roll(self, real: TransitionBuffer, step: int, history: MBPOHistory,
                        true_dynamics: Dynamics | None) -> None:
        c = self.config
        fit = self.model.fit(real, generator=self.generator, lr=c.model_lr,
                             weight_decay=c.model_weight_decay, batch_size=c.model_batch_size,
                             validation_ratio=c.validation_ratio, patience=c.patience,
                             max_epochs=c.max_model_epochs)
        length = rollout_length(c.rollout_schedule, step // c.epoch_length + 1)
        n_starts = c.rollouts_per_step * c.freq_train_model
        capacity = length * n_starts * math.ceil(c.epoch_length / c.freq_train_model) \
            * c.retain_epochs
        if self.sac_buffer is None or self.sac_buffer.capacity != capacity:
            new = TransitionBuffer(self.obs_dim, self.act_dim, capacity,
                                   seed=int(self._rng.integers(2**31)))
            if self.sac_buffer is not None and len(self.sac_buffer):
                old = self.sac_buffer.all()
                keep = slice(max(0, len(self.sac_buffer) - capacity), None)
                new.add(old.obs[keep], old.actions[keep], old.rewards[keep],
                        old.next_obs[keep], old.terminated[keep])
            self.sac_buffer = new
        starts = real.sample(n_starts).obs.numpy()
        batch = self.generate_rollouts(starts, length)
        self.sac_buffer.add(batch.obs, batch.actions, batch.rewards, batch.next_obs,
                            batch.terminated)  # stored rewards: the model's, unpenalised
        history.refit_steps.append(step)
        history.model_val_mse.append(fit["val_mse"])
        history.rollout_uncertainty.append(float(batch.uncertainty.mean()))
        history.rollout_lengths.append(length)
        if true_dynamics is not None:
            true_next, _ = true_dynamics(batch.obs, batch.actions)
            history.rollout_error.append(
                float(np.linalg.norm(batch.next_obs - true_next, axis=1).mean()))

    def train(self, total_steps: int, *, make_eval_env: Callable[[], Any] | None = None,
              eval_every: int = 1000, eval_episodes: int = 5,
              true_dynamics: Dynamics | None = None,
              on_refit: Callable[[MBPO, TransitionBuffer, int], None] | None = None,
              progress: Callable[[float, str], None] | None = None) -> MBPOHistory:
        """Run ``total_steps`` real environment steps (exploration steps included); evaluate the
        deterministic policy every ``eval_every`` steps on ``make_eval_env()`` (seeded apart from
        training) if given; ``true_dynamics(obs, act) -> (next_obs, reward)`` adds the rollout
        model error to the history; ``on_refit(self, real_buffer, step)`` runs after every
        refit and its rollouts (e.g. to probe the model at that checkpoint)."""
        _pos_int("total_steps", total_steps)
        _pos_int("eval_every", eval_every)
        _pos_int("eval_episodes", eval_episodes)
        c, env = self.config, self.env
        started = time.perf_counter()
        history = MBPOHistory()
        real = self.real_buffer = TransitionBuffer(self.obs_dim, self.act_dim, total_steps,
                                                   seed=self.seed + 1)
        env.action_space.seed(self.seed)
        obs, _ = env.reset(seed=self.seed)
        ep_ret = 0.0
        for step in range(total_steps):
            if step >= c.initial_steps and (step - c.initial_steps) % c.freq_train_model == 0:
                self._refit_and_roll(real, step, history, true_dynamics)
                if on_refit is not None:
                    on_refit(self, real, step)
            action = self.explore_action(obs)
            next_obs, reward, terminated, truncated, _ = env.step(action)
            real.add(obs, action, reward, next_obs, terminated)
            ep_ret += float(reward)
            obs = next_obs
            if terminated or truncated:
                history.episode_returns.append(ep_ret)
                history.episode_terminated.append(bool(terminated))
                ep_ret = 0.0
                obs, _ = env.reset()
            if self.sac_buffer is not None:
                for _ in range(c.sac_updates_per_step):
                    self.agent.update(self.sac_buffer.sample(c.sac.batch_size), self.generator)
            if make_eval_env is not None and (step + 1) % eval_every == 0:
                returns = evaluate_policy(lambda o: self.agent.act(o, deterministic=True),
                                          make_eval_env, episodes=eval_episodes,
                                          seed=10_000 + 1_000 * self.seed + step)
                history.eval_steps.append(step + 1)
                history.eval_returns.append(float(np.mean(returns)))
            if progress is not None and (step + 1) % max(total_steps // 20, 1) == 0:
                progress((step + 1) / total_steps, f"step {step + 1}/{total_steps}")
        history.wall_s = time.perf_counter() - started
        return history
