"""The closed-form LCOT embedding: closed forms, the quantile convention, edge atoms, batching."""

import numpy as np
import pytest

from iclr24.papers.lcot import (
    circular_abs,
    circular_quantile,
    lcot_embedding,
    lcot_pairwise,
    wrap_half,
)


def test_wrap_and_circular_abs():
    d = np.array([-1.5, -0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0, 2.3])
    w = wrap_half(d)
    assert np.all(w >= -0.5) and np.all(w < 0.5)
    assert np.allclose(w - d, np.round(w - d), atol=1e-12)  # same point on the circle
    assert np.allclose(circular_abs(d), [0.5, 0.5, 0.25, 0, 0.25, 0.5, 0.25, 0, 0.3])


def test_quantile_right_inverse_and_periodicity():
    vals = [0.6, 0.2]  # unsorted on purpose
    assert circular_quantile(vals, 0.0) == pytest.approx(0.2)
    assert circular_quantile(vals, 0.49) == pytest.approx(0.2)
    assert circular_quantile(vals, 0.5) == pytest.approx(0.6)  # inf{x: F(x) > 0.5}: right inverse
    q = np.linspace(-3.2, 3.7, 41)
    base = circular_quantile(vals, q)
    for k in (-2, 1, 3):
        assert np.allclose(circular_quantile(vals, q + k), base + k)


@pytest.mark.parametrize("y", [0.0, 0.3, 0.5, 1.0 - 1e-12])
def test_dirac_embedding_is_signed_arc(y):
    m = 64
    x = np.arange(m) / m
    emb = lcot_embedding([y], grid_size=m)
    # the optimal map sends everything to y; displacement y - x on the short arc
    assert np.allclose(circular_abs(emb - wrap_half(y - x)), 0, atol=1e-9)
    assert np.all(np.abs(emb) <= 0.5)


def test_evenly_spaced_measure_closed_form():
    n, m = 50, 357
    vals = (np.arange(n) + 0.5) / n  # mean 1/2 -> alpha = 0; F^{-1}(x) = (floor(n x) + 1/2) / n
    x = np.arange(m) / m
    emb = lcot_embedding(vals, grid_size=m)
    target = (np.floor(n * x) + 0.5) / n - x
    # x = 0 sits exactly on a breakpoint, where alpha's rounding picks the left or right atom
    assert np.allclose(emb[1:], target[1:], atol=1e-12)


def test_atom_exactly_at_zero_closed_form():
    # nu = (delta_0 + delta_{1/2}) / 2: alpha = -1/4, T(x) = 0, 1/2, 1 on [0,1/4), [1/4,3/4), [3/4,1)
    m = 8
    x = np.arange(m) / m
    emb = lcot_embedding([0.0, 0.5], grid_size=m)
    target = np.where(x < 0.25, 0.0, np.where(x < 0.75, 0.5, 1.0)) - x
    assert np.allclose(emb, target, atol=1e-12)


@pytest.mark.parametrize("m", [8, 1000])
def test_atom_just_below_one_equals_atom_at_zero(m):
    e0 = lcot_embedding([0.0, 0.5], grid_size=m)
    e1 = lcot_embedding([1.0 - 1e-12, 0.5], grid_size=m)
    assert np.max(circular_abs(e0 - e1)) < 1e-9


def test_batched_equals_rows_and_weights_are_normalised():
    rng = np.random.default_rng(0)
    v = rng.random((2, 3, 17))
    w = rng.random((2, 3, 17))
    emb = lcot_embedding(v, w, grid_size=100)
    assert emb.shape == (2, 3, 100)
    for i in range(2):
        for j in range(3):
            assert np.array_equal(emb[i, j], lcot_embedding(v[i, j], w[i, j], grid_size=100))
    assert np.allclose(lcot_embedding(v, 7.0 * w, grid_size=100), emb)


def test_order_zero_weights_and_duplicates_do_not_matter():
    rng = np.random.default_rng(1)
    v = rng.random(20)
    w = rng.random(20)
    perm = rng.permutation(20)
    e = lcot_embedding(v, w, grid_size=333)
    assert np.allclose(lcot_embedding(v[perm], w[perm], grid_size=333), e)
    v0 = np.append(v, 0.123)
    w0 = np.append(w, 0.0)
    assert np.allclose(lcot_embedding(v0, w0, grid_size=333), e)
    vd = np.append(v, v[:3])  # split the first three atoms' mass in two copies
    wd = np.append(w.copy(), w[:3] / 2)
    wd[:3] /= 2
    assert np.allclose(lcot_embedding(vd, wd, grid_size=333), e)


def test_pairwise_matches_definition_and_chunking():
    rng = np.random.default_rng(2)
    e = wrap_half(rng.random((7, 50)))
    d = lcot_pairwise(e)
    i, j = 2, 5
    assert d[i, j] == pytest.approx(np.sqrt(np.mean(circular_abs(e[i] - e[j]) ** 2)))
    assert np.allclose(lcot_pairwise(e, chunk_elements=10), d)
    assert np.allclose(np.diag(d), 0) and np.allclose(d, d.T)
    other = lcot_pairwise(e[:3], e)
    assert other.shape == (3, 7) and np.allclose(other, d[:3])


@pytest.mark.parametrize(
    "values, weights, match",
    [
        ([0.2, 1.0], None, r"\[0, 1\)"),
        ([-0.1, 0.5], None, r"\[0, 1\)"),
        ([0.1, np.nan], None, "finite"),
        ([], None, "at least one atom"),
        (0.3, None, "scalar"),
        ([0.1, 0.2], [1.0], "same shape"),
        ([0.1, 0.2], [1.0, -1.0], "non-negative"),
        ([0.1, 0.2], [0.0, 0.0], "positive sum"),
    ],
)
def test_bad_measures_raise(values, weights, match):
    with pytest.raises(ValueError, match=match):
        lcot_embedding(values, weights)


@pytest.mark.parametrize("grid_size, exc", [(0, ValueError), (2.5, TypeError), (True, TypeError)])
def test_bad_grid_size(grid_size, exc):
    with pytest.raises(exc, match="grid_size"):
        lcot_embedding([0.1, 0.2], grid_size=grid_size)


def test_bad_embeddings_for_pairwise():
    with pytest.raises(ValueError, match="embeddings must be a 2-D"):
        lcot_pairwise(np.zeros(5))
    with pytest.raises(ValueError, match="share grid_size"):
        lcot_pairwise(np.zeros((2, 5)), np.zeros((2, 6)))
    with pytest.raises(TypeError, match="values must be an array"):
        lcot_embedding(object())
