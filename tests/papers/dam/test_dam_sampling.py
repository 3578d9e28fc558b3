"""History sampling regime: without replacement, most recent kept, long-tailed, clear errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.dam import hsr_probabilities, hsr_sample, window_sample


@settings(max_examples=40)
@given(n=st.integers(2, 300), frac=st.floats(0.01, 1.0), seed=st.integers(0, 10_000),
       sigma=st.floats(1.0, 500.0))
def test_hsr_without_replacement_keeps_most_recent(n, frac, seed, sigma):
    t = np.cumsum(np.random.default_rng(seed).uniform(0.5, 1.5, n))
    v = np.arange(n, dtype=float)
    k = max(1, int(frac * n))
    tc, vc = hsr_sample(t, v, k, sigma, seed)
    assert tc.size == k and np.unique(tc).size == k  # no point read twice
    assert tc[-1] == t[-1] and vc[-1] == v[-1]  # the most recent point is always read
    assert np.all(np.diff(tc) > 0)
    assert np.array_equal(vc, v[np.searchsorted(t, tc)])  # pairs stay aligned


def test_hsr_is_long_tailed_and_seeded():
    t = np.arange(4096.0)
    p = hsr_probabilities(t, sigma=256.0)
    assert p.sum() == pytest.approx(1.0) and np.all(np.diff(p) > 0)  # denser near the present
    assert p[-1] / p[-257] == pytest.approx(2.0)  # (1 + 1^2) at delta = sigma
    counts = np.zeros(4096)
    for s in range(200):
        tc, _ = hsr_sample(t, t, 64, 256.0, s)
        counts[tc.astype(int)] += 1
    recent, far = counts[-256:-1].mean(), counts[:1024].mean()
    assert recent > 5 * far > 0  # heavy tail: far points are read, rarely
    a, b = hsr_sample(t, t, 32, 256.0, 7), hsr_sample(t, t, 32, 256.0, 7)
    assert np.array_equal(a[0], b[0])
    lim, _ = hsr_sample(t, t, 32, 256.0, 0, max_lookback=100)
    assert lim.min() >= 4095 - 100


def test_window_and_errors():
    t = np.arange(10.0)
    assert np.array_equal(window_sample(t, t, 3)[0], [7.0, 8.0, 9.0])
    with pytest.raises(ValueError, match="larger than the history"):
        hsr_sample(t, t, 11)
    with pytest.raises(ValueError, match="strictly increasing"):
        hsr_sample(t[::-1], t, 3)
    with pytest.raises(ValueError, match="times must be finite"):
        hsr_sample(np.r_[t[:-1], np.nan], t, 3)
    with pytest.raises(ValueError, match="empty"):
        window_sample([], [], 1)
    with pytest.raises(ValueError, match="sigma must be"):
        hsr_sample(t, t, 3, sigma=0.0)
    with pytest.raises(TypeError, match="generator"):
        hsr_sample(t, t, 3, generator="x")
