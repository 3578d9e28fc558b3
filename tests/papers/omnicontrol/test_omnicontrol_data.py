"""The procedural motion generator, hints, and the realism measures."""

import math

import numpy as np
import pytest
import torch

from iclr24.papers.omnicontrol import (
    ACTIONS,
    BONE_LENGTHS,
    GlobalStatistics,
    bone_length_violation,
    bone_lengths,
    branch_input,
    controlled_joint_jerk,
    frechet_distance,
    generate_motions,
    motion_statistics,
    random_hints,
)


@pytest.fixture(scope="module")
def motions():
    return generate_motions(36, 5, dtype=torch.float64)


def test_generator_is_canonical_and_keeps_bone_lengths(motions):
    m = motions
    assert m.features.shape == (36, 60, 19) and m.positions.shape == (36, 60, 6, 3)
    assert torch.allclose(bone_lengths(m.positions),
                          torch.tensor(BONE_LENGTHS[1:], dtype=torch.float64).expand(36, 60, 5))
    assert torch.all(m.positions[:, 0, 0, [0, 2]].abs() < 1e-12)        # starts at the origin
    assert torch.all(m.heading[:, 0] == 0)
    assert np.array_equal(np.bincount(m.labels.numpy()), [6] * len(ACTIONS))
    assert torch.all(bone_length_violation(m.positions) < 1e-12)


def test_generator_classes_differ(motions):
    m = motions
    travel = m.positions[:, -1, 0, [0, 2]].norm(dim=-1)
    turn = m.heading[:, -1].abs()
    by = {a: m.labels == i for i, a in enumerate(ACTIONS)}
    assert travel[by["walk"]].min() > 2.0 and travel[by["stand"]].max() < 0.2
    assert turn[by["turn"]].min() > 3.0 and turn[by["walk"]].max() < 0.5
    height = m.positions[..., 0, 1]
    assert (height[by["jump"]].amax(1) - height[by["jump"]].amin(1)).min() > 0.15
    hand_up = m.positions[..., 3, 1] - m.positions[..., 1, 1]            # right hand vs neck
    assert hand_up[by["wave"]].mean() > 0.3 and hand_up[by["walk"]].max() < 0


def test_generator_is_deterministic():
    a, b = generate_motions(4, 9), generate_motions(4, 9)
    assert torch.equal(a.positions, b.positions) and torch.equal(a.labels, b.labels)
    assert not torch.equal(a.positions, generate_motions(4, 10).positions)
    with pytest.raises(ValueError, match="n must be a positive int"):
        generate_motions(0, 0)
    with pytest.raises(ValueError, match="labels must be"):
        generate_motions(2, 0, labels=np.array([0, 9]))


def test_random_hints(motions):
    g = torch.Generator().manual_seed(0)
    hint, mask = random_hints(motions.positions, g, n_keyframes=5)
    assert mask.shape == (36, 60, 6)
    assert torch.all(mask.sum((1, 2)) == 5) and torch.all(mask.any(1).sum(-1) == 1)
    assert torch.equal(hint[mask], motions.positions[mask]) and torch.all(hint[~mask] == 0)
    _, dense = random_hints(motions.positions, g, joints=(0,), dense=True)
    assert torch.all(dense[..., 0]) and not dense[..., 1:].any()
    _, train = random_hints(motions.positions, g)
    counts = train.sum((1, 2))
    assert counts.min() >= 1 and counts.max() <= 59
    with pytest.raises(ValueError, match="n_keyframes must lie in"):
        random_hints(motions.positions, g, n_keyframes=61)
    with pytest.raises(ValueError, match="joints must be indices"):
        random_hints(motions.positions, g, joints=(7,))


