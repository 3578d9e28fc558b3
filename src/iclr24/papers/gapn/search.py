"""Search baselines on the docking reward: MoLPC-style MCTS, greedy, random, exhaustive.

- ``mcts_assemble``: UCT over the assembly MDP as in MoLPC (Bryant et al. 2022), which GAPN
  replaces: selection by Q + c √(ln N_parent / N_child) with c = 1.4 and Q the mean return
  rescaled to [0, 1] by the returns seen so far, expansion of one untried action, a uniformly
  random rollout to a complete assembly, back-up of its return; the best complete assembly
  found is returned (``n_simulations`` = scored assemblies).
- ``greedy_assemble``: Prim's tree on dimer confidences (always the most confident valid edge).
- ``random_assemble``: a uniformly random valid action at each step.
- ``exhaustive_assemble``: every spanning tree (Cayley: N^(N−2), enumerated as Prüfer
  sequences) scored exactly, for N <= 7; the reward optimum, an upper bound for any search on
  this reward. Because the return depends on the tree only (see ``environment``), a tree's
  return is the sum of its memoised pair scores.

Every function takes a fresh ``AssemblyEnv`` (reset to one placed chain) and returns an
``AssemblyResult``; none of them sees the native.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from .environment import AssemblyEnv, tree_path

__all__ = [
    "MAX_EXHAUSTIVE_CHAINS",
    "AssemblyResult",
    "assemble_tree",
    "exhaustive_assemble",
    "greedy_assemble",
    "mcts_assemble",
    "prufer_to_edges",
    "random_assemble",
    "spanning_trees",
]

MAX_EXHAUSTIVE_CHAINS = 7


@dataclass
class AssemblyResult:
    """A complete assembly: its tree ``edges`` (i, j) in placement order, per-chain global
    ``coordinates`` (n_k, 3), its docking ``reward`` (episode return) and ``n_scored``, the
    number of complete assemblies the method scored to choose it."""

    edges: list[tuple[int, int]]
    coordinates: list[np.ndarray]
    reward: float
    n_scored: int


def _fresh(env: AssemblyEnv) -> AssemblyEnv:
    if not isinstance(env, AssemblyEnv):
        raise TypeError(f"env must be an AssemblyEnv; got {type(env).__name__}")
    if len(env.edges):
        raise ValueError("env must be freshly reset (no chain added yet)")
    return env


def _result(env: AssemblyEnv, n_scored: int) -> AssemblyResult:
    return AssemblyResult(list(env.edges), env.coordinates(), env.total_reward, n_scored)


def assemble_tree(env: AssemblyEnv, edges: Sequence[tuple[int, int]]) -> AssemblyResult:
    """Build the assembly of an undirected spanning tree, placing chains outward from chain 0
    (breadth first)."""
    env = _fresh(env)
    n = env.n
    adj: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        adj[int(a)].append(int(b))
        adj[int(b)].append(int(a))
    if len(edges) != n - 1:
        raise ValueError(f"a spanning tree of {n} chains has {n - 1} edges; got {len(edges)}")
    queue = [0]
    for i in queue:
        for j in adj[i]:
            if not env.placed[j]:
                env.step((i, j))
                queue.append(j)
    if not env.done:
        raise ValueError("edges do not form a spanning tree of the chains")
    return _result(env, 1)


def greedy_assemble(env: AssemblyEnv) -> AssemblyResult:
    """Prim's maximum-confidence tree: the most confident valid edge at every step."""
    env = _fresh(env)
    conf = env.problem.confidence()
    while not env.done:
        mask = env.action_mask()
        i, j = np.unravel_index(np.argmax(np.where(mask, conf, -np.inf)), mask.shape)
        env.step((int(i), int(j)))
    return _result(env, 1)


def random_assemble(env: AssemblyEnv, rng: np.random.Generator) -> AssemblyResult:
    """A uniformly random valid action at each step."""
    env = _fresh(env)
    while not env.done:
        actions = env.valid_actions()
        env.step(actions[int(rng.integers(len(actions)))])
    return _result(env, 1)


def prufer_to_edges(sequence: Sequence[int], n: int) -> list[tuple[int, int]]:
    """The labelled tree on n nodes of a Prüfer sequence (length n − 2)."""
    if len(sequence) != n - 2:
        raise ValueError(f"a Prüfer sequence for {n} nodes has length {n - 2}; got {len(sequence)}")
    degree = [1] * n
    for v in sequence:
        degree[v] += 1
    edges = []
    for v in sequence:
        leaf = degree.index(1)  # the smallest leaf
        edges.append((leaf, v))
        degree[leaf] -= 1
        degree[v] -= 1
    u, w = (k for k in range(n) if degree[k] == 1)
    edges.append((u, w))
    return edges


