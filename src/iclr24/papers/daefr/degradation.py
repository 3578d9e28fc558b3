"""The synthetic degradation that makes DAEFR's (LQ, HQ) training pairs (paper Sec. 4.1, the
GFPGAN / CodeFormer model):

    y = JPEG_q( (x * k_sigma) downsample_r + n_delta ) upsample_r

blur with a Gaussian kernel k_sigma, bilinear downsampling by r, additive Gaussian noise of
standard deviation delta, JPEG compression at quality q (Pillow, on the 8-bit image), bilinear
upsampling back to the input size. Every image draws its own (sigma, r, delta, q) from the ranges
of a :class:`DegradationConfig` with the caller's ``torch.Generator``.

What differs from the official configs (kept in :data:`OFFICIAL_RANGES` for reference): images
here are 16x16 digits, not 512x512 faces, so the ranges are shrunk to what a 16-pixel image
survives (sigma <= 2, r <= 4); kernels are isotropic only (the official mix half iso, half
aniso); r >= 1 (the official range starts at 0.8, a mild upsampling, which this API refuses so
that a scale < 1 is always a user error); noise is on the [0, 1] intensity scale (the official
[0, 20] is on the 0-255 scale).
"""

from __future__ import annotations

import io
import math
import warnings
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F

__all__ = ["OFFICIAL_RANGES", "DegradationConfig", "check_images", "degrade"]

OFFICIAL_RANGES = {
    # configs/Association_stage.yaml and configs/DAEFR.yaml of LIAGM/DAEFR (512x512 faces)
    "association": {"blur_sigma": (0.1, 10.0), "downsample": (0.8, 8.0), "noise_255": (0.0, 20.0),
                    "jpeg_quality": (60, 100), "kernel_size": (19, 20)},
    "final": {"blur_sigma": (0.1, 15.0), "downsample": (0.8, 30.0), "noise_255": (0.0, 20.0),
              "jpeg_quality": (30, 100), "kernel_size": (19, 20)},
}


def _check_range(name: str, rng: tuple[float, float], low: float, high: float = math.inf, *,
                 strict_low: bool = False) -> None:
    if (not isinstance(rng, tuple) or len(rng) != 2
            or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in rng)):
        raise TypeError(f"{name} must be a (low, high) tuple of numbers, got {rng!r}")
    lo, hi = rng
    bad_low = lo <= low if strict_low else lo < low
    if bad_low or hi > high or lo > hi:
        bound = f"> {low}" if strict_low else f">= {low}"
        raise ValueError(f"{name} must satisfy {bound}, <= {high} and low <= high, got {rng!r}")


@dataclass(frozen=True)
class DegradationConfig:
    """Ranges the per-image degradation parameters are drawn from (uniformly).

    sigma:        Gaussian blur std in pixels, > 0.
    scale:        downsampling factor r, >= 1.
    noise:        additive Gaussian noise std on the [0, 1] intensity scale, >= 0.
    jpeg_quality: JPEG quality (integers in 1..100).
    jpeg_prob:    probability that an image is JPEG-compressed.

    The defaults are the laptop analogue of the official association stage for 16x16 digits;
    :meth:`severe` is the preset that exposes the HQ/LQ domain gap (r = 4, sigma >= 1.2).
    """

    sigma: tuple[float, float] = (0.5, 2.0)
    scale: tuple[float, float] = (2.0, 4.0)
    noise: tuple[float, float] = (0.0, 0.075)
    jpeg_quality: tuple[int, int] = (30, 90)
    jpeg_prob: float = 0.5

    def __post_init__(self) -> None:
        _check_range("sigma", self.sigma, 0.0, strict_low=True)
        _check_range("scale", self.scale, 1.0)
        _check_range("noise", self.noise, 0.0)
        _check_range("jpeg_quality", self.jpeg_quality, 1, 100)
        if not all(isinstance(q, int) for q in self.jpeg_quality):
            raise TypeError(f"jpeg_quality must hold ints, got {self.jpeg_quality!r}")
        if not isinstance(self.jpeg_prob, (int, float)) or not 0 <= self.jpeg_prob <= 1:
            raise ValueError(f"jpeg_prob must be in [0, 1], got {self.jpeg_prob!r}")

    @classmethod
    def severe(cls) -> DegradationConfig:
        """r = 4 and sigma in [1.2, 2]: little of a 16x16 digit survives."""
        return cls(sigma=(1.2, 2.0), scale=(4.0, 4.0))