def test_branch_input_normalises_and_masks(motions):
    stats = GlobalStatistics.of(motions.positions)
    hint, mask = random_hints(motions.positions, torch.Generator().manual_seed(1), n_keyframes=3)
    h, frames = branch_input(hint, mask, stats)
    assert h.shape == (36, 60, 18) and torch.equal(frames, mask.any(-1))
    full = ((hint - stats.mean) / stats.std).flatten(2)
    flat_mask = mask[..., None].expand(-1, -1, -1, 3).flatten(2)
    assert torch.allclose(h[flat_mask], full[flat_mask]) and torch.all(h[~flat_mask] == 0)


def test_frechet_distance_closed_form():
    """Same set: 0; a shift by delta: ||delta||^2; diagonal covariances: sum (s_a - s_b)^2."""
    rng = np.random.default_rng(0)
    a = rng.normal(size=(400, 3))
    assert abs(frechet_distance(a, a)) < 1e-8
    delta = np.array([1.0, -2.0, 0.5])
    assert math.isclose(frechet_distance(a, a + delta), float(delta @ delta), rel_tol=1e-8)
    z = rng.normal(size=(5000, 2))
    b = (z - z.mean(0)) / z.std(0, ddof=1)
    c = b * np.array([2.0, 3.0])
    approx = (2 - 1) ** 2 + (3 - 1) ** 2
    assert abs(frechet_distance(b, c) - approx) < 0.1
    with pytest.raises(ValueError, match="same k"):
        frechet_distance(a, a[:, :2])


def test_motion_statistics(motions):
    f = motion_statistics(motions.positions)
    assert f.shape == (36, 24) and np.isfinite(f).all()
    stand = motions.labels.numpy() == ACTIONS.index("stand")
    walk = motions.labels.numpy() == ACTIONS.index("walk")
    assert f[walk, 0].min() > f[stand, 0].max()          # root speed


def test_controlled_joint_jerk_known_answers():
    """A cubic p(t) = a t^3 has jerk 6 |a| (finite differences are exact on cubics); only the
    controlled joints count, averaged per sequence."""
    t = torch.arange(12, dtype=torch.float64) / 20.0                    # 20 fps
    pos = torch.zeros(2, 12, 6, 3, dtype=torch.float64)
    pos[:, :, 2, 0] = 1.5 * t ** 3                                      # joint 2: jerk 9
    pos[:, :, 4, 1] = -0.5 * t ** 3 + t ** 2                            # joint 4: jerk 3
    pos[:, :, 0, 2] = 0.7 * t                                           # root: jerk 0
    mask = torch.zeros(2, 12, 6, dtype=torch.bool)
    mask[0, 3, 2] = True                                                # one keyframe suffices
    mask[1, [0, 5], 4] = True
    mask[1, 7, 0] = True
    got = controlled_joint_jerk(pos, mask)
    assert torch.allclose(got, torch.tensor([9.0, (3.0 + 0.0) / 2], dtype=torch.float64))


def test_controlled_joint_jerk_of_real_and_jittered_motions(motions):
    g = torch.Generator().manual_seed(2)
    _, mask = random_hints(motions.positions, g, n_keyframes=5)
    real = controlled_joint_jerk(motions.positions, mask)
    assert real.shape == (36,) and torch.all(torch.isfinite(real)) and torch.all(real >= 0)
    noisy = motions.positions + 0.02 * torch.randn(motions.positions.shape, generator=g,
                                                  dtype=torch.float64)
    assert controlled_joint_jerk(noisy, mask).mean() > 3 * real.mean()


def test_controlled_joint_jerk_bad_input(motions):
    pos = motions.positions
    _, mask = random_hints(pos, torch.Generator().manual_seed(0), n_keyframes=2)
    with pytest.raises(ValueError, match="frames >= 4"):
        controlled_joint_jerk(pos[:, :3], mask[:, :3])
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        controlled_joint_jerk(pos, mask.float())
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        controlled_joint_jerk(pos, mask[:, :, :5])
    with pytest.raises(ValueError, match="controls no joint"):
        controlled_joint_jerk(pos, torch.zeros_like(mask))
