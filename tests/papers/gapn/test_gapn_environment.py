"""The assembly MDP: placement composition, the docking reward, action validation."""

import numpy as np
import pytest
from gymnasium.utils.passive_env_checker import env_reset_passive_checker, env_step_passive_checker

from iclr24.papers.gapn import (
    AssemblyEnv,
    AssemblyProblem,
    Dimer,
    DockingReward,
    PairScorer,
    apply_transform,
    assemble_tree,
    compose,
    generate_complex,
    generate_complexes,
    greedy_assemble,
    kabsch_rmsd,
    tm_score,
    tree_path,
)


@pytest.fixture(scope="module")
def gt3():
    # a 3-chain native with exact (ground-truth) dimers
    return generate_complex(3, np.random.default_rng(2), mode="gt")


def _native_tree(c):
    import networkx as nx

    g = nx.Graph(list(c.native_contacts))
    return list(nx.minimum_spanning_tree(g).edges())


def test_three_chain_gt_native_assembles_to_tm_one(gt3):
    res = assemble_tree(AssemblyEnv(gt3.problem), _native_tree(gt3))
    native = gt3.native_coordinates()
    assert tm_score(res.coordinates, native) == pytest.approx(1.0, abs=1e-9)
    assert kabsch_rmsd(res.coordinates, native) < 1e-6
    # greedy also picks native edges with GT dimers (their confidence is the highest)
    assert tm_score(greedy_assemble(AssemblyEnv(gt3.problem)).coordinates,
                    native) == pytest.approx(1.0)


def test_wrong_composition_order_is_detected():
    """A 3-chain GT native that needs the path 0 - 1 - 2 (depth 2): the right order
    T_2 = T_1 ∘ T_12 gives TM = 1, the mirror order T_12 ∘ T_1 scrambles the assembly."""
    seed = next(s for s in range(100)
                if generate_complex(3, np.random.default_rng(s), mode="gt").native_contacts
                == {(0, 1), (1, 2)})
    c = generate_complex(3, np.random.default_rng(seed), mode="gt")
    res = assemble_tree(AssemblyEnv(c.problem), [(0, 1), (1, 2)])
    native = c.native_coordinates()
    assert tm_score(res.coordinates, native) == pytest.approx(1.0, abs=1e-9)
    t1 = c.problem.relative(0, 1)
    wrong = [(np.eye(3), np.zeros(3)), t1, compose(c.problem.relative(1, 2), t1)]
    coords = [apply_transform(p, x) for p, x in zip(wrong, c.problem.chains)]
    assert tm_score(coords, native) < 0.9


def test_two_chain_reward_closed_form():
    rng = np.random.default_rng(0)
    c = generate_complex(2, rng, mode="gt")
    d = c.problem.dimers[(0, 1)]
    env = AssemblyEnv(c.problem)
    _, r, term, trunc, info = env.step((0, 1))
    x1 = apply_transform(d.transform, c.problem.chains[1])
    d2 = np.sum((c.problem.chains[0][:, None] - x1[None]) ** 2, -1)
    clashes = int((d2 < 9).sum())
    assert r == pytest.approx(d.confidence * np.log10(1 + d.contacts) - 0.1 * min(clashes, 50))
    assert term and not trunc and info["clashes"] == clashes


def test_overlap_penalty_and_reward_weights():
    chain = np.random.default_rng(0).normal(scale=4, size=(30, 3))
    chain -= chain.mean(0)
    same = Dimer(np.eye(3), np.zeros(3), 0.5, 30)  # chain 1 on top of chain 0: all clash
    p = AssemblyProblem([chain, chain.copy()], {(0, 1): same})
    env = AssemblyEnv(p, DockingReward(overlap_limit=5, overlap_penalty=5.0))
    _, r, *_ = env.step((0, 1))
    clashes = int((np.sum((chain[:, None] - chain[None]) ** 2, -1) < 9).sum())
    supported = int((np.sum((chain[:, None] - chain[None]) ** 2, -1) < 64).sum())
    assert r == pytest.approx(0.5 * np.log10(1 + supported) - 0.1 * min(clashes, 50) - 5.0)
    with pytest.raises(ValueError, match="clash_weight"):
        DockingReward(clash_weight=-1)


def test_return_depends_on_the_tree_only():
    c = generate_complexes(1, (6, 6), seed=4)[0]
    edges = [(0, 1), (1, 2), (1, 3), (3, 4), (0, 5)]
    a = assemble_tree(AssemblyEnv(c.problem), edges)
    env = AssemblyEnv(c.problem)  # the same tree in another valid order
    for e in [(0, 5), (0, 1), (1, 3), (3, 4), (1, 2)]:
        env.step(e)
    assert env.total_reward == pytest.approx(a.reward, abs=1e-9)
    assert max(np.abs(x - y).max() for x, y in zip(env.coordinates(), a.coordinates)) < 1e-9


def test_invalid_actions_raise(gt3):
    env = AssemblyEnv(gt3.problem)
    with pytest.raises(ValueError, match="first chain 1 must already be placed"):
        env.step((1, 2))
    with pytest.raises(ValueError, match="second chain 0 is already placed"):
        env.step((0, 0))
    with pytest.raises(ValueError, match="outside"):
        env.step((0, 7))
    with pytest.raises(TypeError, match="action"):
        env.step("0-1")
    env.step(1)  # flat index 0·N + 1
    with pytest.raises(ValueError, match="already placed"):
        env.step((0, 1))
    with pytest.raises(ValueError, match="incomplete"):
        env.coordinates()
    with pytest.raises(TypeError, match="AssemblyProblem"):
        AssemblyEnv(gt3)


def test_gymnasium_api_and_observation(gt3):
    env = AssemblyEnv(gt3.problem)
    env_reset_passive_checker(env, seed=0)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert env.valid_actions() == [(0, 1), (0, 2)]
    assert obs["action_mask"].sum() == 2
    env_step_passive_checker(env, (0, 1))
    obs, _ = env.reset()
    clone = env.clone()
    clone.step((0, 2))
    assert env.placed.sum() == 1 and clone.placed.sum() == 2  # clones are independent
    assert env.observation_space.contains(clone.observation())
    # only dimer information is exposed: the native's poses are not in the observation
    assert set(obs) == {"placed", "action_mask", "node_features", "edge_features", "adjacency"}


def test_tree_path_and_pair_memo():
    assert tree_path((0, 1, 2), (0, 3)) == (2, 1, 0, 3)
    assert tree_path((0, 1), (0, 1, 4)) == (1, 4)
    assert tree_path((0,), (0, 5, 6)) == (0, 5, 6)
    c = generate_complexes(1, (4, 4), seed=8)[0]
    scorer = PairScorer(c.problem)
    first = scorer((0, 1, 2))
    assert scorer((2, 1, 0)) == first and scorer.evaluations == 1  # both directions, one memo
    # the relative pose along a path is the composition of the dimers on it
    pose = scorer.relative_pose((0, 1, 2))
    ref = compose(c.problem.relative(0, 1), c.problem.relative(1, 2))
    assert np.allclose(pose[0], ref[0]) and np.allclose(pose[1], ref[1])
