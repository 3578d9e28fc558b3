"""The procedural world of the laptop-scale reproduction (spec "Laptop-scale reproduction").

Small RGB scenes with three known concept axes, so every generation can be scored against the
truth instead of by CLIP score or a human study:

- category: a shape in :data:`SHAPES` (circle, square, triangle, diamond, cross);
- color: a continuous hue in [0, 1) (fully saturated); language only names it coarsely;
- material: a texture in :data:`TEXTURES` (solid, stripes, dots, checker), drawn as a darker
  shade of the same hue inside the shape.

A small position jitter and a noisy dark background make the images non-trivial. Images are
``(n, 3, size, size)`` float tensors in [0, 1]; models that want [-1, 1] convert explicitly.
The words of the world's language are here too: 24 fine hue words (what the captions of the
stand-in text-to-image model may say), 6 coarse colour words (what the stand-in VQA answers,
as BLIP-2 answers in plain colour words) and one generic fallback word per axis.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = [
    "AXES",
    "COARSE_COLORS",
    "FINE_HUES",
    "GENERIC_WORDS",
    "SHAPES",
    "TEXTURES",
    "SceneBatch",
    "circular_hue_error_deg",
    "coarse_color_index",
    "fine_hue_index",
    "render_scenes",
    "sample_scenes",
]

SHAPES = ("circle", "square", "triangle", "diamond", "cross")
TEXTURES = ("solid", "stripes", "dots", "checker")
COARSE_COLORS = ("red", "yellow", "green", "cyan", "blue", "magenta")  # 60-degree bins
FINE_HUES = tuple(f"hue{i:02d}" for i in range(24))  # 15-degree bins
AXES = ("category", "color", "material")
GENERIC_WORDS = {"category": "object", "color": "color", "material": "material"}


@dataclass(frozen=True)
class SceneBatch:
    """Images and their true axis values.

    images: (n, 3, size, size) in [0, 1]; shape, texture: (n,) int64 indices into
    :data:`SHAPES` / :data:`TEXTURES`; hue: (n,) float64 in [0, 1).
    """

    images: torch.Tensor
    shape: np.ndarray
    hue: np.ndarray
    texture: np.ndarray

    def __len__(self) -> int:
        return len(self.shape)


def coarse_color_index(hue: np.ndarray) -> np.ndarray:
    """Index into :data:`COARSE_COLORS` of the nearest coarse colour (bins centred on 0, 60, ...
    degrees)."""
    return (np.floor(np.asarray(hue) * 6 + 0.5).astype(np.int64)) % 6


def fine_hue_index(hue: np.ndarray) -> np.ndarray:
    """Index into :data:`FINE_HUES` of the nearest fine hue word (15-degree bins)."""
    return (np.floor(np.asarray(hue) * 24 + 0.5).astype(np.int64)) % 24


def circular_hue_error_deg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| on the hue circle, in degrees (0..180); a, b are hues in [0, 1)."""
    d = np.abs(np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)) % 1.0
    return 360.0 * np.minimum(d, 1.0 - d)


def _hue_to_rgb(hue: np.ndarray) -> np.ndarray:
    """Fully saturated, full-value HSV -> RGB, (n,) -> (n, 3)."""
    h6 = (np.asarray(hue)[:, None] * 6.0 + np.array([0.0, 4.0, 2.0])[None]) % 6.0
    return np.clip(np.abs(h6 - 3.0) - 1.0, 0.0, 1.0)[:, [0, 1, 2]]


def _shape_masks(shape: np.ndarray, size: int, cx: np.ndarray, cy: np.ndarray) -> np.ndarray:
    grid = (np.arange(size) + 0.5) / size * 2 - 1  # pixel centres in [-1, 1]
    yy, xx = np.meshgrid(grid, grid, indexing="ij")
    x = xx[None] - cx[:, None, None]
    y = yy[None] - cy[:, None, None]
    r = 0.72
    masks = np.stack([
        x ** 2 + y ** 2 <= r ** 2,                                        # circle
        (np.abs(x) <= 0.62) & (np.abs(y) <= 0.62),                        # square
        (y <= 0.62) & (y >= -0.75 + 2.2 * np.abs(x)),                     # triangle
        np.abs(x) + np.abs(y) <= 0.82,                                    # diamond
        ((np.abs(x) <= 0.26) | (np.abs(y) <= 0.26)) & (np.maximum(np.abs(x), np.abs(y)) <= 0.8),
    ], axis=1)  # (n, 5, size, size)
    return masks[np.arange(len(shape)), shape]


def _texture_masks(texture: np.ndarray, size: int) -> np.ndarray:
    """1 where the texture shows its darker shade. Periods are in pixels (2 px at every size)."""
    yy, xx = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    patterns = np.stack([
        np.zeros((size, size), bool),                 # solid
        (yy % 2) == 0,                                # stripes (horizontal)
        ((yy % 3) == 1) & ((xx % 3) == 1),            # dots
        ((yy + xx) % 2) == 0,                         # checker
    ])
    return patterns[texture]


def render_scenes(shape: np.ndarray, hue: np.ndarray, texture: np.ndarray, size: int,
                  rng: np.random.Generator) -> torch.Tensor:
    """Render scenes with the given axis values. Returns (n, 3, size, size) float32 in [0, 1].

    shape, texture: (n,) indices; hue: (n,) in [0, 1); rng draws jitter and background noise.
    """
    shape = np.asarray(shape, dtype=np.int64)
    texture = np.asarray(texture, dtype=np.int64)
    hue = np.asarray(hue, dtype=np.float64)
    n = len(shape)
    if not (len(hue) == len(texture) == n):
        raise ValueError("shape, hue and texture must have the same length")
    if not isinstance(size, int) or size < 8 or size % 4:
        raise ValueError(f"size must be a multiple of 4 that is >= 8, got {size!r}")
    if n and (shape.min() < 0 or shape.max() >= len(SHAPES)):
        raise ValueError(f"shape indices must be in [0, {len(SHAPES)})")
    if n and (texture.min() < 0 or texture.max() >= len(TEXTURES)):
        raise ValueError(f"texture indices must be in [0, {len(TEXTURES)})")
    jitter = 1.0 / size  # up to half a pixel each way (a pixel is 2 / size in the [-1, 1] frame)
    cx = rng.uniform(-jitter, jitter, n)
    cy = rng.uniform(-jitter, jitter, n)
    inside = _shape_masks(shape, size, cx, cy)[:, None]            # (n, 1, s, s)
    dark = _texture_masks(texture, size)[:, None]                  # (n, 1, s, s)
    rgb = _hue_to_rgb(hue)[:, :, None, None]                       # (n, 3, 1, 1)
    shade = np.where(dark, 0.4, 1.0)                               # darker shade of the hue
    background = 0.12 + 0.06 * rng.standard_normal((n, 1, size, size))
    img = np.where(inside, rgb * shade, background)
    img = img + 0.02 * rng.standard_normal(img.shape)
    return torch.from_numpy(np.clip(img, 0.0, 1.0).astype(np.float32))


def sample_scenes(n: int, size: int, rng: np.random.Generator) -> SceneBatch:
    """n scenes with uniformly drawn shape, texture and hue."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    shape = rng.integers(0, len(SHAPES), n)
    texture = rng.integers(0, len(TEXTURES), n)
    hue = rng.random(n)
    return SceneBatch(render_scenes(shape, hue, texture, size, rng), shape, hue, texture)
