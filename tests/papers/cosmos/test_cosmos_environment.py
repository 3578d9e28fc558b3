"""Block-pushing physics, rendering and the compositional splits."""

import numpy as np
import pytest

from iclr24.papers.cosmos import SHAPES, BlockPushingEnv, ConnectedComponentSegmenter, Scene

SQ, CI, TR, CR = (SHAPES.index(s) for s in ("square", "circle", "triangle", "cross"))
RED, GREEN, BLUE, YELLOW = range(4)
N, E, S, W = range(4)


def test_more_objects_than_cells_is_a_clear_error():
    with pytest.raises(ValueError, match="more objects than grid cells"):
        BlockPushingEnv(grid=2, n_objects=5)


@pytest.mark.parametrize("kwargs, match", [
    ({"composition": "teams"}, "composition must be one of"),
    ({"cell": 6}, "multiple of 4"),
    ({"n_objects": 17, "grid": 6}, "distinct atoms"),
    ({"grid": 1}, "grid must be >= 2"),
    ({"n_objects": 1.5}, "n_objects must be an int"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        BlockPushingEnv(**kwargs)


def test_pushing_rules():
    env = BlockPushingEnv(composition="entity")
    # square (3) pushes circle (2) east; circle cannot push square
    s = Scene(((SQ, RED), (CI, BLUE)), ((2, 1), (2, 2)))
    assert env.step(s, (0, E)).cells == ((2, 2), (2, 3))
    assert env.step(s, (1, W)).cells == s.cells
    # wall blocks; a push into the wall blocks both
    s = Scene(((SQ, RED), (CI, BLUE)), ((0, 3), (0, 4)))
    assert env.step(s, (0, E)).cells == s.cells
    assert env.step(s, (1, N)).cells == s.cells
    # free move
    assert env.step(s, (0, S)).cells == ((1, 3), (0, 4))
    with pytest.raises(ValueError, match="direction"):
        env.step(s, (0, 4))


def test_team_and_sticky_dynamics():
    s = Scene(((TR, RED), (CR, RED), (SQ, BLUE)), ((1, 1), (3, 3), (4, 4)))
    team = BlockPushingEnv(composition="team").step(s, (0, N))
    assert team.cells == ((0, 1), (2, 3), (4, 4))  # the far red object moves too, blue stays
    sticky = BlockPushingEnv(composition="sticky").step(s, (0, N))
    assert sticky.cells == ((0, 1), (3, 3), (4, 4))  # not adjacent: stays
    # a follower directly behind the actor follows it (front-most moves first)
    s = Scene(((TR, RED), (CR, RED), (SQ, BLUE)), ((1, 1), (2, 1), (4, 4)))
    assert BlockPushingEnv(composition="sticky").step(s, (1, N)).cells == ((0, 1), (1, 1), (4, 4))


def test_entity_split_keeps_heldout_triples_out_of_training():
    env = BlockPushingEnv(composition="entity", seed=3)
    train, test = env.splits(600, 100)
    train_sets = {frozenset(map(tuple, a)) for a in train.atoms}
    assert not train_sets & env.heldout_sets
    assert all(frozenset(map(tuple, a)) in env.heldout_sets for a in test.atoms)
    assert not train.heldout.any() and test.heldout.all()
    seen = {tuple(x) for a in train.atoms for x in a}
    assert len(seen) == 16  # every atom is seen in training


def test_team_split_keeps_heldout_pairs_out_of_training():
    env = BlockPushingEnv(composition="team", seed=1)
    assert len(env.heldout_pairs) == 8
    for pair in env.heldout_pairs:
        (s1, c1), (s2, c2) = sorted(pair)
        assert c1 == c2 and s1 != s2
    train, test = env.splits(600, 100)
    for atoms in train.atoms:
        key = set(map(tuple, atoms))
        assert not any(p <= key for p in env.heldout_pairs)
    for atoms in test.atoms:
        assert any(p <= set(map(tuple, atoms)) for p in env.heldout_pairs)
    # every held-out pair's shapes co-occur with the same color elsewhere in training
    same_color_pairs = {frozenset({tuple(a), tuple(b)}) for atoms in train.atoms
                        for a in atoms for b in atoms if a[1] == b[1] and a[0] != b[0]}
    assert len(same_color_pairs) == 24 - 8


def test_render_and_segmentation_roundtrip():
    env = BlockPushingEnv(composition="team", seed=0)
    train, _ = env.splits(50, 10)
    seg = ConnectedComponentSegmenter()
    import torch

    for img, cells in zip(train.images, train.cells):
        masks = seg.segment(torch.from_numpy(img))
        assert masks.shape[0] == 3
        assert int(masks.sum(0).max()) == 1  # disjoint
    assert train.images.shape == (50, 3, 20, 20)
    a, _ = env.splits(20, 5, seed=7)
    b, _ = env.splits(20, 5, seed=7)
    assert np.array_equal(a.images, b.images) and np.array_equal(a.actions, b.actions)
    # action cell holds the actor
    r, c = np.divmod(train.actions[:, 0], env.grid)
    assert ((train.cells == np.stack([r, c], -1)[:, None]).all(-1).sum(1) == 1).all()
