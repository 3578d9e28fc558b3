"""LaserTransform: locality (every added edge spans 2..L+1 hops), rho = 1 equals the k-hop set,
lowest connectivity first, per-node counts, determinism per seed, bad input."""

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch_geometric.data import Data

from iclr24.kits.graphs import grid, random_tree, ring_of_cliques, to_pyg
from iclr24.papers.locality_rewiring import (
    LaserTransform,
    connectivity_measure,
    khop_rewiring,
    orbit_sizes,
)


def _hops(data):
    g = nx.Graph()
    g.add_nodes_from(range(data.num_nodes))
    g.add_edges_from(data.edge_index.t().tolist())
    return dict(nx.all_pairs_shortest_path_length(g))


def _added(out, n_orig_edges):
    ei = out.edge_index[:, n_orig_edges:].t().tolist()
    snap = out.edge_snapshot[n_orig_edges:].tolist()
    return [(u, v, s) for (u, v), s in zip(ei, snap)]


@settings(max_examples=25)
@given(n=st.integers(2, 25), max_distance=st.integers(2, 5),
       rho=st.floats(0.01, 1.0), seed=st.integers(0, 10_000), symmetric=st.booleans())
def test_every_added_edge_spans_its_snapshot_distance(n, max_distance, rho, seed, symmetric):
    data = to_pyg(random_tree(n, seed=seed))
    out = LaserTransform(max_distance=max_distance, rho=rho, seed=seed, symmetric=symmetric)(data)
    hops = _hops(data)
    e = data.edge_index.shape[1]
    assert torch.equal(out.edge_index[:, :e], data.edge_index)
    assert (out.edge_snapshot[:e] == 0).all()
    for u, v, s in _added(out, e):
        assert 1 <= s <= max_distance - 1
        assert hops[u][v] == s + 1 <= max_distance  # snapshot l holds distance l + 1 <= L + 1


@pytest.mark.parametrize("graph", [random_tree(30, seed=3), ring_of_cliques(4, 5, seed=1),
                                   grid(5, 6, seed=2)])
@pytest.mark.parametrize("max_distance", [2, 4])
def test_rho_one_equals_khop_edge_set(graph, max_distance):
    data = to_pyg(graph)
    e = data.edge_index.shape[1]
    laser = LaserTransform(max_distance=max_distance, rho=1.0, seed=0)(data)
    khop = khop_rewiring(data, max_distance)
    assert sorted(_added(laser, e)) == sorted(_added(khop, e))
    hops = _hops(data)
    expected = {(u, v) for u in hops for v, d in hops[u].items() if 2 <= d <= max_distance}
    assert {(u, v) for u, v, _ in _added(khop, e)} == expected


def test_lowest_connectivity_and_counts_per_orbit():
    data = to_pyg(ring_of_cliques(4, 4, seed=5))
    n, e = data.num_nodes, data.edge_index.shape[1]
    rho, md = 0.3, 3
    out = LaserTransform(max_distance=md, rho=rho, seed=1)(data)
    mu = connectivity_measure(data.edge_index, n, 8)
    hops = _hops(data)
    sizes = orbit_sizes(data.edge_index, n, md)
    added = _added(out, e)
    for v in range(n):
        for r in range(2, md + 1):
            orbit = [u for u, d in hops[v].items() if d == r]
            assert len(orbit) == sizes[r - 2, v]
            chosen = [u for u, t, s in added if t == v and s == r - 1]
            want = min(len(orbit), max(1, round(rho * len(orbit)))) if orbit else 0
            assert len(chosen) == want == len(set(chosen))
            rest = [u for u in orbit if u not in chosen]
            if chosen and rest:  # the chosen are the lowest-mu members of the orbit
                assert max(mu[v, chosen]) <= min(mu[v, rest])


def test_connectivity_measure_known_answer():
    path = to_pyg(nx.path_graph(3))
    a_hat = np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1]], dtype=float)
    np.testing.assert_array_equal(connectivity_measure(path.edge_index, 3, 2), a_hat @ a_hat)
    assert connectivity_measure(path.edge_index, 3, 8)[0, 2] == np.linalg.matrix_power(a_hat, 8)[0, 2]


def test_highest_walk_count_pair_is_not_chosen():
    # star centre 0 with a pendant path 1-5: from 5, distance-2 orbit is {0}; from leaf 2 the
    # distance-2 orbit is {1, 3, 4}, where mu(2, 1) (1 is on the path) is the largest
    g = nx.star_graph(4)
    g.add_edge(1, 5)
    data = to_pyg(g)
    mu = connectivity_measure(data.edge_index, 6, 8)
    out = LaserTransform(max_distance=2, rho=0.34, seed=0)(data)
    chosen = [u for u, v, _ in _added(out, data.edge_index.shape[1]) if v == 2]
    assert len(chosen) == 1 and mu[2, chosen[0]] == min(mu[2, [1, 3, 4]])
    assert chosen[0] != 1


