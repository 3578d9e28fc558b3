"""Baselines: Prüfer enumeration (Cayley count), exhaustive optimum, greedy = Prim, MCTS."""

import networkx as nx
import numpy as np
import pytest

from iclr24.papers.gapn import (
    AssemblyEnv,
    assemble_tree,
    exhaustive_assemble,
    generate_complexes,
    greedy_assemble,
    mcts_assemble,
    prufer_to_edges,
    random_assemble,
    spanning_trees,
)


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6])
def test_spanning_trees_enumerate_cayley_count(n):
    trees = {frozenset(frozenset(e) for e in t) for t in spanning_trees(n)}
    assert len(trees) == n ** (n - 2)
    for t in list(trees)[:50]:
        g = nx.Graph([tuple(e) for e in t])
        g.add_nodes_from(range(n))
        assert nx.is_tree(g)


def test_prufer_matches_networkx():
    rng = np.random.default_rng(0)
    for _ in range(20):
        seq = list(rng.integers(0, 7, size=5))
        ours = {frozenset(e) for e in prufer_to_edges(seq, 7)}
        ref = {frozenset(e) for e in nx.from_prufer_sequence(seq).edges()}
        assert ours == ref


@pytest.fixture(scope="module")
def five():
    return generate_complexes(1, (5, 5), seed=9)[0]


def test_exhaustive_is_the_reward_optimum(five):
    best = exhaustive_assemble(AssemblyEnv(five.problem))
    assert best.n_scored == 125
    rewards = [assemble_tree(AssemblyEnv(five.problem), t).reward for t in spanning_trees(5)]
    assert best.reward == pytest.approx(max(rewards), abs=1e-9)
    assert best.reward >= greedy_assemble(AssemblyEnv(five.problem)).reward - 1e-9


def test_greedy_is_prims_maximum_confidence_tree(five):
    res = greedy_assemble(AssemblyEnv(five.problem))
    conf = five.problem.confidence()
    g = nx.Graph()
    for i in range(5):
        for j in range(i + 1, 5):
            g.add_edge(i, j, weight=conf[i, j])
    mst = nx.maximum_spanning_tree(g)
    assert sum(conf[i, j] for i, j in res.edges) == pytest.approx(mst.size(weight="weight"))
    assert res.n_scored == 1 and len(res.edges) == 4


def test_mcts_finds_the_optimum_with_enough_simulations(five):
    best = exhaustive_assemble(AssemblyEnv(five.problem)).reward
    res = mcts_assemble(AssemblyEnv(five.problem), 400, rng=np.random.default_rng(0))
    assert res.reward == pytest.approx(best, abs=1e-9)
    assert res.n_scored == 400
    few = mcts_assemble(AssemblyEnv(five.problem), 3, rng=np.random.default_rng(0))
    assert few.reward <= best + 1e-9
    # the returned assembly is what its edges build
    again = AssemblyEnv(five.problem)
    for e in res.edges:
        again.step(e)
    assert again.total_reward == pytest.approx(res.reward)


def test_random_assemble_is_a_spanning_tree(five):
    res = random_assemble(AssemblyEnv(five.problem), np.random.default_rng(1))
    g = nx.Graph(res.edges)
    assert nx.is_tree(g) and g.number_of_nodes() == 5


def test_search_bad_inputs(five):
    big = generate_complexes(1, (8, 8), seed=1)[0]
    with pytest.raises(ValueError, match="N <= 7"):
        exhaustive_assemble(AssemblyEnv(big.problem))
    used = AssemblyEnv(five.problem)
    used.step((0, 1))
    with pytest.raises(ValueError, match="freshly reset"):
        greedy_assemble(used)
    with pytest.raises(ValueError, match="n_simulations"):
        mcts_assemble(AssemblyEnv(five.problem), 0, rng=np.random.default_rng(0))
    with pytest.raises(ValueError, match="spanning tree"):
        assemble_tree(AssemblyEnv(five.problem), [(0, 1), (1, 0), (2, 3), (3, 4)])
    with pytest.raises(ValueError, match="4 edges"):
        assemble_tree(AssemblyEnv(five.problem), [(0, 1)])
    with pytest.raises(TypeError, match="AssemblyEnv"):
        greedy_assemble(five)
    with pytest.raises(ValueError, match="n must be"):
        next(spanning_trees(1))
