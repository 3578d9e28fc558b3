"""Rigid transforms, Kabsch, RMSD and TM-score: closed forms, invariances, a tmtools cross-check."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from iclr24.papers.gapn import (
    apply_transform,
    compose,
    invert,
    kabsch,
    kabsch_rmsd,
    random_rotation,
    tm_d0,
    tm_score,
)


def _cloud(seed, n=40):
    return np.random.default_rng(seed).normal(scale=8.0, size=(n, 3))


def test_compose_order_and_inverse():
    rng = np.random.default_rng(0)
    a = (random_rotation(rng), rng.normal(size=3))
    b = (random_rotation(rng), rng.normal(size=3))
    x = rng.normal(size=(5, 3))
    # (a ∘ b)(x) = a(b(x)): b first
    assert np.allclose(apply_transform(compose(a, b), x), apply_transform(a, apply_transform(b, x)))
    assert not np.allclose(apply_transform(compose(b, a), x), apply_transform(a, apply_transform(b, x)))
    ident = compose(a, invert(a))
    assert np.allclose(ident[0], np.eye(3)) and np.allclose(ident[1], 0)


def test_random_rotation_is_proper_and_noise_angle():
    rng = np.random.default_rng(1)
    for _ in range(20):
        r = random_rotation(rng)
        assert np.allclose(r @ r.T, np.eye(3), atol=1e-12) and np.isclose(np.linalg.det(r), 1)
    angles = [Rotation.from_matrix(random_rotation(rng, angle_sd=np.deg2rad(5))).magnitude()
              for _ in range(400)]
    # |N(0, σ)| has mean σ √(2/π)
    assert np.mean(angles) == pytest.approx(np.deg2rad(5) * np.sqrt(2 / np.pi), rel=0.15)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000))
def test_kabsch_recovers_rigid_motion_and_rmsd_zero(seed):
    rng = np.random.default_rng(seed)
    x = _cloud(seed)
    r, t = random_rotation(rng), rng.normal(scale=20, size=3)
    y = x @ r.T + t
    r_hat, t_hat = kabsch(x, y)
    assert np.allclose(r_hat, r, atol=1e-8) and np.allclose(t_hat, t, atol=1e-6)
    assert kabsch_rmsd(x, y) < 1e-8
    assert tm_score(x, y) == pytest.approx(1.0)


def test_kabsch_matches_scipy_align_vectors():
    rng = np.random.default_rng(3)
    x = _cloud(3)
    y = x @ random_rotation(rng).T + rng.normal(scale=0.5, size=x.shape)
    r, _ = kabsch(x, y)
    ref, _ = Rotation.align_vectors(y - y.mean(0), x - x.mean(0))
    assert np.allclose(r, ref.as_matrix(), atol=1e-8)


def test_kabsch_rmsd_closed_form():
    # zero-mean displacements of length 1 that no rotation can undo (symmetric under the
    # square's mirror symmetries): the optimal superposition is the identity, RMSD = 1
    x = np.array([[10.0, 0, 0], [-10, 0, 0], [0, 10, 0], [0, -10, 0]])
    d = np.array([[0, 0, 1.0], [0, 0, 1], [0, 0, -1], [0, 0, -1]])
    rmsd = kabsch_rmsd(x, x + d)
    assert rmsd == pytest.approx(1.0, abs=1e-3)


def test_tm_d0_formula():
    assert tm_d0(100) == pytest.approx(1.24 * 85 ** (1 / 3) - 1.8)
    assert tm_d0(10) == 0.5


def test_tm_score_counts_the_correct_fragment():
    rng = np.random.default_rng(4)
    a, b = _cloud(5, 60), _cloud(6, 60) + 200.0
    pred = [a, b + np.array([0.0, 80.0, 0.0])]  # chain 1 misplaced far away
    tm = tm_score(pred, [a, b])
    d0 = tm_d0(120)
    # chain 0 exact (contributes 60/120); chain 1 at 80 Å adds at most 60/120/(1+(80/d0)²)
    assert 0.5 <= tm <= 0.5 + 0.5 / (1 + (80 / d0) ** 2) + 1e-9
    # swapping the chain map to a wrong correspondence is an error, a permutation is accepted
    with pytest.raises(ValueError, match="chain_map"):
        tm_score(pred, [a, b], chain_map=[0, 0])
    with pytest.raises(ValueError, match="points"):
        tm_score([a[:50], b], [a, b])
    assert tm_score([b, a], [a, b], chain_map=[1, 0]) == pytest.approx(1.0)
    del rng


def test_tm_score_cross_check_tmtools():
    import tmtools

    rng = np.random.default_rng(7)
    native = np.cumsum(rng.normal(size=(120, 3)) * 2.2, axis=0)  # a chain-like trace
    pred = native @ random_rotation(rng).T + rng.normal(scale=1.5, size=native.shape) + 30.0
    ours = tm_score(pred, native)
    res = tmtools.tm_align(pred, native, "A" * 120, "A" * 120)
    ref = res.tm_norm_chain2  # normalised by the native
    # TM-align also searches the alignment (sequence independent), so it can only do better
    assert ours == pytest.approx(ref, abs=0.05)
    assert ours <= ref + 0.02


def test_bad_inputs():
    with pytest.raises(ValueError, match="same shape"):
        kabsch(np.zeros((4, 3)), np.zeros((5, 3)))
    with pytest.raises(ValueError, match=r"\(n, 3\)"):
        kabsch_rmsd(np.zeros((4, 2)), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="finite"):
        kabsch_rmsd(np.full((4, 3), np.nan), np.zeros((4, 3)))
