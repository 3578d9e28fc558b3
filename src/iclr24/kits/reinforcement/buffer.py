"""A transition buffer with seeded uniform sampling (CleanRL/SB3-style replay, as numpy rings).

``TransitionBuffer`` stores (obs, action, reward, next_obs, terminated) rows up to ``capacity``
and then overwrites the oldest; ``sample(n)`` draws rows uniformly with replacement from its own
``numpy.random.Generator`` (the same seed and the same additions give the same batches) and
returns float32 torch tensors on ``device``. ``terminated`` is the true end of an episode (no
bootstrap); a time-limit truncation is stored as not terminated.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

__all__ = ["Batch", "TransitionBuffer"]


@dataclass(frozen=True)
class Batch:
    """A sampled minibatch: obs (n, d_o), actions (n, d_a), rewards (n,), next_obs (n, d_o),
    terminated (n,) as float32 tensors (terminated is 0/1)."""

    obs: torch.Tensor
    actions: torch.Tensor
    rewards: torch.Tensor
    next_obs: torch.Tensor
    terminated: torch.Tensor


def _positive(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ValueError(f"{name} must be a positive int; got {value!r}")
    return int(value)


class TransitionBuffer:
    """Ring buffer of transitions with seeded uniform sampling."""

    def __init__(self, obs_dim: int, act_dim: int, capacity: int, *, seed: int,
                 device: torch.device | str = "cpu") -> None:
        self.obs_dim = _positive("obs_dim", obs_dim)
        self.act_dim = _positive("act_dim", act_dim)
        self.capacity = _positive("capacity", capacity)
        self.device = torch.device(device)
        self._obs = np.zeros((self.capacity, self.obs_dim), np.float32)
        self._next = np.zeros((self.capacity, self.obs_dim), np.float32)
        self._act = np.zeros((self.capacity, self.act_dim), np.float32)
        self._rew = np.zeros(self.capacity, np.float32)
        self._term = np.zeros(self.capacity, np.float32)
        self._pos = 0
        self._size = 0
        self._rng = np.random.default_rng(seed)

    def __len__(self) -> int:
        return self._size

    def add(self, obs: Any, action: Any, reward: Any, next_obs: Any, terminated: Any) -> None:
        """Append one transition, or a batch of them (leading dimension = number of rows)."""
        obs = np.asarray(obs, np.float32).reshape(-1, self.obs_dim) if np.size(obs) else None
        if obs is None:
            raise ValueError("obs must be non-empty")
        n = obs.shape[0]
        columns = {
            "action": np.asarray(action, np.float32).reshape(n, -1),
            "next_obs": np.asarray(next_obs, np.float32).reshape(n, -1),
            "reward": np.asarray(reward, np.float32).reshape(n),
            "terminated": np.asarray(terminated, np.float32).reshape(n),
        }
        if columns["action"].shape[1] != self.act_dim:
            raise ValueError(f"action must have {self.act_dim} entries per row; got "
                             f"{columns['action'].shape[1]}")
        if columns["next_obs"].shape[1] != self.obs_dim:
            raise ValueError(f"next_obs must have {self.obs_dim} entries per row; got "
                             f"{columns['next_obs'].shape[1]}")
        for name, arr in (("obs", obs), *columns.items()):
            if not np.isfinite(arr).all():
                raise ValueError(f"{name} must be finite")
        idx = (self._pos + np.arange(n)) % self.capacity
        self._obs[idx] = obs
        self._act[idx] = columns["action"]
        self._rew[idx] = columns["reward"]
        self._next[idx] = columns["next_obs"]
        self._term[idx] = columns["terminated"]
        self._pos = int((self._pos + n) % self.capacity)
        self._size = min(self._size + n, self.capacity)

    def sample(self, batch_size: int) -> Batch:
        """``batch_size`` rows drawn uniformly with replacement."""
        batch_size = _positive("batch_size", batch_size)
        if self._size == 0:
            raise ValueError("cannot sample from an empty buffer")
        idx = self._rng.integers(0, self._size, size=batch_size)
        return self._batch(idx)

    def all(self) -> Batch:
        """Every stored row, oldest first."""
        if self._size == 0:
            raise ValueError("the buffer is empty")
        start = self._pos if self._size == self.capacity else 0
        return self._batch((start + np.arange(self._size)) % self.capacity)

    def _batch(self, idx: np.ndarray) -> Batch:
        def t(a: np.ndarray) -> torch.Tensor:
            return torch.from_numpy(a[idx]).to(self.device)

        return Batch(t(self._obs), t(self._act), t(self._rew), t(self._next), t(self._term))
