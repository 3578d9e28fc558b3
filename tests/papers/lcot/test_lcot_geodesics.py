"""Interpolation, barycenters and the push-forward back to measures."""

import numpy as np
import pytest

from iclr24.papers.lcot import (
    circular_abs,
    embedding_to_measure,
    lcot_barycenter,
    lcot_distance,
    lcot_embedding,
    lcot_interpolate,
    lcot_pairwise,
    mean_embedding,
    von_mises_kde,
)


def _emb(seed, n=40, m=400):
    rng = np.random.default_rng(seed)
    return lcot_embedding(rng.random(n), grid_size=m)


def _near_uniform(seed, n=200, m=400):
    # small perturbations of an evenly spread measure: displacements stay far from +-1/2
    rng = np.random.default_rng(seed)
    v = np.mod((np.arange(n) + 0.5) / n + 0.01 * rng.standard_normal(n), 1.0)
    return lcot_embedding(v, grid_size=m)


def test_interpolation_endpoints_and_constant_speed():
    e1, e2 = _emb(0), _emb(1)
    assert np.max(circular_abs(lcot_interpolate(e1, e2, 0.0) - e1)) < 1e-12
    assert np.max(circular_abs(lcot_interpolate(e1, e2, 1.0) - e2)) < 1e-12
    ts = np.array([0.0, 0.2, 0.5, 1.0])
    path = lcot_interpolate(e1, e2, ts)
    d = lcot_pairwise(path)
    full = d[0, 3]
    for i in range(4):
        for j in range(4):
            assert d[i, j] == pytest.approx(abs(ts[i] - ts[j]) * full, abs=1e-12)


def test_interpolation_is_linear_average_without_wraps():
    e1, e2 = _near_uniform(2), _near_uniform(3)
    assert np.max(np.abs(e1 - e2)) < 0.5
    assert np.allclose(lcot_interpolate(e1, e2, 0.3), 0.7 * e1 + 0.3 * e2)


def test_push_forward_round_trip():
    rng = np.random.default_rng(4)
    v = rng.random(60)
    e = lcot_embedding(v, grid_size=2000)
    back = embedding_to_measure(e)
    assert back.shape == (2000,) and np.all((back >= 0) & (back < 1))
    # the pushed-forward grid is nu up to grid resolution: exact LCOT distance O(1/M)
    assert lcot_distance(v, back, grid_size=None) < 5e-3
    assert np.sqrt(np.mean(circular_abs(lcot_embedding(back, grid_size=2000) - e) ** 2)) < 5e-3


def test_barycenter_of_one_measure_is_itself_and_weights():
    e = _emb(5)[None, :]
    assert np.allclose(mean_embedding(e), e[0])
    e2 = np.stack([_near_uniform(6), _near_uniform(7)])
    lin = mean_embedding(e2, [0.25, 0.75], mode="linear")
    circ = mean_embedding(e2, [1.0, 3.0])
    assert np.allclose(lin, 0.25 * e2[0] + 0.75 * e2[1])
    assert np.allclose(circ, lin)  # no wraps: the Frechet mean is the paper's average


def test_barycenter_of_two_diracs_is_the_short_arc_midpoint():
    m = 1000
    e = np.stack([lcot_embedding([0.1], grid_size=m), lcot_embedding([0.3], grid_size=m)])
    bary = lcot_barycenter(e)
    assert np.max(circular_abs(bary - 0.2)) < 1e-9
    # the literal linear average sends the mass on x in [0.6, 0.8) to the antipode 0.7
    lin = lcot_barycenter(e, mode="linear")
    assert np.mean(circular_abs(lin - 0.7) < 1e-9) == pytest.approx(0.2, abs=2e-3)


def test_von_mises_kde_integrates_to_one():
    dens = von_mises_kde([0.0, 0.5, 0.5], grid_size=2000, kappa=500.0)
    assert np.mean(dens) == pytest.approx(1.0, rel=1e-6)
    assert np.argmax(dens) == 1000 and dens[0] == pytest.approx(dens[1000] / 2, rel=1e-6)


def test_geodesic_bad_input():
    with pytest.raises(ValueError, match="same grid_size"):
        lcot_interpolate(np.zeros(4), np.zeros(5), 0.5)
    with pytest.raises(ValueError, match=r"t must lie in \[0, 1\]"):
        lcot_interpolate(np.zeros(4), np.zeros(4), 1.5)
    with pytest.raises(ValueError, match="mode"):
        mean_embedding(np.zeros((2, 4)), mode="median")
    with pytest.raises(ValueError, match="weights must have shape"):
        mean_embedding(np.zeros((2, 4)), [1.0])
    with pytest.raises(ValueError, match="kappa"):
        von_mises_kde([0.1], kappa=-1.0)
