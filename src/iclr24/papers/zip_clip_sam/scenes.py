"""Procedural scenes of touching objects: the laptop-scale stand-in for COCO.

Zip (ICLR 2024) is evaluated on COCO, which is out of reach here (no downloads). The spec's
analogue is a 64x64 RGB scene with 2-8 instances of three classes placed so that instances of
the same class often touch or overlap slightly, on a textured background:

- ``orange``: a textured orange disc;
- ``leaf``: a green ellipse with a darker vein along its major axis;
- ``brick``: a red rectangle with light mortar lines.

Each object is shaded darker towards its outline (a rim), the cue a boundary-aware feature can
pick up between two touching objects of the same colour; a class-activation map, which is
coarse, merges them. The generator returns the instance masks (visible parts after occlusion)
and classes, used only for evaluation; training sees the multi-hot image labels only.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.ndimage import zoom

__all__ = ["CLASS_NAMES", "SceneSet", "make_scenes", "touching_pairs"]

CLASS_NAMES: tuple[str, ...] = ("orange", "leaf", "brick")

_BASE_COLOUR = {0: (0.95, 0.55, 0.10), 1: (0.22, 0.62, 0.16), 2: (0.72, 0.16, 0.12)}
_MORTAR = np.array([0.85, 0.80, 0.72])


@dataclass(frozen=True)
class SceneSet:
    """A batch of scenes.

    images:  (n, H, W, 3) float32 in [0, 1];
    labels:  (n, C) float32 multi-hot image labels (what training sees);
    masks:   per scene, (m_i, H, W) bool visible instance masks (evaluation only);
    classes: per scene, (m_i,) int class indices into ``CLASS_NAMES``.
    """

    images: np.ndarray
    labels: np.ndarray
    masks: tuple[np.ndarray, ...]
    classes: tuple[np.ndarray, ...]

    def __len__(self) -> int:
        return int(self.images.shape[0])


def _shape(cls: int, size: int, centre: np.ndarray, rng: np.random.Generator
           ) -> tuple[np.ndarray, np.ndarray]:
    """Full (unoccluded) mask and colour layer (H, W, 3) of one object."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float64)
    dy, dx = yy - centre[0], xx - centre[1]
    theta = rng.uniform(0, np.pi)
    c, s = np.cos(theta), np.sin(theta)
    u, v = c * dx + s * dy, -s * dx + c * dy  # object frame (u along the major axis)
    if cls == 0:  # orange: disc
        r = rng.uniform(6.0, 9.0)
        rho = np.sqrt(dx**2 + dy**2) / r
    elif cls == 1:  # leaf: ellipse
        a, b = rng.uniform(8.0, 11.0), rng.uniform(4.5, 6.0)
        rho = np.sqrt((u / a) ** 2 + (v / b) ** 2)
    else:  # brick: rectangle, rho = Chebyshev radius in the box frame
        a, b = rng.uniform(7.0, 10.0), rng.uniform(4.5, 6.0)
        rho = np.maximum(np.abs(u) / a, np.abs(v) / b)
    mask = rho <= 1.0
    colour = np.asarray(_BASE_COLOUR[cls]) + rng.uniform(-0.05, 0.05, 3)
    shade = 1.0 - 0.55 * np.clip(rho, 0, 1) ** 6  # dark rim at the outline
    layer = colour[None, None, :] * shade[..., None]
    grain = rng.normal(0.0, 0.04, (size, size, 1))
    if cls == 0:  # dimpled peel
        layer = layer * (1.0 + grain)
    elif cls == 1:  # darker vein along the major axis
        layer = np.where((np.abs(v) < 0.8)[..., None], layer * 0.6, layer) * (1.0 + 0.5 * grain)
    else:  # mortar: one line along the long axis, cross lines every ~5 px
        mortar = (np.abs(v) < 0.5) | (np.abs(np.mod(u + 2.5, 5.0) - 2.5) < 0.5)
        layer = np.where(mortar[..., None], _MORTAR[None, None, :] * shade[..., None], layer)
    return mask, layer


