import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.federated import (
    dirichlet_label_partition,
    iid_partition,
    partition_class_counts,
)


def _labels(n=600, c=10, seed=0):
    return np.random.default_rng(seed).integers(0, c, size=n)


def _check_cover(parts, n):
    allidx = np.concatenate(parts)
    assert allidx.size == n
    assert np.array_equal(np.sort(allidx), np.arange(n))


@settings(max_examples=30, deadline=None)
@given(n=st.integers(20, 300), c=st.integers(1, 8), k=st.integers(1, 10),
       alpha=st.floats(0.05, 50.0), seed=st.integers(0, 10_000))
def test_dirichlet_is_a_disjoint_cover(n, c, k, alpha, seed):
    y = _labels(n, c, seed)
    parts = dirichlet_label_partition(y, k, alpha, min_partition_size=0, seed=seed)
    assert len(parts) == k
    _check_cover(parts, n)
    assert all(p.dtype == np.int64 for p in parts)


def test_dirichlet_min_size_resampling_and_determinism():
    y = _labels()
    a = dirichlet_label_partition(y, 10, 0.1, min_partition_size=10, seed=3)
    b = dirichlet_label_partition(y, 10, 0.1, min_partition_size=10, seed=3)
    c = dirichlet_label_partition(y, 10, 0.1, min_partition_size=10, seed=4)
    assert min(len(p) for p in a) >= 10
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not all(np.array_equal(p, q) for p, q in zip(a, c))


def test_small_alpha_is_more_skewed_than_large_alpha():
    y = _labels(2000)
    def dominance(alpha):
        vals = []
        for s in range(5):
            parts = dirichlet_label_partition(y, 10, alpha, seed=s)
            counts = partition_class_counts(y, parts, 10)
            vals.append(np.mean(counts.max(1) / np.maximum(counts.sum(1), 1)))
        return np.mean(vals)
    assert dominance(0.1) > dominance(100.0) + 0.3
    assert dominance(100.0) < 0.2  # near IID: the largest class share ~ 1/C


def test_per_client_alpha_vector():
    y = _labels()
    parts = dirichlet_label_partition(y, 3, [1.0, 2.0, 3.0], seed=0)
    _check_cover(parts, y.size)


@pytest.mark.parametrize("alpha", [0.0, -1.0, float("nan"), [1.0, 0.0]])
def test_dirichlet_rejects_bad_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        dirichlet_label_partition(_labels(), 2, alpha)


def test_dirichlet_rejects_more_clients_than_samples():
    with pytest.raises(ValueError, match="num_clients"):
        dirichlet_label_partition([0, 1, 0], 4, 1.0)
    with pytest.raises(ValueError, match="num_clients"):
        iid_partition(3, 4)


def test_dirichlet_impossible_min_size_is_explained():
    with pytest.raises(ValueError, match="min_partition_size"):
        dirichlet_label_partition(_labels(50), 10, 1.0, min_partition_size=6)
    with pytest.raises(ValueError, match="attempts"):
        dirichlet_label_partition(_labels(100), 10, 0.01, min_partition_size=9, max_attempts=3)


def test_bad_labels():
    with pytest.raises(ValueError, match="1-D"):
        dirichlet_label_partition(np.zeros((3, 2), dtype=int), 2, 1.0)
    with pytest.raises(TypeError, match="integer"):
        dirichlet_label_partition(np.array([0.5, 1.0]), 2, 1.0)
    with pytest.raises(ValueError, match="empty"):
        dirichlet_label_partition(np.array([], dtype=int), 1, 1.0)


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 200), k=st.integers(1, 20), seed=st.integers(0, 99))
def test_iid_partition_balanced_cover(n, k, seed):
    if k > n:
        with pytest.raises(ValueError):
            iid_partition(n, k, seed=seed)
        return
    parts = iid_partition(n, k, seed=seed)
    _check_cover(parts, n)
    sizes = [len(p) for p in parts]
    assert max(sizes) - min(sizes) <= 1


def test_class_counts_sum_to_label_histogram():
    y = _labels()
    parts = dirichlet_label_partition(y, 5, 0.5, seed=1)
    counts = partition_class_counts(y, parts, 10)
    assert counts.shape == (5, 10)
    assert np.array_equal(counts.sum(0), np.bincount(y, minlength=10))
    with pytest.raises(ValueError, match="num_classes"):
        partition_class_counts(y, parts, 3)
