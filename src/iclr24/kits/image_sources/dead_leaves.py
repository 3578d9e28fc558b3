"""The dead-leaves model of natural images (Matheron 1968; Lee, Mumford & Huang 2001).

Opaque discs with random centres, grey levels and radii drawn from a power law
p(r) ∝ r^{-alpha} on [r_min, r_max] fall one after another; the first disc to cover a pixel is
the one seen (front-to-back drawing, so the process stops exactly when the canvas is covered).
With alpha = 3 the images are scale invariant and have the ~1/f amplitude spectrum of natural
images, which is why they are a download-free stand-in for photographs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["dead_leaves", "dead_leaves_exponents", "power_law_radii"]


def power_law_radii(rng: np.random.Generator, n: int, alpha: float, r_min: float,
                    r_max: float) -> np.ndarray:
    """n radii from p(r) ∝ r^{-alpha} on [r_min, r_max] by inverting the CDF."""
    u = rng.random(n)
    if abs(alpha - 1.0) < 1e-12:
        return r_min * (r_max / r_min) ** u
    a = 1.0 - alpha  # CDF(r) = (r^a - r_min^a) / (r_max^a - r_min^a)
    return (r_min ** a + u * (r_max ** a - r_min ** a)) ** (1.0 / a)


def _check(size, alpha, r_min, r_max) -> None:
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 2:
        raise ValueError(f"size must be an int >= 2, got {size!r}")
    if not (np.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a positive number, got {alpha!r}")
    if not (0 < r_min < r_max):
        raise ValueError(f"need 0 < r_min < r_max, got r_min={r_min!r}, r_max={r_max!r}")


def dead_leaves(n: int, size: int = 64, *, alpha: float = 3.0, r_min: float = 1.0,
                r_max: float = 20.0, seed: int | np.random.Generator = 0,
                chunk: int = 2048) -> np.ndarray:
    """``n`` grey dead-leaves images, float32 in [0, 1], shape (n, size, size).

    Discs are drawn in chunks of ``chunk``; each disc is rasterised over its bounding box only,
    and a pixel takes the grey level of the first disc (in drawing order) that covers it.
    Centres are uniform over the canvas enlarged by r_max so the borders are not under-covered.
    """
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    _check(size, alpha, r_min, r_max)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    out = np.empty((n, size, size), dtype=np.float32)
    for i in range(n):
        img = np.full(size * size, np.nan, dtype=np.float32)
        while np.isnan(img).any():
            c = rng.uniform(-r_max, size + r_max, size=(chunk, 2))
            r = power_law_radii(rng, chunk, alpha, r_min, r_max)
            g = rng.random(chunk).astype(np.float32)
            side = 2 * np.ceil(r).astype(np.int64) + 2  # bounding box side of each disc
            area = side * side
            disc = np.repeat(np.arange(chunk), area)  # (pairs,), non-decreasing
            k = np.arange(disc.size) - np.repeat(np.cumsum(area) - area, area)
            y = np.floor(c[disc, 0] - r[disc]).astype(np.int64) + k // side[disc]
            x = np.floor(c[disc, 1] - r[disc]).astype(np.int64) + k % side[disc]
            ok = (y >= 0) & (y < size) & (x >= 0) & (x < size)
            ok[ok] = (y[ok] - c[disc[ok], 0]) ** 2 + (x[ok] - c[disc[ok], 1]) ** 2 \
                <= r[disc[ok]] ** 2
            pix, disc = y[ok] * size + x[ok], disc[ok]
            free = np.isnan(img[pix])
            pix, disc = pix[free], disc[free]
            first_pix, first = np.unique(pix, return_index=True)  # front-most disc per pixel
            img[first_pix] = g[disc[first]]
        out[i] = img.reshape(size, size)
    return out


EXPONENTS = tuple(float(a) for a in np.linspace(2.0, 4.0, 8))  # the spec's 8 classes in [2, 4]


def dead_leaves_exponents(n_per_class: int, exponents=EXPONENTS,
                          size: int = 64, seed: int = 0, **kwargs) -> tuple[np.ndarray, np.ndarray]:
    """A supervised dead-leaves task: which radius exponent alpha generated the image.

    Returns images (n_per_class * len(exponents), size, size) and labels (index of alpha).
    Unlike rotation prediction (dead leaves are statistically rotation invariant, so a rotated
    image is indistinguishable from an unrotated one) this task forces scale-sensitive filters.
    """
    if isinstance(n_per_class, bool) or not isinstance(n_per_class, (int, np.integer)) or \
            n_per_class < 1:
        raise ValueError(f"n_per_class must be a positive int, got {n_per_class!r}")
    rng = np.random.default_rng(seed)
    imgs = [dead_leaves(int(n_per_class), size, alpha=float(a), seed=rng, **kwargs)
            for a in exponents]
    labels = np.repeat(np.arange(len(exponents)), n_per_class)
    return np.concatenate(imgs), labels
