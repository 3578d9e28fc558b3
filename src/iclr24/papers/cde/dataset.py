"""Offline transition datasets with episode structure (the D4RL/``dice_dataset`` layout of the
official CDE code, Cen et al. 2024) and trajectory-wise sub-sampling (its ``dataset_ratio``).

``OfflineDataset`` holds N transitions in episode order: obs (N, d_o), actions (N, d_a) in
[−1, 1] (CDE samples its out-of-distribution actions uniformly from that box), rewards (N,),
next_obs (N, d_o), terminals (N,) (true ends: no bootstrap), timeouts (N,) (time-limit ends:
bootstrapped as usual) and is_initial (N,) (episode starts; the initial-state term
(1 − γ) E_{s₀}[V(s₀)] of the DICE dual reads them). Every transition carries its own next_obs, so
the official skipping of the last (timeout) transition of a D4RL episode is not needed here.

``optimal_episode_weights`` is the official ``is_optimal`` column of ``utils.dice_dataset``:
1 for every transition of an episode whose last reward is positive (the episode ends at the
goal), 0 otherwise; when fewer than 10 transitions are flagged, 1e-6 is added to every flag and
the column is rescaled to mean 1 (so with no successful episode all weights are 1).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

__all__ = ["OfflineDataset"]


def _array(name: str, value: object, ndim: int) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a numeric array; got {type(value).__name__}") from None
    if arr.ndim != ndim:
        raise ValueError(f"{name} must be {ndim}-D; got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ValueError(f"{name} must be finite")
    return arr


@dataclass(frozen=True, eq=False)
class OfflineDataset:
    """N transitions in episode order (see the module docstring for the fields' shapes)."""

    obs: np.ndarray
    actions: np.ndarray
    rewards: np.ndarray
    next_obs: np.ndarray
    terminals: np.ndarray
    timeouts: np.ndarray
    is_initial: np.ndarray

    def __post_init__(self) -> None:
        for f in fields(self):
            ndim = 2 if f.name in ("obs", "actions", "next_obs") else 1
            object.__setattr__(self, f.name, _array(f.name, getattr(self, f.name), ndim))
        n = self.obs.shape[0]
        if n == 0:
            raise ValueError("obs must hold at least one transition")
        for f in fields(self):
            if getattr(self, f.name).shape[0] != n:
                raise ValueError(f"{f.name} must have {n} rows (one per transition); got "
                                 f"{getattr(self, f.name).shape[0]}")
        if self.next_obs.shape[1] != self.obs.shape[1]:
            raise ValueError(f"next_obs must have {self.obs.shape[1]} columns like obs; got "
                             f"{self.next_obs.shape[1]}")
        if np.abs(self.actions).max() > 1.0:
            raise ValueError(f"actions must lie in [-1, 1] (rescale the action box first); got "
                             f"values in [{self.actions.min():.3g}, {self.actions.max():.3g}]")
        for name in ("terminals", "timeouts", "is_initial"):
            if not np.isin(getattr(self, name), (0.0, 1.0)).all():
                raise ValueError(f"{name} must be 0/1 flags")
        if not self.is_initial[0]:
            raise ValueError("is_initial must mark episode starts, and the first transition "
                             "starts an episode; got is_initial[0] = 0"
                             + (" and no episode start at all" if not self.is_initial.any()
                                else ""))

    def __len__(self) -> int:
        return int(self.obs.shape[0])

    @property
    def obs_dim(self) -> int:
        return int(self.obs.shape[1])

    @property
    def act_dim(self) -> int:
        return int(self.actions.shape[1])

    @property
    def episode_ids(self) -> np.ndarray:
        """(N,) index of the episode each transition belongs to (0, 1, ...)."""
        return np.cumsum(self.is_initial.astype(np.int64)) - 1

    @property
    def n_episodes(self) -> int:
        return int(self.is_initial.sum())

    def optimal_episode_weights(self, *, min_flagged: int = 10) -> np.ndarray:
        """(N,) the official ``is_optimal`` weights (module docstring) that CDE's policy loss
        multiplies per transition."""
        if isinstance(min_flagged, bool) or not isinstance(min_flagged, int) or min_flagged < 0:
            raise ValueError(f"min_flagged must be an int >= 0; got {min_flagged!r}")
        ids = self.episode_ids
        last = np.r_[ids[1:] != ids[:-1], True]               # last transition of each episode
        success = self.rewards[last] > 0.0                    # per episode: last reward > 0
        flags = success[ids].astype(np.float64)
        if flags.sum() < min_flagged:                         # official fallback
            flags = flags + 1e-6
            flags = flags / flags.sum() * len(flags)
        return flags

    def select(self, mask: np.ndarray) -> OfflineDataset:
        """The transitions where ``mask`` (N,) is true, in order."""
        mask = np.asarray(mask, dtype=bool)
        if mask.shape != (len(self),):
            raise ValueError(f"mask must have shape ({len(self)},); got {mask.shape}")
        return OfflineDataset(**{f.name: getattr(self, f.name)[mask] for f in fields(self)})

    def subsample_episodes(self, fraction: float, seed: int) -> OfflineDataset:
        """Whole episodes in a seeded random order until at least ``fraction`` of the
        transitions are kept (the official ``dataset_ratio``); kept episodes stay in order."""
        if isinstance(fraction, bool) or not isinstance(fraction, (int, float)) \
                or not 0 < fraction <= 1:
            raise ValueError(f"fraction must be in (0, 1]; got {fraction!r}")
        ids = self.episode_ids
        lengths = np.bincount(ids)
        keep = np.zeros(lengths.size, dtype=bool)
        total = 0
        for e in np.random.default_rng(seed).permutation(lengths.size):
            keep[e] = True
            total += lengths[e]
            if total >= int(fraction * len(self)):
                break
        return self.select(keep[ids])