def _background(size: int, rng: np.random.Generator) -> np.ndarray:
    base = rng.uniform(0.35, 0.6) * np.array([1.0, 0.92, 0.8]) + rng.uniform(-0.05, 0.05, 3)
    coarse = rng.normal(0.0, 0.07, (size // 8, size // 8, 1)) * np.ones(3) \
        + rng.normal(0.0, 0.02, (size // 8, size // 8, 3))
    smooth = zoom(coarse, (size / coarse.shape[0], size / coarse.shape[1], 1), order=1)
    return base[None, None, :] + smooth + rng.normal(0.0, 0.03, (size, size, 3))


def _scene(size: int, rng: np.random.Generator, min_objects: int, max_objects: int,
           p_touch: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    image = _background(size, rng)
    n = int(rng.integers(min_objects, max_objects + 1))
    full_masks: list[np.ndarray] = []
    classes: list[int] = []
    centres: list[np.ndarray] = []
    for _ in range(n):
        for _attempt in range(20):
            if centres and rng.random() < p_touch:  # next to an object of the same class
                j = int(rng.integers(len(centres)))
                cls = classes[j]
                angle = rng.uniform(0, 2 * np.pi)
                dist = rng.uniform(13.0, 17.0)
                centre = centres[j] + dist * np.array([np.sin(angle), np.cos(angle)])
            else:
                cls = int(rng.integers(len(CLASS_NAMES)))
                centre = rng.uniform(8, size - 8, 2)
            if np.any(centre < 7) or np.any(centre > size - 7):
                continue
            mask, layer = _shape(cls, size, centre, rng)
            # keep at least 60% of every earlier object visible, and of this one
            if any((m & mask).sum() > 0.4 * m.sum() for m in full_masks):
                continue
            full_masks.append(mask)
            classes.append(cls)
            centres.append(centre)
            image = np.where(mask[..., None], layer, image)
            break
    visible = np.zeros((len(full_masks), size, size), dtype=bool)
    covered = np.zeros((size, size), dtype=bool)
    for i in range(len(full_masks) - 1, -1, -1):  # later objects occlude earlier ones
        visible[i] = full_masks[i] & ~covered
        covered |= full_masks[i]
    return np.clip(image, 0.0, 1.0).astype(np.float32), visible, np.asarray(classes, dtype=int)


def make_scenes(n: int, seed: int, *, size: int = 64, min_objects: int = 2,
                max_objects: int = 8, p_touch: float = 0.6) -> SceneSet:
    """``n`` scenes drawn from ``np.random.default_rng(seed)`` (same seed, same scenes).

    p_touch: probability that a new object is placed next to an earlier one of the same class
    (centres 13-17 px apart, so they touch or overlap slightly).
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not isinstance(size, int) or size < 32:
        raise ValueError(f"size must be an int >= 32, got {size!r}")
    if not (1 <= min_objects <= max_objects):
        raise ValueError(f"need 1 <= min_objects <= max_objects, got {min_objects}, {max_objects}")
    if not 0.0 <= p_touch <= 1.0:
        raise ValueError(f"p_touch must be in [0, 1], got {p_touch}")
    rng = np.random.default_rng(seed)
    images, labels, masks, classes = [], [], [], []
    for _ in range(n):
        img, vis, cls = _scene(size, rng, min_objects, max_objects, p_touch)
        keep = vis.reshape(len(vis), -1).sum(axis=1) > 0
        vis, cls = vis[keep], cls[keep]
        images.append(img)
        lab = np.zeros(len(CLASS_NAMES), dtype=np.float32)
        lab[cls] = 1.0
        labels.append(lab)
        masks.append(vis)
        classes.append(cls)
    return SceneSet(np.stack(images), np.stack(labels), tuple(masks), tuple(classes))


def touching_pairs(masks: np.ndarray, classes: np.ndarray) -> int:
    """Number of pairs of same-class instances whose visible masks are 4-adjacent.

    masks: (m, H, W) bool; classes: (m,) int.
    """
    count = 0
    for i in range(len(masks)):
        grown = masks[i].copy()
        grown[1:] |= masks[i][:-1]
        grown[:-1] |= masks[i][1:]
        grown[:, 1:] |= masks[i][:, :-1]
        grown[:, :-1] |= masks[i][:, 1:]
        for j in range(i + 1, len(masks)):
            if classes[i] == classes[j] and np.any(grown & masks[j]):
                count += 1
    return count
