"""PointUMaze: a 2-D point mass in a U-shaped maze with a sparse goal reward, its scripted
controllers and the noisy-controller offline dataset (the numpy stand-in for D4RL maze2d-umaze,
which needs MuJoCo and a download; neither is reachable here).

Layout (rows top to bottom, '#' wall, cell (r, c) covers x ∈ [c, c + 1], y ∈ [r, r + 1])::

    #####
    #S#G#      S: start cell (1, 1), G: goal cell (1, 3); the arms are split by a wall,
    #O#O#      so the straight line S -> G is blocked and the way round is 6 cells long.
    #OOO#
    #####

Dynamics per step (a ∈ [−1, 1]²): v ← 0.9 v + 0.1 a, p ← p + 0.1 v; the point (radius 0.1)
is projected out of any wall box it enters, and the velocity component into the wall is
zeroed. Observation (x, y, vx, vy); reward 1 when ‖p − goal‖ ≤ 0.5 after the step, else 0;
never terminates, truncated after 300 steps (maze2d's sparse-reward, fixed-horizon setting).

``waypoint_action`` is a PD controller towards the centre of the next cell on the BFS shortest
path to a target cell. ``expert_action`` uses it with the goal (R_expert of the normalised
score); ``noisy_controller_dataset`` mirrors how maze2d data were made: the controller walks
between randomly chosen cells (never told the evaluation goal) with Gaussian action noise,
rewards are relabelled with the sparse goal reward, episodes start at random free positions.
The dynamics are vectorised over points, so data generation and ``rollout_returns`` run many
episodes at once.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import ClassVar

import gymnasium as gym
import numpy as np

from .dataset import OfflineDataset

__all__ = [
    "GOAL",
    "LAYOUT",
    "START",
    "PointUMaze",
    "expert_action",
    "noisy_controller_dataset",
    "rollout_returns",
    "waypoint_action",
]

LAYOUT = ("#####",
          "#S#G#",
          "#O#O#",
          "#OOO#",
          "#####")
START = np.array([1.5, 1.5])   # (x, y) centre of the start cell
GOAL = np.array([3.5, 1.5])    # centre of the goal cell
GOAL_RADIUS = 0.5
MAX_STEPS = 300
RADIUS = 0.1
DAMPING, GAIN, DT = 0.9, 0.1, 0.1

_GRID = np.array([[ch != "#" for ch in row] for row in LAYOUT])
_FREE = [(r, c) for r in range(_GRID.shape[0]) for c in range(_GRID.shape[1]) if _GRID[r, c]]
_CELL_INDEX = {cell: i for i, cell in enumerate(_FREE)}
_WALLS = np.array([(c - RADIUS, r - RADIUS, c + 1 + RADIUS, r + 1 + RADIUS)
                   for r in range(_GRID.shape[0]) for c in range(_GRID.shape[1])
                   if not _GRID[r, c]])  # (x0, y0, x1, y1) expanded by the point's radius


def _next_cell_table() -> np.ndarray:
    """next[i, j] = the free cell after cell i on a BFS shortest path to cell j (j if i == j)."""
    n = len(_FREE)
    table = np.zeros((n, n), dtype=np.int64)
    for j, target in enumerate(_FREE):
        parent = {target: target}  # BFS from the target: parent = one step closer to it
        queue = deque([target])
        while queue:
            r, c = queue.popleft()
            for nb in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
                if nb in _CELL_INDEX and nb not in parent:
                    parent[nb] = (r, c)
                    queue.append(nb)
        for i, cell in enumerate(_FREE):
            table[i, j] = _CELL_INDEX[parent[cell]]
    return table


_NEXT = _next_cell_table()
_CENTRES = np.array([(c + 0.5, r + 0.5) for r, c in _FREE])


def _cell_of(pos: np.ndarray) -> np.ndarray:
    """(n,) free-cell index of each position (n, 2) (nearest free cell centre)."""
    d = ((pos[:, None, :] - _CENTRES[None]) ** 2).sum(-1)
    return d.argmin(1)


def _step(pos: np.ndarray, vel: np.ndarray, action: np.ndarray
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One step of the point-mass dynamics for (n, 2) arrays; returns (pos, vel, reward)."""
    a = np.clip(action, -1.0, 1.0)
    vel = DAMPING * vel + GAIN * a              # v ← 0.9 v + 0.1 a
    pos = pos + DT * vel                        # p ← p + 0.1 v
    vel = vel.copy()
    for x0, y0, x1, y1 in _WALLS:               # project out of each wall box it entered
        inside = (pos[:, 0] > x0) & (pos[:, 0] < x1) & (pos[:, 1] > y0) & (pos[:, 1] < y1)
        if not inside.any():
            continue
        pen = np.stack([pos[:, 0] - x0, x1 - pos[:, 0], pos[:, 1] - y0, y1 - pos[:, 1]], 1)
        side = pen.argmin(1)
        for k, (axis, bound) in enumerate(((0, x0), (0, x1), (1, y0), (1, y1))):
            hit = inside & (side == k)
            pos[hit, axis] = bound
            vel[hit, axis] = 0.0
    reward = (np.linalg.norm(pos - GOAL, axis=1) <= GOAL_RADIUS).astype(np.float64)
    return pos, vel, reward


