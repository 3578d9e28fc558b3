"""Synthetic graph families with known structure, as networkx graphs and PyG ``Data``.

Every generator takes a ``seed`` and returns an ``nx.Graph`` on nodes ``0..n-1`` whose labels
are a seeded random permutation of the construction's order, so a model cannot read the answer
from node ids. ``to_pyg`` turns any of them into an undirected ``torch_geometric.data.Data``.

CSL (circular skip links, Murphy et al. 2019): ``circulant_graph(41, [1, s])``, 4-regular, so
1-WL/GIN cannot tell the skips apart. Skips ``s`` and ``41 - s`` (and multiplicative inverses
mod 41) give isomorphic graphs; ``CSL_SKIPS`` is the standard list of ten non-isomorphic skips.
"""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

__all__ = [
    "CSL_SKIPS",
    "barabasi_albert",
    "csl_graph",
    "grid",
    "random_geometric",
    "random_tree",
    "relabel",
    "ring_of_cliques",
    "to_pyg",
]

CSL_SKIPS: tuple[int, ...] = (2, 3, 4, 5, 6, 9, 11, 12, 13, 16)
_CSL_N = 41
_MAX_CONNECT_TRIES = 1000


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an int >= {minimum}; got {value!r}")
    return int(value)


def relabel(graph: nx.Graph, *, seed: int) -> nx.Graph:
    """Relabel ``graph``'s nodes by a seeded random permutation onto ``0..n-1``."""
    if graph.number_of_nodes() == 0:
        raise ValueError("graph must have at least one node; got an empty graph")
    nodes = list(graph.nodes())
    perm = np.random.default_rng(seed).permutation(len(nodes))
    mapping = {node: int(perm[i]) for i, node in enumerate(nodes)}
    out = nx.relabel_nodes(graph, mapping, copy=True)
    ordered = nx.Graph()
    ordered.add_nodes_from(range(len(nodes)))
    ordered.add_edges_from(out.edges())
    return ordered


def csl_graph(skip: int, *, n: int = _CSL_N, seed: int) -> nx.Graph:
    """CSL(n, skip): the cycle C_n plus chords i -> i + skip (mod n), relabelled."""
    n = _positive_int("n", n, minimum=5)
    skip = _positive_int("skip", skip, minimum=2)
    if n == _CSL_N and skip not in CSL_SKIPS:
        raise ValueError(f"skip must be one of the non-isomorphic CSL skips {CSL_SKIPS} for "
                         f"n = 41; got {skip}")
    if skip > n // 2:
        raise ValueError(f"skip must be in 2..n//2 = {n // 2} (larger skips repeat smaller "
                         f"ones); got {skip}")
    return relabel(nx.circulant_graph(n, [1, skip]), seed=seed)


def random_tree(n: int, *, seed: int) -> nx.Graph:
    """A uniformly random labelled tree on ``n`` nodes (Prüfer sequence)."""
    n = _positive_int("n", n)
    if n == 1:
        tree = nx.Graph()
        tree.add_node(0)
    else:
        tree = nx.random_labeled_tree(n, seed=int(seed))
    return relabel(tree, seed=seed)


def barabasi_albert(n: int, m: int, *, seed: int) -> nx.Graph:
    """Barabási–Albert preferential attachment: ``n`` nodes, ``m`` edges per new node."""
    n = _positive_int("n", n, minimum=2)
    m = _positive_int("m", m)
    if m >= n:
        raise ValueError(f"m must be < n; got m={m}, n={n}")
    return relabel(nx.barabasi_albert_graph(n, m, seed=int(seed)), seed=seed)


def random_geometric(n: int, radius: float, *, seed: int, connected: bool = True) -> nx.Graph:
    """Random geometric graph in the unit square; with ``connected`` it is redrawn until connected."""
    n = _positive_int("n", n)
    if not (isinstance(radius, (int, float)) and radius > 0):
        raise ValueError(f"radius must be a positive number; got {radius!r}")
    rng = np.random.default_rng(seed)
    for _ in range(_MAX_CONNECT_TRIES):
        graph = nx.random_geometric_graph(n, float(radius), seed=int(rng.integers(2**31)))
        if not connected or nx.is_connected(graph):
            bare = nx.Graph()
            bare.add_nodes_from(graph.nodes())
            bare.add_edges_from(graph.edges())
            return relabel(bare, seed=seed)
    raise ValueError(f"no connected geometric graph with n={n}, radius={radius} in "
                     f"{_MAX_CONNECT_TRIES} draws; increase radius")


def ring_of_cliques(num_cliques: int, clique_size: int, *, seed: int) -> nx.Graph:
    """``num_cliques`` complete graphs of ``clique_size`` nodes joined in a ring by single edges."""
    num_cliques = _positive_int("num_cliques", num_cliques, minimum=2)
    clique_size = _positive_int("clique_size", clique_size, minimum=2)
    return relabel(nx.ring_of_cliques(num_cliques, clique_size), seed=seed)


def grid(rows: int, cols: int, *, seed: int) -> nx.Graph:
    """The ``rows`` x ``cols`` 4-neighbour grid."""
    rows = _positive_int("rows", rows)
    cols = _positive_int("cols", cols)
    return relabel(nx.grid_2d_graph(rows, cols), seed=seed)


def to_pyg(graph: nx.Graph, *, x: Any = None, y: int | Any = None):
    """``nx.Graph`` on nodes ``0..n-1`` -> ``Data(x, edge_index, num_nodes[, y])``.

    edge_index holds both directions of every edge, coalesced (sorted, no duplicates); self loops
    are dropped. ``x`` defaults to ones ``(n, 1)``; an int ``y`` becomes a LongTensor of shape (1,).
    """
    import torch
    from torch_geometric.data import Data
    from torch_geometric.utils import coalesce

    n = graph.number_of_nodes()
    if n == 0:
        raise ValueError("graph must have at least one node; got an empty graph")
    if set(graph.nodes()) != set(range(n)):
        raise ValueError("graph nodes must be 0..n-1 (use relabel() first)")
    pairs = [(int(u), int(v)) for u, v in graph.edges() if u != v]
    if pairs:
        e = torch.tensor(pairs, dtype=torch.long).t()
        edge_index = coalesce(torch.cat([e, e.flip(0)], dim=1), num_nodes=n)
    else:
        edge_index = torch.zeros(2, 0, dtype=torch.long)
    if x is None:
        x = torch.ones(n, 1)
    x = torch.as_tensor(x, dtype=torch.float32)
    if x.dim() != 2 or x.shape[0] != n:
        raise ValueError(f"x must have shape (num_nodes={n}, d); got {tuple(x.shape)}")
    data = Data(x=x, edge_index=edge_index, num_nodes=n)
    if y is not None:
        data.y = torch.as_tensor([y] if isinstance(y, (int, np.integer)) else y, dtype=torch.long)
    return data
