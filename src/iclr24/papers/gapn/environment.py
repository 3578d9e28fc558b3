"""The assembly MDP (GAPN paper Sec. 3) as a gymnasium environment, and the docking reward.

State: which chains are placed, their global poses and the assembly tree so far. Action
(i, j): chain i placed, chain j not yet placed; the transition places j at

    T_global(j) = T_global(i) ∘ T_ij                        (superimpose the dimer onto i)

so N − 1 actions build a spanning tree (dimers are not re-optimised, errors accumulate).
Chain 0 starts placed at the identity; the root only fixes the global frame.

Docking reward (no ground truth), MoLPC-style: when j is placed, every placed chain k within
reach forms an interface scored

    s_jk = c_jk log10(1 + contacts_jk) − 0.1 min(clashes_jk, 50)

(c_jk = the dimer confidence of the pair, contacts = Cα pairs < 8 Å, clashes = pairs < 3 Å in
the assembled poses; the cap keeps penalties comparable across chain sizes), and once the
assembly's clashes exceed 50 in total it is charged −5 (MoLPC rejects overlapping assemblies).
The paper's exact formula (its Eq. 2, interface pLDDT/mpDockQ-based) was not available; this
is the spec's stand-in. Unlike the spec's "episode ends with −5", the episode continues so that
every method returns a full assembly; the −5 is charged once. The return is then a function of
the tree alone (every pair is scored once, with its relative pose fixed by the tree path), which
is what makes the exhaustive search over trees exact.

``PairScorer`` memoises s_jk by tree path (the relative pose of two chains depends only on the
path between them); an environment and its clones share one scorer. Its ``evaluations`` counts
the distinct interface scorings, the stand-in for the expensive structure evaluations
(AlphaFold-Multimer / mpDockQ) that dominate MoLPC's cost; ``lookups`` counts every request.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from .complexes import CLASH_CUTOFF, CONTACT_CUTOFF, AssemblyProblem
from .rigid import Transform, apply_transform, compose

__all__ = ["AssemblyEnv", "DockingReward", "PairScorer", "tree_path"]

NODE_FEATURES = 4  # size, radius, mean dimer confidence, placed
EDGE_FEATURES = 4  # dimer confidence, predicted contacts, placed_i, placed_j


@dataclass(frozen=True)
class DockingReward:
    """Weights of the docking reward (the spec's defaults)."""

    clash_weight: float = 0.1
    clash_cap: int = 50
    overlap_limit: int = 50
    overlap_penalty: float = 5.0

    def __post_init__(self) -> None:
        if self.clash_weight < 0 or self.overlap_penalty < 0:
            raise ValueError("clash_weight and overlap_penalty must be >= 0")
        if self.clash_cap < 0 or self.overlap_limit < 0:
            raise ValueError("clash_cap and overlap_limit must be >= 0")


def tree_path(root_path_a: tuple[int, ...], root_path_b: tuple[int, ...]) -> tuple[int, ...]:
    """The tree path from a to b given both root paths (root first, node last)."""
    c = 0
    while c < min(len(root_path_a), len(root_path_b)) and root_path_a[c] == root_path_b[c]:
        c += 1
    return tuple(reversed(root_path_a[c - 1:])) + root_path_b[c:]


def _distances2(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """(n, m) squared distances."""
    return np.sum((x[:, None, :] - y[None, :, :]) ** 2, axis=-1)


class PairScorer:
    """Interface score and clash count of chain pairs whose relative pose follows a tree path."""

    def __init__(self, problem: AssemblyProblem, reward: DockingReward = DockingReward()) -> None:
        self.problem = problem
        self.reward = reward
        self._conf = problem.confidence()
        self._predicted: dict[tuple[int, int], np.ndarray] = {}
        self._cache: dict[tuple[int, ...], tuple[float, int]] = {}
        self.evaluations = 0  # distinct interface scorings (the expensive call; memoised)
        self.lookups = 0      # every request, cache hits included

    def relative_pose(self, path: tuple[int, ...]) -> Transform:
        """Pose of path[-1] in path[0]'s frame: T_{p0 p1} ∘ T_{p1 p2} ∘ …."""
        pose: Transform = (np.eye(3), np.zeros(3))
        for a, b in itertools.pairwise(path):
            pose = compose(pose, self.problem.relative(a, b))
        return pose

    def predicted_contacts(self, a: int, b: int) -> np.ndarray:
        """(n_a, n_b) bool: the Cα pairs within 8 Å in the predicted dimer of a < b."""
        hit = self._predicted.get((a, b))
        if hit is None:
            xb = apply_transform(self.problem.dimers[(a, b)].transform, self.problem.chains[b])
            hit = self._predicted[(a, b)] = (_distances2(self.problem.chains[a], xb)
                                             < CONTACT_CUTOFF ** 2)
        return hit

    def __call__(self, path: tuple[int, ...]) -> tuple[float, int]:
        """(s_ab, clashes_ab) for the two ends of ``path``."""
        self.lookups += 1
        key = path if path[0] < path[-1] else tuple(reversed(path))
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        self.evaluations += 1
        a, b = key[0], key[-1]
        pose = self.relative_pose(key)
        pr = self.problem.radii
        if np.linalg.norm(pose[1]) > pr[a] + pr[b] + CONTACT_CUTOFF:
            out = (0.0, 0)
        else:
            xb = apply_transform(pose, self.problem.chains[b])
            d2 = _distances2(self.problem.chains[a], xb)
            contact = d2 < CONTACT_CUTOFF ** 2
            clashes = int(np.count_nonzero(d2 < CLASH_CUTOFF ** 2))
            supported = int(np.count_nonzero(contact & self.predicted_contacts(a, b)))
            r = self.reward
            score = (self._conf[a, b] * np.log10(1.0 + supported)   # c log10(1 + contacts)
                     - r.clash_weight * min(clashes, r.clash_cap))  # − 0.1 min(clashes, 50)
            out = (float(score), clashes)
        self._cache[key] = out
        return out


class AssemblyEnv(gym.Env):
    """Assemble one complex by adding chains along dimer edges (gymnasium API).

    Observation (a dict): ``placed`` (N,) 0/1; ``action_mask`` (N, N) 0/1 with 1 where i is
    placed and j is not; ``node_features`` (N, 4) = (size/60, radius/15, mean dimer confidence,
    placed); ``edge_features`` (N, N, 4) = (dimer confidence, log(1 + predicted contacts)/log 201,
    placed_i, placed_j); ``adjacency`` (N, N) = dimer confidences (the chain graph). Only dimer
    information is exposed, never the native.

    Action: an int i·N + j or a pair (i, j). ``step`` raises ``ValueError`` for an action whose
    first chain is not placed or whose second chain is already placed. Because the valid set
    changes every step, gymnasium's ``check_env`` (which samples unmasked actions) does not
    apply; use ``valid_actions()`` / ``action_mask``.
    """

    metadata: ClassVar[dict] = {"render_modes": []}

    def __init__(self, problem: AssemblyProblem, reward: DockingReward = DockingReward(), *,
                 scorer: PairScorer | None = None) -> None:
        if not isinstance(problem, AssemblyProblem):
            raise TypeError(f"problem must be an AssemblyProblem; got {type(problem).__name__}")
        self.problem = problem
        self.reward_config = reward
        self.scorer = scorer if scorer is not None else PairScorer(problem, reward)
        n = self.n = problem.n_chains
        self.action_space = gym.spaces.Discrete(n * n)
        self.observation_space = gym.spaces.Dict({
            "placed": gym.spaces.MultiBinary(n),
            "action_mask": gym.spaces.MultiBinary((n, n)),
            "node_features": gym.spaces.Box(-np.inf, np.inf, (n, NODE_FEATURES), np.float32),
            "edge_features": gym.spaces.Box(-np.inf, np.inf, (n, n, EDGE_FEATURES), np.float32),
            "adjacency": gym.spaces.Box(0.0, 1.0, (n, n), np.float32),
        })
        conf = problem.confidence()
        sizes = np.array([len(c) for c in problem.chains], dtype=float)
        self._adjacency = conf.astype(np.float32)
        self._static_nodes = np.stack([sizes / 60.0, problem.radii / 15.0,
                                       conf.sum(1) / (n - 1)], axis=1).astype(np.float32)
        self._static_edges = np.stack(
            [conf, np.log1p(problem.predicted_contacts()) / np.log(201.0)], axis=-1
        ).astype(np.float32)
        self._reset_state()

    def _reset_state(self) -> None:
        self.placed = np.zeros(self.n, dtype=bool)
        self.placed[0] = True
        self.poses: list[Transform | None] = [None] * self.n
        self.poses[0] = (np.eye(3), np.zeros(3))
        self.root_paths: list[tuple[int, ...] | None] = [None] * self.n
        self.root_paths[0] = (0,)
        self.edges: list[tuple[int, int]] = []
        self.total_clashes = 0
        self.total_reward = 0.0
        self.overlap_charged = False

    def reset(self, *, seed: int | None = None, options: dict | None = None
              ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        self._reset_state()
        return self.observation(), {}

    @property
    def done(self) -> bool:
        return bool(self.placed.all())

    def action_mask(self) -> np.ndarray:
        """(N, N) bool: i placed and j unplaced."""
        return self.placed[:, None] & ~self.placed[None, :]

    def valid_actions(self) -> list[tuple[int, int]]:
        """All (i, j) with i placed and j unplaced."""
        return [(int(i), int(j)) for i, j in zip(*np.nonzero(self.action_mask()))]

    def observation(self) -> dict[str, np.ndarray]:
        placed = self.placed.astype(np.float32)
        nodes = np.concatenate([self._static_nodes, placed[:, None]], axis=1)
        n = self.n
        edges = np.concatenate([self._static_edges,
                                np.broadcast_to(placed[:, None, None], (n, n, 1)),
                                np.broadcast_to(placed[None, :, None], (n, n, 1))], axis=-1)
        return {"placed": self.placed.astype(np.int8),
                "action_mask": self.action_mask().astype(np.int8),
                "node_features": nodes, "edge_features": edges.astype(np.float32),
                "adjacency": self._adjacency}

    def _parse(self, action: Any) -> tuple[int, int]:
        if isinstance(action, (tuple, list, np.ndarray)) and np.size(action) == 2:
            i, j = (int(v) for v in np.ravel(action))
        elif isinstance(action, (int, np.integer)) and not isinstance(action, bool):
            i, j = divmod(int(action), self.n)
        else:
            raise TypeError(f"action must be an int i*N + j or a pair (i, j); got {action!r}")
        if not (0 <= i < self.n and 0 <= j < self.n):
            raise ValueError(f"action ({i}, {j}) names a chain outside 0..{self.n - 1}")
        if not self.placed[i]:
            raise ValueError(f"action ({i}, {j}): the first chain {i} must already be placed")
        if self.placed[j]:
            raise ValueError(f"action ({i}, {j}): the second chain {j} is already placed")
        return i, j

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool,
                                         dict[str, Any]]:
        i, j = self._parse(action)
        self.poses[j] = compose(self.poses[i], self.problem.relative(i, j))  # T_j = T_i ∘ T_ij
        self.root_paths[j] = self.root_paths[i] + (j,)
        reward, clashes = 0.0, 0
        for k in np.flatnonzero(self.placed):
            s, c = self.scorer(tree_path(self.root_paths[int(k)], self.root_paths[j]))
            reward += s
            clashes += c
        self.placed[j] = True
        self.edges.append((i, j))
        self.total_clashes += clashes
        if not self.overlap_charged and self.total_clashes > self.reward_config.overlap_limit:
            reward -= self.reward_config.overlap_penalty  # the overlapping assembly's charge
            self.overlap_charged = True
        self.total_reward += reward
        return self.observation(), float(reward), self.done, False, {"clashes": clashes}

    def clone(self) -> AssemblyEnv:
        """A copy of the current state sharing this environment's (immutable) problem and
        memoising scorer."""
        other = AssemblyEnv.__new__(AssemblyEnv)
        other.__dict__.update(self.__dict__)
        other.placed = self.placed.copy()
        other.poses = list(self.poses)
        other.root_paths = list(self.root_paths)
        other.edges = list(self.edges)
        return other

    def coordinates(self) -> list[np.ndarray]:
        """Per-chain global coordinates of the (complete) assembly, each (n_k, 3)."""
        if not self.done:
            raise ValueError("the assembly is incomplete: place every chain first")
        return [apply_transform(p, c) for p, c in zip(self.poses, self.problem.chains)]