def check_images(x: torch.Tensor, name: str = "x") -> None:
    """Raise unless ``x`` is a float (B, C, H, W) tensor, C in {1, 3}, H, W >= 4, values in
    [-1, 1]; warn (``UserWarning``) when no value is negative and some are positive: images in
    [0, 1] would pass the range check but be read as mid-grey to white (issue 38), so the
    caller is told to rescale with ``x * 2 - 1`` (a genuinely bright [-1, 1] batch may ignore
    the warning)."""
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        raise TypeError(f"{name} must be a floating-point torch.Tensor")
    if x.dim() != 4 or x.shape[1] not in (1, 3) or x.shape[2] < 4 or x.shape[3] < 4:
        raise ValueError(f"{name} must have shape (B, C, H, W) with C in (1, 3) and H, W >= 4, "
                         f"got {tuple(x.shape)}")
    if x.numel() and (not torch.isfinite(x).all() or x.min() < -1 - 1e-5 or x.max() > 1 + 1e-5):
        raise ValueError(f"{name} must hold finite values in [-1, 1] (images scaled as in the "
                         f"paper), got range [{float(x.min()):.3g}, {float(x.max()):.3g}]")
    if x.numel() and float(x.min()) >= 0 and float(x.max()) > 0:
        warnings.warn(f"{name} has no negative value (range [{float(x.min()):.3g}, "
                      f"{float(x.max()):.3g}]): it looks like images in [0, 1], but DAEFR reads "
                      "images in [-1, 1]; rescale with x * 2 - 1", UserWarning, stacklevel=2)


def _uniform(gen: torch.Generator, n: int, rng: tuple[float, float]) -> torch.Tensor:
    lo, hi = rng
    return lo + (hi - lo) * torch.rand(n, generator=gen, dtype=torch.float64)


def _jpeg(img: np.ndarray, quality: int) -> np.ndarray:
    """(C, H, W) float image in [0, 1] -> the same after an 8-bit JPEG round trip (Pillow)."""
    from PIL import Image

    u8 = np.round(np.clip(img, 0, 1) * 255).astype(np.uint8)
    pil = Image.fromarray(u8[0]) if u8.shape[0] == 1 else Image.fromarray(u8.transpose(1, 2, 0))
    buf = io.BytesIO()
    pil.save(buf, format="JPEG", quality=int(quality))
    out = np.asarray(Image.open(io.BytesIO(buf.getvalue())), dtype=np.float32) / 255.0
    return out[None] if out.ndim == 2 else out.transpose(2, 0, 1)


def degrade(x: torch.Tensor, cfg: DegradationConfig | None = None,
            generator: torch.Generator | None = None) -> torch.Tensor:
    """LQ copy of the HQ images ``x`` (B, C, H, W) in [-1, 1]; same shape, range and device.

    Each image draws sigma, r, noise std, whether to JPEG and the quality from ``cfg`` with
    ``generator`` (a CPU ``torch.Generator``; default: seed 0).
    """
    from kornia.filters import gaussian_blur2d

    cfg = DegradationConfig() if cfg is None else cfg
    if not isinstance(cfg, DegradationConfig):
        raise TypeError(f"cfg must be a DegradationConfig, got {type(cfg).__name__}")
    check_images(x)
    if generator is None:
        generator = torch.Generator().manual_seed(0)
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    b, _, h, w = x.shape
    sigma = _uniform(generator, b, cfg.sigma)
    scale = _uniform(generator, b, cfg.scale)
    noise = _uniform(generator, b, cfg.noise)
    use_jpeg = torch.rand(b, generator=generator, dtype=torch.float64) < cfg.jpeg_prob
    quality = torch.randint(cfg.jpeg_quality[0], cfg.jpeg_quality[1] + 1, (b,),
                            generator=generator)
    u = (x.detach().float().cpu() + 1) / 2  # [-1, 1] -> [0, 1]
    k = 2 * math.ceil(3 * cfg.sigma[1]) + 1
    sig = sigma.float()[:, None].repeat(1, 2)
    blurred = gaussian_blur2d(u, (k, k), sig, border_type="reflect")  # x * k_sigma
    out = torch.empty_like(u)
    for i in range(b):
        size = (max(1, round(h / float(scale[i]))), max(1, round(w / float(scale[i]))))
        small = F.interpolate(blurred[i:i + 1], size=size, mode="bilinear",
                              align_corners=False)  # downsample_r
        eps = torch.randn(small.shape, generator=generator)
        small = (small + float(noise[i]) * eps).clamp(0, 1)  # + n_delta
        if use_jpeg[i]:
            small = torch.from_numpy(_jpeg(small[0].numpy(), int(quality[i])))[None]  # JPEG_q
        out[i:i + 1] = F.interpolate(small, size=(h, w), mode="bilinear",
                                     align_corners=False)  # upsample_r
    return (out.clamp(0, 1) * 2 - 1).to(dtype=x.dtype, device=x.device)
