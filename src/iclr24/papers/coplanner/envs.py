"""The two classic-control tasks of the laptop-scale COPlanner reproduction, as gymnasium
environments with their true dynamics also exposed as vectorised numpy functions.

The paper evaluates on MuJoCo Gym and DeepMind Control (hopper hop, walker run, quadruped run,
cartpole swingup sparse, pendulum swingup, ...) and visual DMC; MuJoCo/DMC training at paper
scale (hundreds of thousands of steps, 7-model ensembles) is out of reach on 2 CPU cores, so
the analogue uses:

- ``PendulumEnv``: gymnasium's ``Pendulum-v1`` (dense reward −(θ² + 0.1 θ̇² + 0.001 u²),
  never terminates, 200-step episodes). The counterpart of DMC pendulum swingup.
- ``MountainCarEnv``: gymnasium's ``MountainCarContinuous-v0`` (+100 only on reaching the flag,
  −0.1 a² per step, terminates at the goal, 999-step episodes): exploration-hard, plain SAC/MBPO
  often settles on "do nothing".

Both reproduce gymnasium's physics and reset distributions step for step (the tests compare
them with ``gymnasium.make``); writing them here gives the vectorised true dynamics
``pendulum_step`` / ``mountaincar_step`` that measure a learned model's error on arbitrary
(s, a) batches, and a known ``termination_fn`` for model rollouts (as MBPO uses).
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

__all__ = [
    "MountainCarEnv",
    "PendulumEnv",
    "mountaincar_step",
    "mountaincar_termination",
    "pendulum_step",
    "pendulum_termination",
]

# Pendulum-v1 constants
_G, _M, _L, _DT, _MAX_SPEED, _MAX_TORQUE = 10.0, 1.0, 1.0, 0.05, 8.0, 2.0
# MountainCarContinuous-v0 constants
_MIN_POS, _MAX_POS, _MAX_SPEED_CAR, _GOAL_POS, _GOAL_VEL, _POWER = -1.2, 0.6, 0.07, 0.45, 0.0, 0.0015


def _batch(obs: Any, action: Any, obs_dim: int) -> tuple[np.ndarray, np.ndarray]:
    o = np.asarray(obs, dtype=np.float64)
    a = np.asarray(action, dtype=np.float64)
    if o.ndim != 2 or o.shape[1] != obs_dim:
        raise ValueError(f"obs must have shape (n, {obs_dim}); got {o.shape}")
    if a.ndim != 2 or a.shape != (o.shape[0], 1):
        raise ValueError(f"action must have shape ({o.shape[0]}, 1); got {a.shape}")
    for name, x in (("obs", o), ("action", a)):
        if not np.isfinite(x).all():
            raise ValueError(f"{name} must be finite; got NaN or infinite entries")
    return o, a[:, 0]


def pendulum_step(obs: Any, action: Any) -> tuple[np.ndarray, np.ndarray]:
    """True Pendulum-v1 transition for a batch: obs (n, 3) = (cos θ, sin θ, θ̇), action (n, 1)
    -> (next_obs (n, 3), reward (n,)). θ = atan2(sin, cos), so obs off the unit circle (a model's
    drifted prediction) still has a defined true successor."""
    o, u = _batch(obs, action, 3)
    th, thdot = np.arctan2(o[:, 1], o[:, 0]), o[:, 2]
    u = np.clip(u, -_MAX_TORQUE, _MAX_TORQUE)
    ang = ((th + np.pi) % (2 * np.pi)) - np.pi
    reward = -(ang**2 + 0.1 * thdot**2 + 0.001 * u**2)
    new_thdot = thdot + (3 * _G / (2 * _L) * np.sin(th) + 3.0 / (_M * _L**2) * u) * _DT
    new_thdot = np.clip(new_thdot, -_MAX_SPEED, _MAX_SPEED)
    new_th = th + new_thdot * _DT
    return np.stack([np.cos(new_th), np.sin(new_th), new_thdot], axis=1), reward


def pendulum_termination(next_obs: np.ndarray) -> np.ndarray:
    """Pendulum never terminates: all False, (n,)."""
    return np.zeros(np.asarray(next_obs).shape[0], dtype=bool)


def mountaincar_step(obs: Any, action: Any) -> tuple[np.ndarray, np.ndarray]:
    """True MountainCarContinuous-v0 transition: obs (n, 2) = (position, velocity), action (n, 1)
    -> (next_obs (n, 2), reward (n,)) with reward = 100·[goal] − 0.1 a²."""
    o, a = _batch(obs, action, 2)
    pos, vel = o[:, 0], o[:, 1]
    force = np.clip(a, -1.0, 1.0)
    vel = np.clip(vel + force * _POWER - 0.0025 * np.cos(3 * pos), -_MAX_SPEED_CAR, _MAX_SPEED_CAR)
    pos = np.clip(pos + vel, _MIN_POS, _MAX_POS)
    vel = np.where((pos == _MIN_POS) & (vel < 0), 0.0, vel)
    goal = (pos >= _GOAL_POS) & (vel >= _GOAL_VEL)
    reward = 100.0 * goal - 0.1 * a**2
    return np.stack([pos, vel], axis=1), reward


def mountaincar_termination(next_obs: np.ndarray) -> np.ndarray:
    """The flag: position ≥ 0.45 with non-negative velocity, (n,) bool."""
    o = np.asarray(next_obs)
    return (o[:, 0] >= _GOAL_POS) & (o[:, 1] >= _GOAL_VEL)


class _ClassicControl(gym.Env):
    """Shared step/reset bookkeeping: obs as float32, truncation at ``max_episode_steps``."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, max_episode_steps: int) -> None:
        if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int) \
                or max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be a positive int; got "
                             f"{max_episode_steps!r}")
        self.max_episode_steps = max_episode_steps
        self._obs = np.zeros(self.observation_space.shape, np.float64)
        self._t = 0

    def _dynamics(self, obs: np.ndarray, action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def _terminal(self, obs: np.ndarray) -> bool:
        return False

    def step(self, action: Any):
        a = np.asarray(action, dtype=np.float64).reshape(1, 1)
        next_obs, reward = self._dynamics(self._obs[None], a)
        self._obs = next_obs[0]
        self._t += 1
        terminated = self._terminal(next_obs)
        truncated = self._t >= self.max_episode_steps
        return self._obs.astype(np.float32), float(reward[0]), terminated, truncated, {}


class PendulumEnv(_ClassicControl):
    """Pendulum-v1 (see the module docstring); reset θ ~ U[−π, π], θ̇ ~ U[−1, 1]."""

    def __init__(self, max_episode_steps: int = 200) -> None:
        high = np.array([1.0, 1.0, _MAX_SPEED], dtype=np.float32)
        self.observation_space = gym.spaces.Box(-high, high, dtype=np.float32)
        self.action_space = gym.spaces.Box(-_MAX_TORQUE, _MAX_TORQUE, shape=(1,), dtype=np.float32)
        super().__init__(max_episode_steps)

    def _dynamics(self, obs, action):
        return pendulum_step(obs, action)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        th, thdot = self.np_random.uniform(low=[-np.pi, -1.0], high=[np.pi, 1.0])
        self._obs = np.array([np.cos(th), np.sin(th), thdot])
        self._t = 0
        return self._obs.astype(np.float32), {}


class MountainCarEnv(_ClassicControl):
    """MountainCarContinuous-v0 (see the module docstring); reset position ~ U[−0.6, −0.4]."""

    def __init__(self, max_episode_steps: int = 999) -> None:
        self.observation_space = gym.spaces.Box(
            np.array([_MIN_POS, -_MAX_SPEED_CAR], np.float32),
            np.array([_MAX_POS, _MAX_SPEED_CAR], np.float32), dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, shape=(1,), dtype=np.float32)
        super().__init__(max_episode_steps)

    def _dynamics(self, obs, action):
        return mountaincar_step(obs, action)

    def _terminal(self, obs: np.ndarray) -> bool:
        return bool(mountaincar_termination(obs)[0])

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        self._obs = np.array([self.np_random.uniform(low=-0.6, high=-0.4), 0.0])
        self._t = 0
        return self._obs.astype(np.float32), {}