def waypoint_action(obs: np.ndarray, target_cell: np.ndarray, *, kp: float = 10.0,
                    kd: float = 5.0) -> np.ndarray:
    """PD action (n, 2) in [−1, 1] towards the next cell centre on the way to ``target_cell``
    (n,) (free-cell indices; inside the target cell, towards its centre). obs: (n, 4)."""
    obs = np.atleast_2d(obs)
    here = _cell_of(obs[:, :2])
    waypoint = _CENTRES[_NEXT[here, target_cell]]
    return np.clip(kp * (waypoint - obs[:, :2]) - kd * obs[:, 2:], -1.0, 1.0)


def expert_action(obs: np.ndarray) -> np.ndarray:
    """The scripted shortest-path controller to the goal (R_expert), obs (4,) or (n, 4)."""
    single = np.ndim(obs) == 1
    o = np.atleast_2d(obs)
    a = waypoint_action(o, np.full(o.shape[0], _CELL_INDEX[(1, 3)]))
    return a[0] if single else a


class PointUMaze(gym.Env):
    """PointUMaze (see the module docstring). ``reset(options={"position": (x, y)})`` starts
    from a given free position; the default start is the start cell's centre ± U(0.1)."""

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, max_episode_steps: int = MAX_STEPS) -> None:
        if isinstance(max_episode_steps, bool) or not isinstance(max_episode_steps, int) \
                or max_episode_steps < 1:
            raise ValueError(f"max_episode_steps must be a positive int; got "
                             f"{max_episode_steps!r}")
        self.max_episode_steps = max_episode_steps
        self.observation_space = gym.spaces.Box(
            np.array([0, 0, -1, -1], np.float32), np.array([5, 5, 1, 1], np.float32),
            dtype=np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (2,), np.float32)
        self._pos = START.copy()
        self._vel = np.zeros(2)
        self._t = 0

    def _obs(self) -> np.ndarray:
        return np.concatenate([self._pos, self._vel]).astype(np.float32)

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        super().reset(seed=seed)
        if options and "position" in options:
            pos = np.asarray(options["position"], dtype=float)
            if pos.shape != (2,) or not (0 <= pos[0] < 5 and 0 <= pos[1] < 5) \
                    or not _GRID[int(pos[1]), int(pos[0])]:
                raise ValueError(f"options['position'] must be a free (x, y); got {pos}")
            self._pos = pos.copy()
        else:
            self._pos = START + self.np_random.uniform(-0.1, 0.1, 2)
        self._vel = np.zeros(2)
        self._t = 0
        return self._obs(), {}

    def step(self, action):
        a = np.asarray(action, dtype=float).reshape(1, 2)
        pos, vel, reward = _step(self._pos[None], self._vel[None], a)
        self._pos, self._vel = pos[0], vel[0]
        self._t += 1
        return self._obs(), float(reward[0]), False, self._t >= self.max_episode_steps, {}


