"""Shared kits: intervals over seeds and thread-count context managers."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from iclr24.kits.statistics import difference_interval, mean_interval, t_half_width
from iclr24.kits.threads import single_threaded, torch_threads


def test_t_interval_matches_scipy():
    x = [0.3, 0.5, 0.4, 0.9, 0.1]
    lo, hi = stats.t.interval(0.95, len(x) - 1, loc=np.mean(x), scale=stats.sem(x))
    mean, low, high = mean_interval(x)
    assert mean == pytest.approx(np.mean(x))
    assert (low, high) == pytest.approx((lo, hi))
    assert t_half_width(x)[1] == pytest.approx((hi - lo) / 2)
    assert t_half_width([2.0]) == (2.0, None)
    assert mean_interval([2.0]) == (2.0, 2.0, 2.0)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-10, 10).map(lambda v: round(v, 6)), min_size=2, max_size=8),
       st.lists(st.floats(-10, 10), min_size=2, max_size=8))
def test_difference_interval_is_centred_and_welch(a, b):
    d, lo, hi = difference_interval(a, b)
    assert np.isfinite([d, lo, hi]).all()
    assert d == pytest.approx(np.mean(a) - np.mean(b), abs=1e-12)
    assert lo <= d + 1e-12 and d - 1e-12 <= hi
    if np.var(a) > 0 and np.var(b) > 0:
        res = stats.ttest_ind(a, b, equal_var=False)
        ci = res.confidence_interval(0.95)
        assert (lo, hi) == pytest.approx((ci.low, ci.high), rel=1e-6, abs=1e-9)


def test_bad_input():
    with pytest.raises(ValueError, match="non-empty"):
        t_half_width([])
    with pytest.raises(ValueError, match="confidence"):
        t_half_width([1, 2], confidence=1.5)
    with pytest.raises(ValueError, match="non-empty"):
        difference_interval([], [1.0])
    with pytest.raises(ValueError, match="positive int"):
        with torch_threads(0):
            pass


def test_thread_contexts_restore():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with single_threaded():
        from threadpoolctl import threadpool_info

        assert torch.get_num_threads() == 1
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert torch.get_num_threads() == before
