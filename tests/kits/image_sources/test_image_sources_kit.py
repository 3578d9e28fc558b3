"""Image sources: dead leaves (coverage, power law, 1/f spectrum, determinism), crops, rotation."""

import numpy as np
import pytest

from iclr24.kits.image_sources import (
    dead_leaves,
    digits_images,
    power_law_radii,
    random_crops,
    rotation_batch,
    sample_image_crops,
)


def test_dead_leaves_covers_and_is_seeded():
    a = dead_leaves(3, 32, seed=1)
    assert a.shape == (3, 32, 32) and a.dtype == np.float32
    assert np.all(np.isfinite(a)) and a.min() >= 0 and a.max() <= 1
    assert np.array_equal(a, dead_leaves(3, 32, seed=1))
    assert not np.array_equal(a, dead_leaves(3, 32, seed=2))
    # piecewise constant: many neighbouring pixels are equal (occlusion by discs)
    assert np.mean(a[:, 1:, :] == a[:, :-1, :]) > 0.5


def test_dead_leaves_spectrum_is_about_one_over_f():
    x = dead_leaves(12, 64, seed=0)
    amp = np.abs(np.fft.fftshift(np.fft.fft2(x - x.mean(axis=(1, 2), keepdims=True)),
                                 axes=(1, 2))).mean(0)
    yy, xx = np.mgrid[-32:32, -32:32]
    rr = np.hypot(yy, xx).astype(int)
    prof = np.bincount(rr.ravel(), amp.ravel()) / np.bincount(rr.ravel())
    f = np.arange(2, 28)
    slope = np.polyfit(np.log(f), np.log(prof[f]), 1)[0]
    assert -1.4 < slope < -0.6


def test_power_law_radii_match_the_density():
    rng = np.random.default_rng(0)
    r = power_law_radii(rng, 200_000, 3.0, 1.0, 20.0)
    assert r.min() >= 1 and r.max() <= 20
    # p(r) ∝ r^-3 on [1, 20]: P(r <= 2) = (1 - 1/4) / (1 - 1/400)
    assert np.mean(r <= 2) == pytest.approx(0.75 / (1 - 1 / 400), abs=0.005)


def test_bad_arguments():
    with pytest.raises(ValueError, match="r_min < r_max"):
        dead_leaves(1, 16, r_min=5, r_max=2)
    with pytest.raises(ValueError, match="n must be a positive int"):
        dead_leaves(0)
    with pytest.raises(ValueError, match="size must be an int in"):
        sample_image_crops(2, size=1000)


def test_crops_digits_rotation():
    c = sample_image_crops(5, 16, seed=0)
    assert c.shape == (5, 16, 16) and 0 <= c.min() and c.max() <= 1
    assert np.array_equal(c, sample_image_crops(5, 16, seed=0))
    imgs, y = digits_images(32)
    assert imgs.shape == (1797, 32, 32) and set(np.unique(y)) == set(range(10))
    rng = np.random.default_rng(0)
    pool = np.arange(2 * 8 * 8, dtype=np.float32).reshape(2, 8, 8)
    crops = random_crops(pool, 6, 4, rng)
    assert crops.shape == (6, 4, 4)
    c2, idx = random_crops(pool, 6, 4, np.random.default_rng(1), return_index=True)
    for c, i in zip(c2, idx):  # each crop is a window of the image it says it came from
        assert any(np.array_equal(c, pool[i, y:y + 4, x:x + 4])
                   for y in range(5) for x in range(5))
    rot, k = rotation_batch(crops, rng)
    for im, r, orig in zip(rot, k, crops):
        assert np.array_equal(np.rot90(im, -int(r)), orig)
    with pytest.raises(ValueError, match=r"\(N, S, S\)"):
        rotation_batch(np.zeros((2, 3, 4)), rng)


def test_dead_leaves_exponent_task():
    from iclr24.kits.image_sources import dead_leaves_exponents

    x, y = dead_leaves_exponents(3, exponents=(2.0, 4.0), size=32, seed=0)
    assert x.shape == (6, 32, 32) and y.tolist() == [0, 0, 0, 1, 1, 1]
    # steeper power law -> smaller discs -> more edges between neighbouring pixels
    edges = (x[:, 1:, :] != x[:, :-1, :]).mean(axis=(1, 2))
    assert edges[3:].mean() > edges[:3].mean()
    with pytest.raises(ValueError, match="n_per_class"):
        dead_leaves_exponents(0)


def test_grey_sample_images():
    from iclr24.kits.image_sources import grey_sample_images

    ims = grey_sample_images()
    assert len(ims) == 2 and all(im.shape == (427, 640) for im in ims)
    assert all(0 <= im.min() and im.max() <= 1 for im in ims)
    ims[0][:] = 0  # a copy: the cached photos are untouched
    assert grey_sample_images()[0].max() > 0
