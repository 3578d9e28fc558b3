"""LCOT's properties from the paper, checked against POT's circular OT solvers."""

import numpy as np
import ot
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from iclr24.papers.lcot import (
    circular_abs,
    cot_distance,
    lcot_distance,
    lcot_embedding,
    lcot_pairwise,
)

FINE = 20_000
UNIF = (np.arange(FINE) + 0.5) / FINE  # fine uniform grid: POT's oracle for COT to Unif

def _scalar(x) -> float:
    """POT returns shape-(1,) arrays for 1-D inputs."""
    return float(np.ravel(x)[0])



def _measure(rng, n, weighted=True):
    v = rng.random(n)
    w = rng.random(n) + 0.05 if weighted else None
    return v, (None if w is None else w / w.sum())


def _rotate(v, tau):
    r = np.mod(v + tau, 1.0)
    r[r >= 1.0] = 0.0
    return r


@pytest.mark.parametrize("seed", range(4))
def test_lcot_to_uniform_equals_semidiscrete_closed_form(seed):
    rng = np.random.default_rng(seed)
    v, _ = _measure(rng, 5 + 20 * seed, weighted=False)
    cot2 = _scalar(ot.semidiscrete_wasserstein2_unif_circle(v))  # POT: COT_2^2 to Unif, closed form
    assert lcot_distance(v, grid_size=None) == pytest.approx(np.sqrt(cot2), abs=1e-10)
    assert lcot_distance(v, grid_size=1000) == pytest.approx(np.sqrt(cot2), abs=2e-3)


@pytest.mark.parametrize("seed", range(4))
def test_lcot_to_uniform_equals_binary_search_cot_weighted(seed):
    rng = np.random.default_rng(100 + seed)
    v, w = _measure(rng, 3 + 15 * seed)
    cot2 = _scalar(ot.binary_search_circle(v, UNIF, w, None, p=2))
    assert lcot_distance(v, u_weights=w, grid_size=None) == pytest.approx(np.sqrt(cot2), abs=1e-5)
    assert cot_distance(v, u_weights=w) == pytest.approx(np.sqrt(cot2), abs=1e-5)


def test_grid_converges_to_exact():
    rng = np.random.default_rng(7)
    v, w = _measure(rng, 30)
    u, uw = _measure(rng, 40)
    exact = lcot_distance(v, u, w, uw, grid_size=None)
    errs = [abs(lcot_distance(v, u, w, uw, grid_size=m) - exact) for m in (100, 1000, 100_000)]
    assert errs[2] < 1e-4 and errs[2] <= errs[0]


def test_lcot_to_uniform_unweighted_vs_exact_and_grid_default():
    rng = np.random.default_rng(8)
    v = rng.random(75)
    exact = lcot_distance(v, grid_size=None)
    assert lcot_distance(v) == pytest.approx(exact, abs=2e-3)


measure = st.integers(1, 25).flatmap(
    lambda n: st.tuples(
        arrays(np.float64, n, elements=st.floats(0, 1, exclude_max=True)),
        arrays(np.float64, n, elements=st.floats(0.01, 1)),
    )
)


@settings(max_examples=25, deadline=None)
@given(measure, measure)
def test_cot_is_below_lcot(a, b):
    (u, uw), (v, vw) = a, b
    cot = cot_distance(u, v, uw, vw)  # the pair of optimal maps from Unif is a coupling
    assert cot <= lcot_distance(u, v, uw, vw, grid_size=None) + 1e-5


@settings(max_examples=25, deadline=None)
@given(measure, measure, measure)
def test_metric_axioms_exact_and_grid(a, b, c):
    d_ab = lcot_distance(a[0], b[0], a[1], b[1], grid_size=None)
    d_ba = lcot_distance(b[0], a[0], b[1], a[1], grid_size=None)
    d_bc = lcot_distance(b[0], c[0], b[1], c[1], grid_size=None)
    d_ac = lcot_distance(a[0], c[0], a[1], c[1], grid_size=None)
    assert d_ab == pytest.approx(d_ba, abs=1e-12)
    assert d_ac <= d_ab + d_bc + 1e-12
    assert lcot_distance(a[0], a[0], a[1], a[1], grid_size=None) == pytest.approx(0, abs=1e-12)
    e = np.stack([lcot_embedding(m[0], m[1], grid_size=200) for m in (a, b, c)])
    d = lcot_pairwise(e)
    assert np.allclose(d, d.T)
    assert d[0, 2] <= d[0, 1] + d[1, 2] + 1e-12


