"""Self-supervised 4-way rotation prediction (Gidaris et al. 2018): labels for free."""

from __future__ import annotations

import numpy as np

__all__ = ["random_crops", "rotation_batch"]


def random_crops(images: np.ndarray, n: int, size: int, rng: np.random.Generator,
                 return_index: bool = False):
    """``n`` random ``size`` x ``size`` crops of random images from ``images`` (N, H, W); with
    ``return_index`` also the index of the image each crop came from (to carry labels)."""
    imgs = np.asarray(images)
    if imgs.ndim != 3:
        raise ValueError(f"images must have shape (N, H, W), got {imgs.shape}")
    if not 1 <= size <= min(imgs.shape[1:]):
        raise ValueError(f"size must be in [1, {min(imgs.shape[1:])}], got {size!r}")
    which = rng.integers(0, imgs.shape[0], n)
    ys = rng.integers(0, imgs.shape[1] - size + 1, n)
    xs = rng.integers(0, imgs.shape[2] - size + 1, n)
    crops = np.stack([imgs[w, y:y + size, x:x + size] for w, y, x in zip(which, ys, xs)])
    return (crops, which) if return_index else crops


def rotation_batch(images: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Rotate each square image by k*90 degrees, k uniform in {0,1,2,3}; returns (rotated, k)."""
    imgs = np.asarray(images)
    if imgs.ndim != 3 or imgs.shape[1] != imgs.shape[2]:
        raise ValueError(f"images must have shape (N, S, S), got {imgs.shape}")
    k = rng.integers(0, 4, imgs.shape[0])
    out = np.stack([np.rot90(im, int(r)) for im, r in zip(imgs, k)])
    return np.ascontiguousarray(out), k
