"""The paper's family of 1-WL-indistinguishable graphs: disjoint unions of CSL graphs
(Sec. 3, the motivating family of Theorems 1-2 and Prop. 1).

CSL(n, s) is the cycle C_n with chords i -> i + s (mod n); every CSL graph is 4-regular, so
1-WL (and GIN) colours all nodes alike and cannot tell skips apart, while marking one node
separates them. A sample here is the disjoint union of ``num_components`` CSL graphs whose skip
classes c_1, ..., c_l are drawn uniformly and independently from ``skips``, nodes relabelled by a
seeded permutation, constant node features; its label is the index of the multiset
{c_1, ..., c_l} among all multisets of size l (C(C + l - 1, l) classes, 10 for C = 4, l = 2).
A policy that marks one node per component identifies the label; uniform random marking needs
luck (for l = 2, both marks fall in distinct components with probability n/(2n − 1) ≈ 1/2).

The spec's n = 41 uses the standard non-isomorphic skip list; for other n, skips related by a
multiplier (m·{±1, ±s} = {±1, ±t} mod n, which makes the graphs isomorphic) are refused, and for
prime n that is exact: n = 17 keeps the four skip classes 2, 3, 4, 5 pairwise non-isomorphic.

ZINC, OGB and Alchemy, the paper's benchmarks, download at run time and are out of reach here;
this family stands for the paper's theoretical setting where the efficient policy is known.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

__all__ = ["component_labels", "csl_union_graph", "make_csl_union_dataset", "multiset_classes"]


def multiset_classes(num_classes: int, num_components: int) -> list[tuple[int, ...]]:
    """All sorted tuples (c_1 <= ... <= c_l) of skip classes; position = label."""
    return list(itertools.combinations_with_replacement(range(num_classes), num_components))


def _check_skips(skips: Any, n: int) -> tuple[int, ...]:
    from iclr24.kits.graphs import CSL_SKIPS

    try:
        out = tuple(int(s) for s in skips)
    except TypeError:
        raise TypeError(f"skips must be a sequence of ints, got {skips!r}") from None
    if len(out) < 1 or len(set(out)) != len(out):
        raise ValueError(f"skips must be distinct and non-empty, got {skips!r}")
    if n == 41:
        bad = [s for s in out if s not in CSL_SKIPS]
        if bad:
            raise ValueError(f"skips must come from the non-isomorphic CSL list {CSL_SKIPS} "
                             f"for n = 41; got {bad}")
    elif any(s < 2 or s > n // 2 for s in out):
        raise ValueError(f"skips must lie in 2..n//2 = {n // 2} for n = {n}; got {out}")
    else:
        for i, s in enumerate(out):
            for t in out[i + 1:]:
                m = _multiplier(s, t, n)
                if m is not None:
                    raise ValueError(f"skips must give non-isomorphic CSL graphs: CSL({n}, {s}) "
                                     f"and CSL({n}, {t}) are isomorphic (multiply labels by {m} "
                                     f"mod {n})")
    return out


def _multiplier(s: int, t: int, n: int) -> int | None:
    """A unit m mod n with m·{±1, ±s} = {±1, ±t} (mod n), i.e. i -> m·i maps CSL(n, s) onto
    CSL(n, t); None if there is none. For prime n this is also necessary for isomorphism
    (circulants of prime order, Turner 1967), so skips without a multiplier are non-isomorphic."""
    import math

    def connection(k: int) -> set[int]:
        return {1 % n, (-1) % n, k % n, (-k) % n}

    target = connection(t)
    for m in range(1, n):
        if math.gcd(m, n) == 1 and {(m * c) % n for c in connection(s)} == target:
            return m
    return None


def csl_union_graph(skips: Any, *, n: int = 41, seed: int):
    """The disjoint union of CSL(n, s) for s in ``skips`` (repeats allowed), relabelled by a
    seeded permutation: an ``nx.Graph`` on 0..len(skips)·n − 1."""
    import networkx as nx

    from iclr24.kits.graphs import csl_graph, relabel

    rng = np.random.default_rng(seed)
    parts = [csl_graph(int(s), n=n, seed=int(rng.integers(2**31))) for s in skips]
    return relabel(nx.disjoint_union_all(parts), seed=int(rng.integers(2**31)))


def component_labels(graph) -> np.ndarray:
    """Connected-component id of every node of ``graph`` (nodes 0..N−1), (N,) int64; components
    are numbered by their smallest node."""
    import networkx as nx

    comp = np.full(graph.number_of_nodes(), -1, dtype=np.int64)
    for i, nodes in enumerate(sorted(nx.connected_components(graph), key=min)):
        comp[list(nodes)] = i
    return comp


def make_csl_union_dataset(num_graphs: int, num_components: int = 2,
                           skips: tuple[int, ...] = (2, 3, 4, 5), n: int = 41, *,
                           seed: int) -> list[Any]:
    """``num_graphs`` PyG ``Data`` graphs of the CSL-union family.

    Each has ``x`` = ones (l·n, 1), ``edge_index`` (both directions), ``y`` (1,) the multiset
    label (see :func:`multiset_classes`), ``component`` (l·n,) the component of each node, and
    ``skip_classes`` (1, l) the sorted skip classes.
    """
    import torch

    from iclr24.kits.graphs import to_pyg

    if isinstance(num_graphs, bool) or not isinstance(num_graphs, int) or num_graphs < 1:
        raise ValueError(f"num_graphs must be a positive int, got {num_graphs!r}")
    if isinstance(num_components, bool) or not isinstance(num_components, int) \
            or num_components < 1:
        raise ValueError(f"num_components must be a positive int, got {num_components!r}")
    if isinstance(n, bool) or not isinstance(n, int) or n < 5:
        raise ValueError(f"n must be an int >= 5, got {n!r}")
    skips = _check_skips(skips, n)
    label_of = {c: i for i, c in enumerate(multiset_classes(len(skips), num_components))}
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(num_graphs):
        classes = rng.integers(len(skips), size=num_components)
        graph = csl_union_graph([skips[c] for c in classes], n=n, seed=int(rng.integers(2**31)))
        key = tuple(sorted(int(c) for c in classes))
        data = to_pyg(graph, y=label_of[key])
        data.component = torch.as_tensor(component_labels(graph))
        data.skip_classes = torch.tensor([key])
        out.append(data)
    return out