def test_deterministic_per_seed_and_ties_depend_on_seed():
    graphs = [to_pyg(grid(6, 6, seed=s)) for s in range(3)]
    runs = []
    for seed in (7, 7, 8):
        t = LaserTransform(max_distance=3, rho=0.1, seed=seed)
        runs.append([t(g).edge_index for g in graphs])
    assert all(torch.equal(a, b) for a, b in zip(runs[0], runs[1]))
    assert not all(torch.equal(a, b) for a, b in zip(runs[0], runs[2]))  # grids are full of ties
    fixed = [LaserTransform(max_distance=3, rho=0.1, shuffle_ties=False, seed=s)(graphs[0])
             for s in (1, 2)]
    assert torch.equal(fixed[0].edge_index, fixed[1].edge_index)


def test_symmetric_adds_both_directions_once():
    data = to_pyg(random_tree(25, seed=4))
    out = LaserTransform(max_distance=3, rho=0.2, symmetric=True, seed=0)(data)
    added = _added(out, data.edge_index.shape[1])
    assert len(added) == len(set(added))
    assert {(v, u, s) for u, v, s in added} == set(added)


def test_random_and_highest_selection_keep_counts():
    data = to_pyg(random_tree(30, seed=9))
    e = data.edge_index.shape[1]
    low = LaserTransform(max_distance=3, rho=0.25, seed=0)(data)
    count = lambda out: sorted((v, s) for _, v, s in _added(out, e))
    for selection in ("random", "highest"):
        other = LaserTransform(max_distance=3, rho=0.25, selection=selection, seed=0)(data)
        assert count(low) == count(other), selection


def test_highest_selection_takes_the_best_connected_orbit_members():
    data = to_pyg(ring_of_cliques(4, 4, seed=5))
    n, e = data.num_nodes, data.edge_index.shape[1]
    mu = connectivity_measure(data.edge_index, n, 8)
    hops = _hops(data)
    out = LaserTransform(max_distance=3, rho=0.3, selection="highest", seed=1)(data)
    low = LaserTransform(max_distance=3, rho=0.3, seed=1)(data)
    differs = False
    for v in range(n):
        for r in (2, 3):
            orbit = [u for u, d in hops[v].items() if d == r]
            chosen = [u for u, t, s in _added(out, e) if t == v and s == r - 1]
            rest = [u for u in orbit if u not in chosen]
            if chosen and rest:  # the chosen are the highest-mu members of the orbit
                assert min(mu[v, chosen]) >= max(mu[v, rest])
            lowest = [u for u, t, s in _added(low, e) if t == v and s == r - 1]
            differs |= max(mu[v, chosen]) > max(mu[v, lowest])
    assert differs  # the ring of cliques has orbits where the two orders disagree


def test_random_selection_depends_on_the_seed_only():
    data = to_pyg(random_tree(40, seed=2))
    runs = [LaserTransform(max_distance=3, rho=0.25, selection="random", seed=s)(data).edge_index
            for s in (0, 0, 1)]
    assert torch.equal(runs[0], runs[1]) and not torch.equal(runs[0], runs[2])


def test_input_untouched_edge_attr_extended_and_device_kept():
    data = to_pyg(random_tree(12, seed=1))
    data.edge_attr = torch.randn(data.edge_index.shape[1], 3)
    before = data.edge_index.clone()
    out = LaserTransform(max_distance=3, rho=0.5, seed=0)(data)
    assert torch.equal(data.edge_index, before) and "edge_snapshot" not in data
    e = before.shape[1]
    assert out.edge_attr.shape == (out.edge_index.shape[1], 3)
    assert torch.equal(out.edge_attr[:e], data.edge_attr)
    assert (out.edge_attr[e:] == 0.1).all()
    assert out.edge_snapshot.dtype == torch.long and out.edge_index.device == before.device


def test_graph_without_edges_gets_nothing():
    data = Data(x=torch.ones(4, 1), edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=4)
    out = LaserTransform(seed=0)(data)
    assert out.edge_index.shape == (2, 0) and out.edge_snapshot.shape == (0,)


@pytest.mark.parametrize("rho", [0, 0.0, -0.1, 1.01, True, "0.5"])
def test_rho_outside_unit_interval_is_refused(rho):
    with pytest.raises(ValueError, match="rho"):
        LaserTransform(rho=rho)


@pytest.mark.parametrize("max_distance", [1, 0, 2.5])
def test_max_distance_below_two_is_refused(max_distance):
    with pytest.raises(ValueError, match="max_distance"):
        LaserTransform(max_distance=max_distance)


def test_bad_inputs_are_refused():
    with pytest.raises(ValueError, match="empty graph"):
        LaserTransform()(Data(edge_index=torch.zeros(2, 0, dtype=torch.long), num_nodes=0))
    with pytest.raises(TypeError, match="Data"):
        LaserTransform()(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="selection"):
        LaserTransform(selection="median")
    with pytest.raises(ValueError, match="min_additions"):
        LaserTransform(min_additions=-1)
    data = to_pyg(random_tree(10, seed=0))
    once = LaserTransform(seed=0)(data)
    with pytest.raises(ValueError, match="already"):
        LaserTransform(seed=0)(once)
    data.edge_weight = torch.ones(data.edge_index.shape[1])
    with pytest.raises(ValueError, match="edge_weight"):
        LaserTransform(seed=0)(data)
    with pytest.raises(ValueError, match="DENSE_NODE_LIMIT"):
        LaserTransform(seed=0)(Data(edge_index=torch.zeros(2, 0, dtype=torch.long),
                                    num_nodes=2001))