def rollout_returns(policy: Callable[[np.ndarray], np.ndarray], episodes: int, seed: int, *,
                    max_steps: int = MAX_STEPS) -> np.ndarray:
    """Undiscounted returns (episodes,) of ``policy`` (obs (n, 4) -> actions (n, 2)) from the
    environment's start distribution, all episodes stepped together. Episode i starts exactly
    where ``PointUMaze().reset(seed=seed + i)`` does."""
    if isinstance(episodes, bool) or not isinstance(episodes, int) or episodes < 1:
        raise ValueError(f"episodes must be a positive int; got {episodes!r}")
    pos = np.stack([START + np.random.default_rng(seed + i).uniform(-0.1, 0.1, 2)
                    for i in range(episodes)])
    vel = np.zeros_like(pos)
    total = np.zeros(episodes)
    for _ in range(max_steps):
        obs = np.concatenate([pos, vel], 1).astype(np.float32)
        pos, vel, reward = _step(pos, vel, np.asarray(policy(obs), dtype=float))
        total += reward
    return total


def noisy_controller_dataset(n_steps: int, seed: int, *, noise: float = 0.3,
                             episode_length: int = MAX_STEPS) -> OfflineDataset:
    """``n_steps`` transitions (rounded up to whole episodes of ``episode_length``) of the
    waypoint controller walking between uniformly chosen free cells with N(0, noise²) action
    noise (clipped to [−1, 1]); a new target is drawn on arrival (within 0.3 of its centre).
    Episodes start uniformly in a random free cell (±0.3 around its centre) at rest. Rewards are
    the sparse goal reward; the last step of each episode is a timeout, none is terminal."""
    for name, v in (("n_steps", n_steps), ("episode_length", episode_length)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int; got {v!r}")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0; got {noise}")
    rng = np.random.default_rng(seed)
    n_ep = -(-n_steps // episode_length)
    n_cells = len(_FREE)
    start = rng.integers(0, n_cells, n_ep)
    pos = _CENTRES[start] + rng.uniform(-0.3, 0.3, (n_ep, 2))
    vel = np.zeros((n_ep, 2))
    target = (start + rng.integers(1, n_cells, n_ep)) % n_cells  # any cell but the current
    cols = {k: [] for k in ("obs", "actions", "rewards", "next_obs")}
    for _ in range(episode_length):
        obs = np.concatenate([pos, vel], 1)
        action = waypoint_action(obs, target) + noise * rng.standard_normal((n_ep, 2))
        action = np.clip(action, -1.0, 1.0)
        pos, vel, reward = _step(pos, vel, action)
        cols["obs"].append(obs)
        cols["actions"].append(action)
        cols["rewards"].append(reward)
        cols["next_obs"].append(np.concatenate([pos, vel], 1))
        arrived = np.linalg.norm(pos - _CENTRES[target], axis=1) < 0.3
        target = np.where(arrived, (target + rng.integers(1, n_cells, n_ep)) % n_cells, target)
    # (T, n_ep, ...) -> episode-major rows
    data = {k: np.swapaxes(np.asarray(v), 0, 1).reshape(n_ep * episode_length, -1)
            for k, v in cols.items()}
    first = np.zeros((n_ep, episode_length))
    first[:, 0] = 1
    last = np.zeros((n_ep, episode_length))
    last[:, -1] = 1
    return OfflineDataset(obs=data["obs"], actions=data["actions"],
                          rewards=data["rewards"][:, 0], next_obs=data["next_obs"],
                          terminals=np.zeros(n_ep * episode_length),
                          timeouts=last.reshape(-1), is_initial=first.reshape(-1))
