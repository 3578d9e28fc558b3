import itertools

import networkx as nx
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.graphs import (
    CSL_SKIPS,
    barabasi_albert,
    csl_graph,
    grid,
    random_geometric,
    random_tree,
    relabel,
    ring_of_cliques,
    to_pyg,
)


def test_csl_graphs_are_1wl_identical_but_not_isomorphic():
    graphs = [csl_graph(s, seed=s) for s in CSL_SKIPS]
    hashes = {nx.weisfeiler_lehman_graph_hash(g, iterations=5) for g in graphs}
    assert len(hashes) == 1  # 4-regular: colour refinement never splits them
    assert all(nx.is_regular(g) and g.degree(0) == 4 for g in graphs)
    for a, b in itertools.combinations(graphs[:5], 2):
        assert not nx.is_isomorphic(a, b)


def test_csl_skip_outside_the_list_raises():
    with pytest.raises(ValueError, match="non-isomorphic CSL skips"):
        csl_graph(7, seed=0)  # 7 * 6 = 42 = 1 mod 41: isomorphic to skip 6
    with pytest.raises(ValueError, match="skip"):
        csl_graph(1, seed=0)
    with pytest.raises(ValueError, match=r"2\.\.n//2"):
        csl_graph(9, n=13, seed=0)


@given(seed=st.integers(0, 2**31 - 1), n=st.integers(1, 40))
@settings(max_examples=25, deadline=None)
def test_random_tree_is_a_tree_and_seeded(seed, n):
    t = random_tree(n, seed=seed)
    assert sorted(t.nodes()) == list(range(n))
    assert nx.is_tree(t)
    assert nx.utils.graphs_equal(t, random_tree(n, seed=seed))


def test_relabel_is_a_seeded_isomorphism():
    g = nx.path_graph(10)
    a, b = relabel(g, seed=1), relabel(g, seed=2)
    assert nx.is_isomorphic(a, g) and nx.is_isomorphic(b, g)
    assert set(a.edges()) != set(b.edges())  # the order carries no information
    assert set(relabel(g, seed=1).edges()) == set(a.edges())
    with pytest.raises(ValueError, match="empty graph"):
        relabel(nx.Graph(), seed=0)


def test_other_families_have_their_structure():
    ba = barabasi_albert(30, 2, seed=0)
    assert ba.number_of_edges() == 2 * (30 - 2) and nx.is_connected(ba)
    geo = random_geometric(40, 0.3, seed=0)
    assert nx.is_connected(geo) and geo.number_of_nodes() == 40
    roc = ring_of_cliques(6, 8, seed=0)
    assert roc.number_of_nodes() == 48 and roc.number_of_edges() == 6 * 28 + 6
    gr = grid(8, 8, seed=0)
    assert gr.number_of_edges() == 2 * 8 * 7 and nx.is_isomorphic(gr, nx.grid_2d_graph(8, 8))
    with pytest.raises(ValueError, match="m must be < n"):
        barabasi_albert(3, 3, seed=0)
    with pytest.raises(ValueError, match="radius"):
        random_geometric(10, 0.0, seed=0)


def test_to_pyg_is_undirected_and_coalesced():
    g = nx.Graph([(0, 1), (1, 2)])
    g.add_node(3)
    d = to_pyg(g, y=1)
    assert d.num_nodes == 4 and d.x.shape == (4, 1)
    assert d.edge_index.tolist() == [[0, 1, 1, 2], [1, 0, 2, 1]]
    assert d.y.tolist() == [1] and d.y.dtype == torch.long
    e = to_pyg(nx.empty_graph(2))
    assert e.edge_index.shape == (2, 0)
    with pytest.raises(ValueError, match="empty graph"):
        to_pyg(nx.Graph())
    with pytest.raises(ValueError, match="0..n-1"):
        to_pyg(nx.Graph([(1, 2)]))
    with pytest.raises(ValueError, match="x must have shape"):
        to_pyg(g, x=torch.zeros(3, 2))
