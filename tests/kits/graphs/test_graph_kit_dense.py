import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse import csgraph

from iclr24.kits.graphs import (
    DENSE_NODE_LIMIT,
    dense_adjacency,
    normalized_laplacian,
    shortest_path_distances,
    to_pyg,
    total_effective_resistance,
)


def _random_graph(n, p, seed):
    return to_pyg(nx.gnp_random_graph(n, p, seed=seed))


@given(n=st.integers(1, 25), p=st.floats(0.0, 0.6), seed=st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_laplacian_matches_scipy_incl_isolated_nodes(n, p, seed):
    d = _random_graph(n, p, seed)
    a = dense_adjacency(d.edge_index, n)
    assert np.allclose(normalized_laplacian(d.edge_index, n), csgraph.laplacian(a, normed=True))


def test_laplacian_on_a_tiny_graph_by_hand():
    # path 0-1 plus isolated node 2: L = [[1, -1, 0], [-1, 1, 0], [0, 0, 0]]
    lap = normalized_laplacian(np.array([[0, 1], [1, 0]]), 3)
    assert np.allclose(lap, [[1, -1, 0], [-1, 1, 0], [0, 0, 0]])
    eig = np.linalg.eigvalsh(normalized_laplacian(to_pyg(nx.cycle_graph(6)).edge_index, 6))
    assert np.isclose(eig.max(), 2.0) and np.isclose(eig.min(), 0.0)  # bipartite cycle


@given(n=st.integers(1, 20), p=st.floats(0.0, 0.4), seed=st.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_distances_match_networkx_bfs(n, p, seed):
    g = nx.gnp_random_graph(n, p, seed=seed)
    dist = shortest_path_distances(to_pyg(g).edge_index, n)
    ref = np.full((n, n), -1)
    for u, row in nx.all_pairs_shortest_path_length(g):
        for v, k in row.items():
            ref[u, v] = k
    assert (dist == ref).all()
    capped = shortest_path_distances(to_pyg(g).edge_index, n, max_distance=2)
    assert (capped == np.where(ref > 2, -1, ref)).all()


def test_total_effective_resistance_against_networkx():
    g = nx.ring_of_cliques(3, 4)
    ref = sum(nx.resistance_distance(g, u, v) for u in g for v in g if u < v)
    assert np.isclose(total_effective_resistance(to_pyg(g).edge_index, 12), ref)
    # a path of n nodes: sum_{u<v} |u - v| = (n^3 - n) / 6
    assert np.isclose(total_effective_resistance(to_pyg(nx.path_graph(7)).edge_index, 7), 56.0)
    # two disjoint edges: only the two connected pairs count, R = 1 each
    assert np.isclose(total_effective_resistance(np.array([[0, 2], [1, 3]]), 4), 2.0)



def test_total_effective_resistance_on_nearly_complete_graphs():
    # the 4th power of a ring of 6 cliques of 8 is nearly complete: a pseudo-inverse with a
    # relative cutoff kept the round-off of its zero eigenvalue and returned ~1.3e15; the
    # reference is the independent form L^+ = (L + J/n)^-1 - J/n of a connected graph
    from iclr24.kits.graphs import ring_of_cliques

    for seed in (26, 3):
        g = nx.power(ring_of_cliques(6, 8, seed=seed), 4)
        n = g.number_of_nodes()
        a = nx.to_numpy_array(g, nodelist=range(n))
        j = np.full((n, n), 1.0 / n)
        ref = n * float(np.trace(np.linalg.inv(np.diag(a.sum(1)) - a + j) - j))
        got = total_effective_resistance(to_pyg(g).edge_index, n)
        assert np.isclose(got, ref, rtol=1e-9) and 40 < got < 200
    # K_n minus one edge: eigenvalues 0, n - 2, and n (n - 2 times)
    g = nx.complete_graph(60)
    g.remove_edge(0, 1)
    assert np.isclose(total_effective_resistance(to_pyg(g).edge_index, 60),
                      60 * (1 / 58 + 58 / 60), rtol=1e-12)

def test_size_guard_and_bad_input():
    with pytest.raises(ValueError, match="dense-size limit"):
        normalized_laplacian(np.zeros((2, 0), dtype=int), DENSE_NODE_LIMIT + 1)
    with pytest.raises(ValueError, match="empty graph"):
        shortest_path_distances(np.zeros((2, 0), dtype=int), 0)
    with pytest.raises(ValueError, match="outside"):
        dense_adjacency(np.array([[0], [5]]), 3)
    with pytest.raises(TypeError, match="num_nodes"):
        dense_adjacency(np.array([[0], [1]]), 2.0)
    with pytest.raises(ValueError, match="max_distance"):
        shortest_path_distances(np.array([[0], [1]]), 2, max_distance=-1)
