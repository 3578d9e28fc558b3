"""Synthetic dynamic HDR scenes with ground truth, built from scikit-learn's two bundled photos.

Real multi-exposure captures with HDR ground truth (Kalantari's SIG17 set and the other real
datasets of the paper) are out of reach offline; this generator is the laptop analogue:

- radiance R = (photo / 255)^2.2 x a smooth illumination field exp(U[-1, 3]) (a coarse random
  grid, bilinearly upsampled), plus 1-3 bright Gaussian "lights", scaled so the brightest pixel
  is 0.9 (times relative to the short frame, t_short = 1: the short frame is just unsaturated
  there, and the ground truth lies in [0, 1] as Kalantari's labels do) and the median lands
  near the reference exposure's mid-tones;
- motion: a global camera shift of 1-3 px for each non-reference frame and a textured sprite (a
  crop of the other photo with its own illumination) displaced 3-10 px between frames;
- LDR formation ``I_i = quantise8(clip((R_i t_i)^(1/2.2) + N(0, 0.01^2)))`` with t = (1, 4, 16)
  (EV 0, +2, +4);
- ground truth: the reference frame's radiance on the short frame's scale; the motion mask is
  the union of the sprite's footprints (reference coordinates) over the three frames, where the
  color component ghosts.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .hdr_imaging import GAMMA, validate_times

__all__ = ["MAX_CAMERA_SHIFT", "HDRScenes", "make_hdr_scenes"]

MAX_CAMERA_SHIFT = 3  # pixels, per axis
_SPRITE_MOVE = (3, 10)
_DOWNSAMPLE = 3  # area-average the photos so a crop holds more texture


@dataclass(frozen=True)
class HDRScenes:
    """A batch of dynamic multi-exposure scenes.

    ldrs: (N, 3, 3, H, W) float32 LDR frames (short, reference, long; RGB) in [0, 1];
    gt: (N, 3, H, W) float32 reference-frame radiance in [0, 0.9] (short frame's scale);
    motion_mask: (N, H, W) bool; camera_shifts: (N, 3, 2) integer (dy, dx) camera offset of
    each frame (reference 0); times: the exposure times (short = 1)."""

    ldrs: np.ndarray
    gt: np.ndarray
    motion_mask: np.ndarray
    camera_shifts: np.ndarray
    times: tuple[float, float, float]

    def __len__(self) -> int:
        return int(self.ldrs.shape[0])


@functools.lru_cache(maxsize=1)
def _colour_albedos() -> tuple[np.ndarray, ...]:
    from sklearn.datasets import load_sample_images

    out = []
    for im in load_sample_images().images:
        lin = (im[..., :3].astype(np.float32) / 255.0) ** GAMMA
        h, w = (lin.shape[0] // _DOWNSAMPLE) * _DOWNSAMPLE, (lin.shape[1] // _DOWNSAMPLE) * _DOWNSAMPLE
        lin = lin[:h, :w].reshape(h // _DOWNSAMPLE, _DOWNSAMPLE, w // _DOWNSAMPLE, _DOWNSAMPLE, 3)
        out.append(lin.mean(axis=(1, 3)).transpose(2, 0, 1))  # (3, 142, 213) linear albedo
    return tuple(out)


def _smooth_field(rng: np.random.Generator, size: int, lo: float, hi: float) -> np.ndarray:
    from scipy.ndimage import zoom

    coarse = rng.uniform(lo, hi, size=(3, 3))
    return zoom(coarse, size / 3, order=1)[:size, :size]


def _crop(rng: np.random.Generator, photo: np.ndarray, h: int, w: int) -> np.ndarray:
    y = rng.integers(0, photo.shape[1] - h + 1)
    x = rng.integers(0, photo.shape[2] - w + 1)
    return photo[:, y:y + h, x:x + w]


def _random_offset(rng: np.random.Generator, lo: int, hi: int) -> np.ndarray:
    while True:
        d = rng.integers(-hi, hi + 1, size=2)
        if lo <= np.abs(d).max() <= hi:
            return d


def _scene(rng: np.random.Generator, size: int, times: tuple[float, ...], noise: float,
           side: int):
    photos = _colour_albedos()
    margin = MAX_CAMERA_SHIFT + 1
    canvas = size + 2 * margin
    which = int(rng.integers(0, 2))
    background = _crop(rng, photos[which], canvas, canvas)
    radiance = background * np.exp(_smooth_field(rng, canvas, -1.0, 3.0))[None]
    yy, xx = np.mgrid[:canvas, :canvas]
    for _ in range(int(rng.integers(1, 4))):
        cy, cx = rng.uniform(0, canvas, size=2)
        r = rng.uniform(1.5, 0.12 * size)
        peak = rng.uniform(20, 50) * np.median(radiance)
        radiance = radiance + peak * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))[None]
    sprite = _crop(rng, photos[1 - which], side, side) * np.exp(rng.uniform(0.0, 2.0))
    ref_pos = rng.integers(margin, margin + size - side + 1, size=2)
    positions = [ref_pos + _random_offset(rng, *_SPRITE_MOVE), ref_pos,
                 ref_pos + _random_offset(rng, *_SPRITE_MOVE)]
    cams = [_random_offset(rng, 1, MAX_CAMERA_SHIFT), np.zeros(2, int),
            _random_offset(rng, 1, MAX_CAMERA_SHIFT)]
    frames, mask = [], np.zeros((size, size), bool)
    for pos, cam in zip(positions, cams):
        scene = radiance.copy()
        y0, x0 = np.clip(pos, 0, canvas - side)
        scene[:, y0:y0 + side, x0:x0 + side] = sprite
        oy, ox = margin + cam
        frames.append(scene[:, oy:oy + size, ox:ox + size])
        my0, mx0 = y0 - margin, x0 - margin  # footprint in reference coordinates
        mask[max(my0, 0):max(my0 + side, 0), max(mx0, 0):max(mx0 + side, 0)] = True
    frames = np.stack(frames)
    # brightest pixel -> 0.9 / t_short (= 0.9); median near the reference's mid-tones
    frames *= min(0.25 / times[1] / max(np.median(frames[1]), 1e-9), 0.9 / times[0] / frames.max())
    ldrs = []
    for i, t in enumerate(times):
        ldr = np.clip(frames[i] * t, 0, 1) ** (1 / GAMMA) + rng.normal(0, noise, frames[i].shape)
        ldrs.append(np.round(np.clip(ldr, 0, 1) * 255) / 255)  # quantise to 8 bits
    return np.stack(ldrs), frames[1], mask, np.stack(cams)


def make_hdr_scenes(n: int, size: int = 32, *, seed: int | np.random.Generator = 0,
                    times: tuple[float, float, float] = (1.0, 4.0, 16.0),
                    noise: float = 0.01, sprite_size: int | None = None) -> HDRScenes:
    """``n`` seeded dynamic scenes of ``size`` x ``size`` pixels (see the module docstring);
    ``sprite_size`` is the moving sprite's side (default ``size // 4``)."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or not 16 <= size <= 256:
        raise ValueError(f"size must be an int in [16, 256], got {size!r}")
    if not 0 <= noise < 0.5:
        raise ValueError(f"noise must be in [0, 0.5), got {noise!r}")
    side = max(4, size // 4) if sprite_size is None else sprite_size
    if isinstance(side, bool) or not isinstance(side, (int, np.integer)) or not 1 <= side <= size:
        raise ValueError(f"sprite_size must be an int in [1, size], got {sprite_size!r}")
    ts = validate_times(times)
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    parts = [_scene(rng, int(size), ts, noise, int(side)) for _ in range(int(n))]
    return HDRScenes(
        ldrs=np.stack([p[0] for p in parts]).astype(np.float32),
        gt=np.stack([p[1] for p in parts]).astype(np.float32),
        motion_mask=np.stack([p[2] for p in parts]),
        camera_shifts=np.stack([p[3] for p in parts]),
        times=ts,
    )
