"""Seeded grey crops of the two photographs shipped in scikit-learn (china.jpg, flower.jpg),
and scikit-learn's 8x8 digits upsampled, as a supervised sanity set. Nothing is downloaded:
``load_sample_images`` and ``load_digits`` read files inside the installed wheel."""

from __future__ import annotations

import functools

import numpy as np

__all__ = ["digits_images", "grey_sample_images", "sample_image_crops"]


@functools.lru_cache(maxsize=1)
def _grey_photos() -> tuple[np.ndarray, ...]:
    from sklearn.datasets import load_sample_images

    imgs = load_sample_images().images
    # ITU-R BT.601 luma, scaled to [0, 1]
    return tuple((im[..., :3] @ np.array([0.299, 0.587, 0.114]) / 255.0).astype(np.float32)
                 for im in imgs)


def grey_sample_images() -> list[np.ndarray]:
    """The bundled photographs as grey float32 arrays in [0, 1], each (427, 640)."""
    return [im.copy() for im in _grey_photos()]


def sample_image_crops(n: int, size: int = 32, *, seed: int | np.random.Generator = 0
                       ) -> np.ndarray:
    """``n`` random ``size`` x ``size`` grey crops (photo chosen uniformly), (n, size, size)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    photos = _grey_photos()
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not \
            1 <= size <= min(min(p.shape) for p in photos):
        raise ValueError(f"size must be an int in [1, {min(min(p.shape) for p in photos)}], "
                         f"got {size!r}")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    out = np.empty((n, size, size), dtype=np.float32)
    which = rng.integers(0, len(photos), size=n)
    for i, w in enumerate(which):
        p = photos[w]
        y = rng.integers(0, p.shape[0] - size + 1)
        x = rng.integers(0, p.shape[1] - size + 1)
        out[i] = p[y:y + size, x:x + size]
    return out


def digits_images(size: int = 32) -> tuple[np.ndarray, np.ndarray]:
    """sklearn digits (1797 images) upsampled by bilinear zoom (scipy.ndimage.zoom, order 1) to
    ``size`` x ``size``, values in [0, 1]; returns (images (1797, size, size), labels)."""
    from scipy.ndimage import zoom
    from sklearn.datasets import load_digits

    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 8:
        raise ValueError(f"size must be an int >= 8, got {size!r}")
    d = load_digits()
    imgs = d.images.astype(np.float32) / 16.0
    up = zoom(imgs, (1, size / 8, size / 8), order=1)
    return np.clip(up, 0, 1).astype(np.float32), d.target.copy()