@pytest.mark.parametrize("y, tau", [(0.0, 0.1), (0.9, 0.3), (0.25, -0.45), (0.5, 0.7)])
def test_rotating_a_dirac_moves_it_by_tau(y, tau):
    target = min(abs(tau) % 1, 1 - abs(tau) % 1)  # |tau|_{S^1}
    moved = _rotate(np.array([y]), tau)
    assert lcot_distance([y], moved, grid_size=None) == pytest.approx(target, abs=1e-12)
    assert lcot_distance([y], moved, grid_size=1000) == pytest.approx(target, abs=1e-9)
    assert cot_distance([y], moved) == pytest.approx(target, abs=1e-5)


@pytest.mark.parametrize("seed", range(3))
def test_rotation_shifts_the_embedding_argument(seed):
    # Unif is rotation invariant, so the optimal map to R_tau nu is R_tau o T o R_-tau and
    # (R_tau nu)^(x) = nu^(x - tau): on the grid a rotation by k/M is np.roll(., k).
    rng = np.random.default_rng(seed)
    m, k = 500, 37 + 50 * seed
    v, w = _measure(rng, 40)
    e = lcot_embedding(v, w, grid_size=m)
    e_rot = lcot_embedding(_rotate(v, k / m), w, grid_size=m)
    assert np.max(circular_abs(e_rot - np.roll(e, k))) < 1e-9


def test_rotation_distance_is_tau_only_for_diracs():
    # LCOT(nu, R_tau nu) = |tau| holds for a Dirac (above) but not in general: an evenly spread
    # measure is (nearly) rotation invariant, so its LCOT (and COT) to its rotation is ~0.
    v = (np.arange(100) + 0.5) / 100
    rot = _rotate(v, 0.25)
    assert lcot_distance(v, rot, grid_size=None) < 1e-9
    assert cot_distance(v, rot) < 1e-3


@pytest.mark.parametrize("seed", range(3))
def test_common_rotation_leaves_lcot_unchanged(seed):
    rng = np.random.default_rng(50 + seed)
    (u, uw), (v, vw) = _measure(rng, 30), _measure(rng, 45)
    base = lcot_distance(u, v, uw, vw, grid_size=None)
    tau = rng.random()
    assert lcot_distance(_rotate(u, tau), _rotate(v, tau), uw, vw, grid_size=None) == \
        pytest.approx(base, abs=1e-10)
    m, k = 1000, int(rng.integers(1, 1000))
    g = lcot_distance(u, v, uw, vw, grid_size=m)
    assert lcot_distance(_rotate(u, k / m), _rotate(v, k / m), uw, vw, grid_size=m) == \
        pytest.approx(g, abs=1e-9)


def test_linearisation_is_tight_near_the_reference():
    # LCOT is COT's linearisation at Unif: for two small perturbations of the uniform measure the
    # gap LCOT - COT is second order, much smaller than the distances themselves.
    rng = np.random.default_rng(3)
    base = (np.arange(400) + 0.5) / 400
    u = np.mod(base + 0.002 * rng.standard_normal(400), 1.0)
    v = np.mod(base + 0.002 * rng.standard_normal(400), 1.0)
    lc = lcot_distance(u, v, grid_size=None)
    co = cot_distance(u, v)
    assert co <= lc + 1e-6
    assert (lc - co) / lc < 0.05


@pytest.mark.skipif(not hasattr(ot, "linear_circular_ot"),
                    reason="this POT has no linear_circular_ot")
def test_pot_linear_circular_ot_discrepancy_is_documented():
    # POT's LCOT helper (returns LCOT^2 on a fixed 100-point grid) looks quantiles up in a
    # zero-padded CDF against an unpadded value array: a one-atom shift. Our oracle is the
    # theorem LCOT(nu, Unif) = COT(nu, Unif), with COT from POT's own binary search.
    rng = np.random.default_rng(0)
    v = rng.random(30)
    cot = np.sqrt(_scalar(ot.binary_search_circle(v, UNIF, p=2)))
    ours = lcot_distance(v, grid_size=None)
    assert ours == pytest.approx(cot, abs=1e-5)
    pot = np.sqrt(float(np.asarray(ot.linear_circular_ot(v)).reshape(-1)[0]))
    if ot.__version__.startswith("0.9.7"):
        assert abs(pot - cot) > 5e-3, "POT 0.9.7's linear_circular_ot now matches COT: update docs"


def test_lcot_distance_bad_input():
    with pytest.raises(ValueError, match="v_weights given but v is None"):
        lcot_distance([0.1], None, None, [1.0])
    with pytest.raises(ValueError, match="u must be 1-D"):
        lcot_distance(np.zeros((2, 3)))
    with pytest.raises(ValueError, match=r"v must lie in \[0, 1\)"):
        lcot_distance([0.1], [1.0], grid_size=None)
    with pytest.raises(ValueError, match="u_weights must have the same shape"):
        lcot_distance([0.1, 0.2], u_weights=[1.0])
