"""LASER rewiring (Barbero et al., ICLR 2024, Sec. 4): a sequence of snapshots, each adding, for
every node, a few of its worst-connected nodes at the next hop distance.

For a graph G with hop distance d_G, the orbit of v at level l is

    O_l(v) = {u : d_G(v, u) = l + 1},          l = 1..L,

computed on the *original* graph (never on a partially rewired snapshot). The connectivity
measure is the number of walks of length k in G with self loops,

    mu(v, u) = ((A + I)^k)_{vu},                (official code: k = 8)

small mu = a bottleneck pair, where over-squashing bites. Snapshot l adds, for every v with a
non-empty orbit, the

    m = max(min_additions, round(rho * |O_l(v)|))

nodes of O_l(v) with the *lowest* mu(v, u) (ties broken uniformly at random), as edges u -> v
tagged with snapshot id l (``edge_snapshot``; the original edges carry 0). With rho = 1 every
orbit is taken whole, so LASER becomes the full (L + 1)-hop rewiring.

How this differs from the official code (Fedzbar/laser-release, ``LaserGlobalTransform``):
- Edge orientation: the released transform stores the pair as (chooser, chosen), so under PyG's
  source-to-target flow the chooser *sends*; here the chooser v *receives* from the nodes it
  chose (u -> v), i.e. the chosen nodes form v's snapshot-l neighbourhood N_l(v) as in the
  paper's description. ``symmetric=True`` adds both directions and removes the difference.
- Ties: the official code adds N(0, (1e-7)^2) noise to mu and calls ``argpartition``; here ties
  are broken by a seeded random secondary sort key, which is the same uniform tie-breaking
  without relying on the noise staying below the gaps of mu.
- The released "fast" distance routine works on a lower-triangular distance matrix (so node i
  only considers orbit members j < i) and its in-place updates reuse the adjacency array, which
  mislabels distances for ``num_snapshots >= 3`` and feeds distance labels into mu. We follow the
  paper's definitions instead: exact orbits from both ends, mu from 0/1 A + I.
- ``round`` is Python's (half to even), as in the official code.
Edge features, when the input has ``edge_attr``, get the official constant 0.1 on added edges.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from torch_geometric.transforms import BaseTransform

from iclr24.kits.graphs import dense_adjacency, shortest_path_distances

__all__ = ["LaserTransform", "connectivity_measure", "orbit_sizes"]

_SELECTIONS = ("lowest", "random", "highest")


def _int_at_least(name: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}")
    return int(value)


def _check_rho(rho: Any) -> float:
    if isinstance(rho, bool) or not isinstance(rho, (int, float, np.floating)) \
            or not 0.0 < float(rho) <= 1.0:
        raise ValueError(f"rho must be a number in (0, 1]; got {rho!r}")
    return float(rho)


def _graph_arrays(data: Any) -> tuple[Any, int]:
    """(edge_index, num_nodes) of a homogeneous PyG Data, validated."""
    from torch_geometric.data import Data

    if not isinstance(data, Data):
        raise TypeError(f"data must be a torch_geometric.data.Data; got {type(data).__name__}")
    n = data.num_nodes
    if n is None or n == 0:
        raise ValueError("data must have at least one node; got an empty graph")
    if data.edge_index is None:
        raise ValueError("data.edge_index is None; expected a (2, E) LongTensor")
    return data.edge_index, int(n)


def connectivity_measure(edge_index: Any, num_nodes: int, walk_power: int = 8) -> np.ndarray:
    """mu = (A + I)^k (n, n) float64: walks of length ``walk_power`` with self loops, on the
    undirected union of ``edge_index``."""
    walk_power = _int_at_least("walk_power", walk_power, 1)
    a_hat = dense_adjacency(edge_index, num_nodes) + np.eye(num_nodes)
    return np.linalg.matrix_power(a_hat, walk_power)  # mu(v, u) = ((A + I)^k)_{vu}


def orbit_sizes(edge_index: Any, num_nodes: int, max_distance: int) -> np.ndarray:
    """|O_l(v)| for l = 1..max_distance-1 as an (max_distance - 1, n) int array."""
    max_distance = _int_at_least("max_distance", max_distance, 2)
    dist = shortest_path_distances(edge_index, num_nodes, max_distance=max_distance)
    return np.stack([(dist == r).sum(axis=1) for r in range(2, max_distance + 1)])


class LaserTransform(BaseTransform):
    """LASER as a PyG ``BaseTransform``: ``data`` -> ``data`` with rewired ``edge_index`` and
    ``edge_snapshot`` (LongTensor (E',): 0 = original edge, l = added at distance l + 1).

    Args:
        max_distance: L + 1, the largest hop distance an added edge may span (the official
            ``num_snapshots``); snapshots l = 1..max_distance - 1. Must be >= 2.
        rho: fraction of each orbit to connect, in (0, 1] (official ``additions_factor``).
        min_additions: at least this many per non-empty orbit (official ``minimum_additions``).
        walk_power: k in mu = (A + I)^k (official 8).
        shuffle_ties: break equal-mu ties uniformly at random (official ``shuffle``); else by
            node id.
        symmetric: also add the reverse edge v -> u of every chosen pair (duplicates removed).
        selection: ``"lowest"`` (LASER: lowest mu first), ``"random"`` (the paper's
            ``laser_random`` ablation: uniform choice inside the orbit, same counts) or
            ``"highest"`` (the mechanism reversed: best-connected orbit members first, same
            counts; an ablation for the claims, not in the paper).
        added_edge_attr: value of the added edges' features when ``data.edge_attr`` exists.
        seed: seeds the tie-breaking generator; the same seed applied to the same sequence of
            graphs gives the same rewirings.

    Original edges keep their order and come first; added edges follow, grouped by snapshot.
    Graphs are handled densely (n x n), up to the graph kit's ``DENSE_NODE_LIMIT`` nodes.
    """

    def __init__(self, max_distance: int = 3, rho: float = 0.1, min_additions: int = 1,
                 walk_power: int = 8, shuffle_ties: bool = True, symmetric: bool = False,
                 selection: str = "lowest", added_edge_attr: float = 0.1,
                 seed: int | None = None) -> None:
        self.max_distance = _int_at_least("max_distance", max_distance, 2)
        self.rho = _check_rho(rho)
        self.min_additions = _int_at_least("min_additions", min_additions, 0)
        self.walk_power = _int_at_least("walk_power", walk_power, 1)
        if selection not in _SELECTIONS:
            raise ValueError(f"selection must be one of {_SELECTIONS}; got {selection!r}")
        if seed is not None:
            _int_at_least("seed", seed, 0)
        self.shuffle_ties, self.symmetric = bool(shuffle_ties), bool(symmetric)
        self.selection, self.added_edge_attr = selection, float(added_edge_attr)
        self.seed = seed
        self._rng = np.random.default_rng(seed)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(max_distance={self.max_distance}, rho={self.rho}, "
                f"min_additions={self.min_additions}, walk_power={self.walk_power}, "
                f"selection={self.selection!r}, symmetric={self.symmetric}, seed={self.seed})")

    def _choose(self, orbit: np.ndarray, mu_row: np.ndarray, m: int) -> np.ndarray:
        if self.selection == "random":
            return orbit[self._rng.permutation(len(orbit))[:m]]
        keys = mu_row[orbit] if self.selection == "lowest" else -mu_row[orbit]
        ties = self._rng.random(len(orbit)) if self.shuffle_ties else np.arange(len(orbit))
        return orbit[np.lexsort((ties, keys))[:m]]  # argmin_m mu(v, .) on O_l(v), ties random

    def added_edges(self, edge_index: Any, num_nodes: int) -> list[np.ndarray]:
        """The new edges per snapshot: a list of L arrays (2, E_l) (source u, target v)."""
        dist = shortest_path_distances(edge_index, num_nodes, max_distance=self.max_distance)
        mu = connectivity_measure(edge_index, num_nodes, self.walk_power)
        snapshots = []
        for r in range(2, self.max_distance + 1):  # orbit O_l(v) = {u : d(v, u) = l + 1}, r = l + 1
            src, dst = [], []
            for v in range(num_nodes):
                orbit = np.flatnonzero(dist[v] == r)
                if len(orbit) == 0:
                    continue
                m = min(len(orbit), max(self.min_additions, round(self.rho * len(orbit))))
                chosen = self._choose(orbit, mu[v], m)
                src.append(chosen)
                dst.append(np.full(len(chosen), v))
            pairs = (np.stack([np.concatenate(src), np.concatenate(dst)]) if src
                     else np.zeros((2, 0), dtype=np.int64))
            if self.symmetric and pairs.shape[1]:
                both = np.concatenate([pairs, pairs[::-1]], axis=1)
                pairs = np.unique(both, axis=1)
            snapshots.append(pairs.astype(np.int64))
        return snapshots

    def forward(self, data: Any) -> Any:
        import torch

        edge_index, n = _graph_arrays(data)
        if "edge_snapshot" in data:
            raise ValueError("data already has edge_snapshot (it was rewired); apply "
                             "LaserTransform to the original graph")
        extra = [k for k in data.keys()  # noqa: SIM118 (iterating a Data yields pairs)
                 if k not in ("edge_index", "edge_attr") and data.is_edge_attr(k)]
        if extra:
            raise ValueError(f"data has edge-level attributes {extra} that LaserTransform "
                             f"cannot extend to added edges; drop them first")
        snapshots = self.added_edges(edge_index, n)
        device = edge_index.device
        new = [torch.as_tensor(p, dtype=torch.long, device=device) for p in snapshots]
        ids = [torch.full((p.shape[1],), level, dtype=torch.long, device=device)
               for level, p in enumerate(new, start=1)]
        num_added = sum(p.shape[1] for p in new)
        data.edge_index = torch.cat([edge_index.long(), *new], dim=1)
        data.edge_snapshot = torch.cat(
            [torch.zeros(edge_index.shape[1], dtype=torch.long, device=device), *ids])
        if getattr(data, "edge_attr", None) is not None:
            attr = data.edge_attr
            fill = attr.new_full((num_added, *attr.shape[1:]), self.added_edge_attr)
            data.edge_attr = torch.cat([attr, fill], dim=0)
        return data
