"""Stage II of Chameleon: each challenge point's membership neighbourhood (official
``find_neighbors.py`` / ``InfluenceMeasure``).

For R augmentations of x, every zero-poison shadow model gives the scaled logit
phi = log(p_y + eps) - log(1 - p_y + eps); per augmentation, Gaussians are fitted to the phi of the
IN shadows and of the OUT shadows, and compared with the same fits for x itself. An augmentation
is kept iff KL(ref_in || aug_in) <= tau and KL(ref_out || aug_out) <= tau: queries whose
membership signal looks like x's own. The kept set is fixed once per point (fixed rng) and
reused for every target model.

The official augmentations are torchvision AutoAugment (CIFAR) or flip/blur/crop (GTSRB); on 8x8
digits we use random +-1 pixel shifts plus Gaussian pixel noise (the spec's analogue).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

__all__ = ["gaussian_kl", "membership_neighbourhood", "scaled_logit", "shift_noise_augment"]

SCALED_LOGIT_EPS = 1e-7


def scaled_logit(p: np.ndarray) -> np.ndarray:
    """phi(p) = log(p + 1e-7) - log(1 - p + 1e-7), p clipped to [0, 1]."""
    p = np.clip(np.asarray(p, dtype=np.float64), 0.0, 1.0)
    return np.log(p + SCALED_LOGIT_EPS) - np.log(1.0 - p + SCALED_LOGIT_EPS)


def gaussian_kl(mu1: np.ndarray, sd1: np.ndarray, mu2: np.ndarray, sd2: np.ndarray
                ) -> np.ndarray:
    """KL(N(mu1, sd1^2) || N(mu2, sd2^2)) = log(sd2/sd1) + (sd1^2 + (mu1-mu2)^2)/(2 sd2^2) - 1/2."""
    return np.log(sd2 / sd1) + (sd1**2 + (mu1 - mu2) ** 2) / (2 * sd2**2) - 0.5


def shift_noise_augment(x: np.ndarray, n: int, rng: np.random.Generator, *,
                        image_shape: tuple[int, int] = (8, 8), max_shift: int = 1,
                        noise_sd: float = 0.05) -> np.ndarray:
    """``n`` augmentations of a flattened image ``x`` (h*w,): a random shift by up to
    ``max_shift`` pixels in each direction (zero fill), plus N(0, noise_sd^2) noise, clipped to
    [0, 1]. Returns (n, h*w)."""
    h, w = image_shape
    x = np.asarray(x, dtype=np.float64)
    if x.shape != (h * w,):
        raise ValueError(f"x must be a flattened {h}x{w} image of shape ({h * w},), got {x.shape}")
    img = x.reshape(h, w)
    pad = np.pad(img, max_shift)
    out = np.empty((n, h * w))
    shifts = rng.integers(-max_shift, max_shift + 1, size=(n, 2))
    for r, (dy, dx) in enumerate(shifts):
        out[r] = pad[max_shift + dy: max_shift + dy + h, max_shift + dx: max_shift + dx + w].ravel()
    return np.clip(out + rng.normal(0.0, noise_sd, out.shape), 0.0, 1.0)


def membership_neighbourhood(shadow_predict_proba: Sequence[Callable[[np.ndarray], np.ndarray]],
                             in_mask: np.ndarray, x: np.ndarray, y: int,
                             augment: Callable[[np.ndarray, int, np.random.Generator], np.ndarray],
                             rng: np.random.Generator, *, n_aug: int = 128,
                             kl_threshold: float = 0.75) -> tuple[np.ndarray, np.ndarray]:
    """The membership neighbourhood of one challenge point (x, y).

    shadow_predict_proba: m zero-poison shadow models (X -> (n, C) probabilities);
    in_mask: (m,) bool, the shadows where (x, y) is IN (both IN and OUT must occur);
    augment(x, n, rng) -> (n, d). Returns ``(kept, augmentations)``: indices into the
    ``(n_aug, d)`` augmentations of those kept (possibly empty; the attack then queries x).
    """
    in_mask = np.asarray(in_mask, dtype=bool)
    if in_mask.shape != (len(shadow_predict_proba),) or in_mask.all() or not in_mask.any():
        raise ValueError("in_mask must be (m,) bool with both IN and OUT shadows")
    if not kl_threshold >= 0:
        raise ValueError(f"kl_threshold must be >= 0, got {kl_threshold!r}")
    augs = augment(np.asarray(x), n_aug, rng)
    queries = np.concatenate([np.asarray(x, dtype=augs.dtype)[None], augs])
    phi = np.stack([scaled_logit(np.asarray(f(queries))[:, y]) for f in shadow_predict_proba])
    keep = np.ones(n_aug, dtype=bool)
    for side in (in_mask, ~in_mask):
        mu = phi[side].mean(0)
        sd = phi[side].std(0, ddof=1) + 1e-5  # official: torch.std (unbiased) + 1e-5
        kl = gaussian_kl(mu[0], sd[0], mu[1:], sd[1:])  # KL(ref || aug)
        keep &= kl <= kl_threshold
    return np.flatnonzero(keep), augs
