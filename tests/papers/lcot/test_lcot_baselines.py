"""POT-backed baselines: COT, OT cut at 0, histogram L2 (single and pairwise)."""

import numpy as np
import ot
import pytest

from iclr24.papers.lcot import (
    circular_histogram,
    cot_distance,
    cot_pairwise,
    histogram_l2,
    histogram_l2_pairwise,
    lcot_distance,
    ot_interval_distance,
    ot_interval_pairwise,
)


def _scalar(x) -> float:
    """POT returns shape-(1,) arrays for 1-D inputs."""
    return float(np.ravel(x)[0])



def _measures(seed, k=6):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(k):
        n = int(rng.integers(3, 30))
        if i % 2:
            out.append((rng.random(n), rng.random(n) + 0.1))
        else:
            out.append(rng.random(n))
    return out


def test_cot_is_sqrt_of_pot_binary_search():
    rng = np.random.default_rng(0)
    u, v = rng.random(20), rng.random(25)
    assert cot_distance(u, v) == pytest.approx(np.sqrt(_scalar(ot.binary_search_circle(u, v, p=2))))


def test_diracs_closed_forms():
    assert cot_distance([0.05], [0.95]) == pytest.approx(0.1, abs=1e-6)  # wraps around 0
    assert ot_interval_distance([0.05], [0.95]) == pytest.approx(0.9)  # cut at 0: no wrap
    assert lcot_distance([0.05], [0.95], grid_size=None) == pytest.approx(0.1, abs=1e-12)


def test_cot_below_interval_ot():
    for seed in range(5):
        (u, v) = np.random.default_rng(seed).random((2, 15))
        assert cot_distance(u, v) <= ot_interval_distance(u, v) + 1e-6


def test_pairwise_batched_with_zero_mass_padding_equals_loop():
    ms = _measures(1)
    a = cot_pairwise(ms, batched=True, chunk_pairs=4)
    b = cot_pairwise(ms, batched=False)
    assert np.allclose(a, b, atol=1e-5) and np.allclose(a, a.T) and np.allclose(np.diag(a), 0)
    c = ot_interval_pairwise(ms, batched=True)
    d = ot_interval_pairwise(ms, batched=False)
    assert np.allclose(c, d, atol=1e-10)
    u, v = ms[0], ms[1]
    assert a[0, 1] == pytest.approx(cot_distance(u, v[0], None, v[1]), abs=1e-5)


def test_histograms():
    h = circular_histogram([0.0, 0.9999, 0.5, 0.5], n_bins=4)
    assert np.allclose(h, [0.25, 0, 0.5, 0.25])
    assert histogram_l2([0.1], [0.6], n_bins=360) == pytest.approx(np.sqrt(2))
    assert histogram_l2((np.arange(360) + 0.5) / 360) == pytest.approx(0, abs=1e-12)
    ms = _measures(2)
    d = histogram_l2_pairwise(ms, n_bins=36)
    assert d[1, 2] == pytest.approx(histogram_l2(ms[1][0], ms[2], ms[1][1], n_bins=36))


def test_baseline_bad_input():
    with pytest.raises(ValueError, match=r"v must lie in \[0, 1\)"):
        cot_distance([0.1], [1.2])
    with pytest.raises(ValueError, match="v_weights given but v is None"):
        ot_interval_distance([0.1], None, None, [1.0])
    with pytest.raises(ValueError, match="n_bins"):
        circular_histogram([0.1], n_bins=0)
    with pytest.raises(TypeError, match="measures must be a list"):
        cot_pairwise("abc")
    with pytest.raises(ValueError, match=r"measures\[1\] must lie"):
        cot_pairwise([[0.1], [2.0]])


def test_cot_of_coincident_diracs_is_zero():
    """Regression (found by hypothesis): POT's circle solver returned COT^2 = 1 for two Diracs
    at 0 whose weights summed to 1 - 6e-16; the wrapper now hands POT an exact unit mass."""
    u, uw = np.zeros(5), np.full(5, 0.01)
    v, vw = np.zeros(23), np.full(23, 0.01)
    assert cot_distance(u, v, uw, vw) == pytest.approx(0.0, abs=1e-9)
    for batched in (True, False):
        assert cot_pairwise([(u, uw), (v, vw)], batched=batched)[0, 1] == pytest.approx(
            0.0, abs=1e-9)
