"""The synthetic benchmark: chain packing, native geometry, the dimer predictor's modes."""

import networkx as nx
import numpy as np
import pytest

from iclr24.papers.gapn import (
    AssemblyProblem,
    ComplexConfig,
    apply_transform,
    compose,
    generate_complex,
    generate_complexes,
    invert,
    kabsch_rmsd,
    sample_chain,
)
from iclr24.papers.gapn.complexes import _slide_intervals


def _min_cross(a, b):
    return np.sqrt(np.min(np.sum((a[:, None] - b[None]) ** 2, -1)))


def test_sample_chain_packing():
    rng = np.random.default_rng(0)
    for n in (20, 60):
        x = sample_chain(n, rng)
        d = np.sqrt(np.sum((x[:, None] - x[None]) ** 2, -1)) + np.eye(n) * 99
        assert x.shape == (n, 3) and d.min() >= 3.8
        assert np.allclose(x.mean(0), 0)
        # all points within the ball of radius 2.84 n^0.38 around the pre-centring centre
        assert np.max(np.linalg.norm(x[:, None] - x[None], axis=-1)) <= 2 * 2.84 * n ** 0.38
    with pytest.raises(ValueError, match="n_points"):
        sample_chain(2, rng)


def test_slide_intervals_closed_form():
    moving = np.array([[0.0, 0.0, 0.0]])
    fixed = np.array([[10.0, 0.0, 0.0]])
    lo, hi = _slide_intervals(moving, fixed, np.array([1.0, 0.0, 0.0]), 3.0)
    assert lo == pytest.approx(7.0) and hi == pytest.approx(13.0)  # |s − 10| < 3
    lo, hi = _slide_intervals(moving, fixed, np.array([0.0, 1.0, 0.0]), 3.0)
    assert lo.size == 0  # the line never comes within 3 of the point


@pytest.mark.parametrize("mode", ["gt", "afm"])
def test_native_geometry_and_dimers(mode):
    c = generate_complex(6, np.random.default_rng(11), mode=mode)
    native = c.native_coordinates()
    for a in range(6):
        for b in range(a + 1, 6):
            assert _min_cross(native[a], native[b]) >= 3.0  # no clashes in the native
    g = nx.Graph(list(c.native_contacts))
    g.add_nodes_from(range(6))
    assert nx.is_connected(g)  # each chain was docked onto a placed partner with >= 10 contacts
    conf = c.problem.confidence()
    for (i, j), d in c.problem.dimers.items():
        native_rel = compose(invert(c.native_poses[i]), c.native_poses[j])
        err = kabsch_rmsd(apply_transform(d.transform, c.problem.chains[j]),
                          apply_transform(native_rel, c.problem.chains[j]))
        pose_rmsd = np.sqrt(np.mean(np.sum((apply_transform(d.transform, c.problem.chains[j])
                                            - apply_transform(native_rel, c.problem.chains[j]))
                                           ** 2, -1)))
        assert err < 1e-6  # the chain itself is rigid
        if (i, j) in c.native_contacts and mode == "gt":
            assert pose_rmsd < 1e-9 and 0.7 <= conf[i, j] <= 0.95
        if (i, j) not in c.native_contacts:
            assert 0.2 <= conf[i, j] <= 0.6
            assert d.contacts >= 10  # a plausible (docked) wrong interface


def test_afm_noise_and_wrong_interfaces():
    cs = generate_complexes(20, (5, 8), seed=3, mode="afm")
    errors, wrong = [], 0
    for c in cs:
        for (i, j) in c.native_contacts:
            d = c.problem.dimers[(i, j)]
            native_rel = compose(invert(c.native_poses[i]), c.native_poses[j])
            x = c.problem.chains[j]
            e = np.sqrt(np.mean(np.sum((apply_transform(d.transform, x)
                                        - apply_transform(native_rel, x)) ** 2, -1)))
            if e > 8:
                wrong += 1
                assert 0.5 <= d.confidence <= 0.8
            else:
                errors.append(e)
                assert 0.7 <= d.confidence <= 0.95
    total = wrong + len(errors)
    assert 0.05 < wrong / total < 0.3  # ~15% AFM-like failures
    assert 0.5 < np.median(errors) < 4  # 5° and 1 Å perturbations


def test_generator_determinism_and_errors():
    a = generate_complexes(2, (3, 4), seed=5)
    b = generate_complexes(2, (3, 4), seed=5)
    c = generate_complexes(2, (3, 4), seed=6)
    assert all(np.array_equal(x, y) for x, y in zip(a[0].problem.chains, b[0].problem.chains))
    assert not np.array_equal(a[0].problem.chains[0], c[0].problem.chains[0])
    with pytest.raises(ValueError, match="n_chains"):
        generate_complex(1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="mode"):
        generate_complex(3, np.random.default_rng(0), mode="pdb")
    with pytest.raises(ValueError, match="chain_range"):
        generate_complexes(2, (5, 3), seed=0)
    with pytest.raises(ValueError, match="min_points"):
        ComplexConfig(min_points=70)
    with pytest.raises(ValueError, match="every pair"):
        AssemblyProblem(a[0].problem.chains, {})