def spanning_trees(n: int) -> Iterator[list[tuple[int, int]]]:
    """All n^(n−2) labelled spanning trees of the complete graph on n nodes (n >= 2)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"n must be an int >= 2; got {n!r}")
    for seq in itertools.product(range(n), repeat=n - 2):
        yield prufer_to_edges(seq, n)


def _root_paths(edges: Sequence[tuple[int, int]], n: int) -> list[tuple[int, ...]]:
    adj: list[list[int]] = [[] for _ in range(n)]
    for a, b in edges:
        adj[a].append(b)
        adj[b].append(a)
    paths: list[tuple[int, ...] | None] = [None] * n
    paths[0] = (0,)
    queue = [0]
    for i in queue:
        for j in adj[i]:
            if paths[j] is None:
                paths[j] = paths[i] + (j,)
                queue.append(j)
    return paths  # type: ignore[return-value]


def exhaustive_assemble(env: AssemblyEnv) -> AssemblyResult:
    """The reward-optimal assembly over all N^(N−2) spanning trees (N <= 7)."""
    env = _fresh(env)
    n = env.n
    if n > MAX_EXHAUSTIVE_CHAINS:
        raise ValueError(f"exhaustive search is limited to N <= {MAX_EXHAUSTIVE_CHAINS} chains "
                         f"({MAX_EXHAUSTIVE_CHAINS ** (MAX_EXHAUSTIVE_CHAINS - 2)} trees); got "
                         f"N = {n} ({n ** (n - 2)} trees)")
    rc = env.reward_config
    pairs = list(itertools.combinations(range(n), 2))
    best_value, best_edges, count = -math.inf, None, 0
    for edges in spanning_trees(n):
        count += 1
        paths = _root_paths(edges, n)
        total, clashes = 0.0, 0
        for a, b in pairs:
            s, c = env.scorer(tree_path(paths[a], paths[b]))
            total += s
            clashes += c
        if clashes > rc.overlap_limit:
            total -= rc.overlap_penalty
        if total > best_value + 1e-12:
            best_value, best_edges = total, edges
    result = assemble_tree(env, best_edges)
    result.n_scored = count
    return result


class _Node:
    __slots__ = ("children", "env", "untried", "value", "visits")

    def __init__(self, env: AssemblyEnv, rng: np.random.Generator) -> None:
        self.env = env
        self.untried = env.valid_actions()
        rng.shuffle(self.untried)
        self.children: list[_Node] = []
        self.visits = 0
        self.value = 0.0


def mcts_assemble(env: AssemblyEnv, n_simulations: int = 200, c_uct: float = 1.4, *,
                  rng: np.random.Generator) -> AssemblyResult:
    """MoLPC-style Monte Carlo tree search on the docking reward; the best assembly found."""
    env = _fresh(env)
    if isinstance(n_simulations, bool) or not isinstance(n_simulations, int) or n_simulations < 1:
        raise ValueError(f"n_simulations must be a positive int; got {n_simulations!r}")
    if not c_uct >= 0:
        raise ValueError(f"c_uct must be >= 0; got {c_uct}")
    root = _Node(env.clone(), rng)
    best_return, best_edges = -math.inf, None
    low, high = math.inf, -math.inf
    for _ in range(n_simulations):
        node, path = root, [root]
        while not node.untried and node.children:  # selection
            scale = high - low if high > low else 1.0
            log_n = math.log(node.visits)
            node = max(node.children, key=lambda ch: (ch.value / ch.visits - low) / scale
                       + c_uct * math.sqrt(log_n / ch.visits))  # UCT
            path.append(node)
        if node.untried:  # expansion
            child_env = node.env.clone()
            child_env.step(node.untried.pop())
            child = _Node(child_env, rng)
            node.children.append(child)
            node, path = child, [*path, child]
        sim = node.env.clone()  # rollout
        while not sim.done:
            actions = sim.valid_actions()
            sim.step(actions[int(rng.integers(len(actions)))])
        g = sim.total_reward
        if g > best_return:
            best_return, best_edges = g, list(sim.edges)
        low, high = min(low, g), max(high, g)
        for p in path:  # back-up
            p.visits += 1
            p.value += g
    for i, j in best_edges:
        env.step((i, j))
    return _result(env, n_simulations)
