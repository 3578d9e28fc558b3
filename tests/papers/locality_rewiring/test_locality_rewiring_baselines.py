"""Rewiring baselines and diagnostics: k-hop against networkx, random non-edges, the greedy
resistance step against brute force, distances/growth/resistance known answers."""

import networkx as nx
import numpy as np
import pytest
import torch

from iclr24.kits.graphs import grid, random_tree, to_pyg, total_effective_resistance
from iclr24.papers.locality_rewiring import (
    LaserTransform,
    added_edge_distances,
    edge_growth,
    greedy_resistance_rewiring,
    khop_rewiring,
    random_rewiring,
    resistance_drop,
)


def _added_pairs(data, out):
    return out.edge_index[:, data.edge_index.shape[1]:].t().tolist()


def test_khop_snapshot_ids_are_distance_minus_one():
    data = to_pyg(random_tree(20, seed=2))
    g = nx.Graph(data.edge_index.t().tolist())
    out = khop_rewiring(data, 4)
    e = data.edge_index.shape[1]
    for (u, v), s in zip(_added_pairs(data, out), out.edge_snapshot[e:].tolist()):
        assert nx.shortest_path_length(g, u, v) == s + 1


def test_random_rewiring_adds_distinct_non_edges():
    data = to_pyg(random_tree(15, seed=0))
    adj = set(map(tuple, data.edge_index.t().tolist()))
    out = random_rewiring(data, [5, 7], seed=3)
    pairs = _added_pairs(data, out)
    assert len(pairs) == 12 == len(set(map(tuple, pairs)))
    assert all(u != v and (u, v) not in adj for u, v in pairs)
    e = data.edge_index.shape[1]
    assert out.edge_snapshot[e:].tolist() == [1] * 5 + [2] * 7
    again = random_rewiring(data, [5, 7], seed=3)
    assert torch.equal(out.edge_index, again.edge_index)
    sym = random_rewiring(data, 6, seed=1, symmetric=True)
    spairs = set(map(tuple, _added_pairs(data, sym)))
    assert len(spairs) == 12 and {(v, u) for u, v in spairs} == spairs
    with pytest.raises(ValueError, match="num_added"):
        random_rewiring(data, 10_000, seed=0)


def test_greedy_step_matches_brute_force_and_beats_random():
    data = to_pyg(random_tree(14, seed=5))
    n = data.num_nodes
    base = total_effective_resistance(data.edge_index, n)
    best, best_pair = np.inf, None
    adj = nx.Graph(data.edge_index.t().tolist())
    for u in range(n):
        for v in range(u + 1, n):
            if not adj.has_edge(u, v):
                e = torch.cat([data.edge_index, torch.tensor([[u], [v]])], dim=1)
                r = total_effective_resistance(e, n)
                if r < best - 1e-9:
                    best, best_pair = r, (u, v)
    one = greedy_resistance_rewiring(data, 1)
    assert sorted(map(tuple, _added_pairs(data, one))) == sorted([best_pair, best_pair[::-1]])
    np.testing.assert_allclose(total_effective_resistance(one.edge_index, n), best, rtol=1e-9)
    assert best < base
    greedy = greedy_resistance_rewiring(data, 4)
    for s in range(5):
        rnd = random_rewiring(data, 4, seed=s, symmetric=True)
        assert resistance_drop(data, greedy) >= resistance_drop(data, rnd) - 1e-12


def test_greedy_refuses_disconnected_graphs():
    g = nx.Graph([(0, 1), (2, 3)])
    with pytest.raises(ValueError, match="connected"):
        greedy_resistance_rewiring(to_pyg(g), 1)


def test_diagnostics_known_answers():
    path = to_pyg(nx.path_graph(3))
    tri = to_pyg(nx.cycle_graph(3))
    # R_tot(path of 3) = 1 + 1 + 2 = 4, R_tot(triangle) = 3 * 2/3 = 2
    assert resistance_drop(path, tri) == pytest.approx(0.5)
    assert edge_growth(path, tri) == pytest.approx(0.5)
    assert added_edge_distances(path, tri).tolist() == [2, 2]
    data = to_pyg(grid(4, 4, seed=0))
    out = LaserTransform(max_distance=3, rho=0.5, seed=0)(data)
    d = added_edge_distances(data, out)
    e = data.edge_index.shape[1]
    assert torch.equal(d, out.edge_snapshot[e:] + 1)
    assert edge_growth(data, data) == 0.0


def test_diagnostics_bad_input():
    a, b = to_pyg(nx.path_graph(3)), to_pyg(nx.path_graph(4))
    with pytest.raises(ValueError, match="same nodes"):
        edge_growth(a, b)
    empty = to_pyg(nx.empty_graph(3))
    with pytest.raises(ValueError, match="no edges"):
        edge_growth(empty, empty)
    with pytest.raises(ValueError, match="max_distance"):
        khop_rewiring(a, 1)


def test_resistance_drop_is_exact_on_a_nearly_complete_graph():
    # the 4-hop rewiring of this ring of cliques is nearly complete: a pinv cutoff keeps its
    # Laplacian's near-zero eigenvalue and R_tot comes out ~1e15; the true value is ~86
    from iclr24.kits.graphs import ring_of_cliques

    data = to_pyg(ring_of_cliques(6, 8, seed=26))
    dense = khop_rewiring(data, 4)

    def kirchhoff(edge_index):
        g = nx.Graph(edge_index.t().tolist())
        return sum(nx.resistance_distance(g, u, v) for u in g for v in g if u < v)

    want = 1.0 - kirchhoff(dense.edge_index) / kirchhoff(data.edge_index)
    np.testing.assert_allclose(resistance_drop(data, dense), want, rtol=1e-9)
    assert 0.0 < resistance_drop(data, dense) < 1.0
