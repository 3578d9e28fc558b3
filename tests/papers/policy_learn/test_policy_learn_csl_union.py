"""The CSL-union family: 1-WL-identical, separated by node marking, labels, seeds, errors."""

import networkx as nx
import numpy as np
import pytest
import torch

from iclr24.papers.policy_learn import (
    component_labels,
    csl_union_graph,
    make_csl_union_dataset,
    multiset_classes,
)


def _nx(data) -> nx.Graph:
    g = nx.Graph()
    g.add_nodes_from(range(data.num_nodes))
    g.add_edges_from(data.edge_index.t().tolist())
    return g


def test_all_graphs_are_1wl_identical():
    graphs = make_csl_union_dataset(40, seed=0)
    assert len({int(g.y) for g in graphs}) >= 8
    hashes = {nx.weisfeiler_lehman_graph_hash(_nx(g), iterations=6) for g in graphs}
    assert len(hashes) == 1
    # the hash does see structure: a non-regular graph of the same size hashes differently
    other = nx.disjoint_union(nx.circulant_graph(41, [1, 2]), nx.path_graph(41))
    assert nx.weisfeiler_lehman_graph_hash(other, iterations=6) not in hashes


def test_marking_one_node_separates_the_skips():
    hashes = []
    for s in (2, 3, 4, 5):
        g = nx.circulant_graph(41, [1, s])
        nx.set_node_attributes(g, {v: int(v == 0) for v in g}, "mark")
        hashes.append(nx.weisfeiler_lehman_graph_hash(g, node_attr="mark", iterations=6))
    assert len(set(hashes)) == 4


def test_labels_components_and_structure():
    classes = multiset_classes(4, 2)
    assert len(classes) == 10 and classes[1] == (0, 1)
    graphs = make_csl_union_dataset(30, skips=(2, 3, 4, 5), seed=1)
    for data in graphs:
        g = _nx(data)
        assert data.x.shape == (82, 1) and all(d == 4 for _, d in g.degree())
        comp = data.component.numpy()
        assert np.bincount(comp).tolist() == [41, 41]
        assert classes[int(data.y)] == tuple(data.skip_classes[0].tolist())
        # each component is the CSL graph of its class
        for c in (0, 1):
            sub = g.subgraph(np.flatnonzero(comp == c).tolist())
            skips = sorted((2, 3, 4, 5)[k] for k in data.skip_classes[0].tolist())
            assert any(nx.is_isomorphic(sub, nx.circulant_graph(41, [1, s])) for s in skips)
    # node order carries no information: components are interleaved, not blocks
    assert not all(np.array_equal(g.component.numpy(), np.repeat([0, 1], 41)) for g in graphs)


def test_seeded_and_three_components():
    a = make_csl_union_dataset(5, seed=7)
    b = make_csl_union_dataset(5, seed=7)
    c = make_csl_union_dataset(5, seed=8)
    assert all(torch.equal(x.edge_index, y.edge_index) for x, y in zip(a, b))
    assert not all(torch.equal(x.edge_index, y.edge_index) for x, y in zip(a, c))
    three = make_csl_union_dataset(3, num_components=3, skips=(2, 3), seed=0)
    assert three[0].num_nodes == 123 and int(max(g.y for g in three)) < 4
    g = csl_union_graph([9, 9], seed=0)
    assert np.bincount(component_labels(g)).tolist() == [41, 41]


def test_n17_skips_are_non_isomorphic_and_multiplier_pairs_refused():
    # CSL(17, s) for s = 2..5 are pairwise non-isomorphic (prime n: isomorphic iff a multiplier)
    gs = [nx.circulant_graph(17, [1, s]) for s in (2, 3, 4, 5)]
    assert not any(nx.is_isomorphic(a, b) for i, a in enumerate(gs) for b in gs[i + 1:])
    graphs = make_csl_union_dataset(20, n=17, seed=0)
    assert graphs[0].num_nodes == 34 and len({int(g.y) for g in graphs}) >= 6
    hashes = {nx.weisfeiler_lehman_graph_hash(_nx(g), iterations=6) for g in graphs}
    assert len(hashes) == 1
    marked = []
    for g in gs:
        nx.set_node_attributes(g, {v: int(v == 0) for v in g}, "mark")
        marked.append(nx.weisfeiler_lehman_graph_hash(g, node_attr="mark", iterations=4))
    assert len(set(marked)) == 4
    # 2 ~ 8 (x 8 mod 17), 3 ~ 6 (x 6), 5 ~ 7 (x 7): isomorphic pairs, refused with the multiplier
    for pair, m in (((2, 8), 8), ((3, 6), 6), ((5, 7), 7)):
        assert nx.is_isomorphic(nx.circulant_graph(17, [1, pair[0]]),
                                nx.circulant_graph(17, [1, pair[1]]))
        with pytest.raises(ValueError, match=f"isomorphic.*multiply labels by {m} "):
            make_csl_union_dataset(2, skips=pair, n=17, seed=0)


def test_errors():
    with pytest.raises(ValueError, match="non-isomorphic"):
        make_csl_union_dataset(2, skips=(2, 7), seed=0)
    with pytest.raises(ValueError, match="non-isomorphic"):
        make_csl_union_dataset(2, skips=(39,), seed=0)
    with pytest.raises(ValueError, match="distinct"):
        make_csl_union_dataset(2, skips=(2, 2), seed=0)
    with pytest.raises(ValueError, match="2..n//2"):
        make_csl_union_dataset(2, skips=(2, 9), n=13, seed=0)
    with pytest.raises(ValueError, match="num_graphs"):
        make_csl_union_dataset(0, seed=0)
    with pytest.raises(ValueError, match="num_components"):
        make_csl_union_dataset(2, num_components=0, seed=0)
    with pytest.raises(TypeError, match="skips"):
        make_csl_union_dataset(2, skips=3, seed=0)
