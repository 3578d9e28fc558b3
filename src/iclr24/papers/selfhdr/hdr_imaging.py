"""The HDR imaging model of SelfHDR (Sec. 3 of arXiv 2310.01840): linearisation, the mu-law
tone map, the well-exposedness tent, the color component (merge of aligned exposures) and the
global alignment used to build it, plus the PSNR metrics of the paper's tables.

Conventions. Three LDR frames (short, reference, long) with values in [0, 1]; exposure times are
relative to the reference, so ``times[1] == 1`` and ``H_i = I_i^gamma / t_i`` puts every frame on
the reference's radiance scale. With t = (1/4, 1, 4) radiance runs up to 1/t_short = 4 where the
short frame is unsaturated. (Kalantari's data normalises to the *shortest* frame instead; the
two differ by a constant factor of the HDR values.)

What differs from the paper. The paper aligns with optical flow (Liu's flow, the FSHDR recipe);
here :func:`align_to_reference` estimates one global translation per frame by phase correlation
(scikit-image), so anything that moves on its own is not compensated and ghosts in the color
component, as flow failures do on real captures. Optical flow and real HDR captures (Kalantari's
dataset) are out of reach here.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

__all__ = [
    "GAMMA",
    "MU",
    "align_to_reference",
    "ldr_to_hdr",
    "merge_aligned",
    "mu_tonemap",
    "psnr",
    "psnr_mu",
    "tent_weight",
    "triangle_weights",
    "validate_times",
]

GAMMA = 2.2
MU = 5000.0

Array = np.ndarray | torch.Tensor


def _is_array(x) -> bool:
    return isinstance(x, (np.ndarray, torch.Tensor))


def _check_ldr(name: str, x: Array) -> None:
    if not _is_array(x):
        raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(x).__name__}")
    if x.size == 0 if isinstance(x, np.ndarray) else x.numel() == 0:
        raise ValueError(f"{name} must not be empty")
    lo, hi = float(x.min()), float(x.max())
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo < 0.0 or hi > 1.0:
        raise ValueError(f"{name} must hold LDR values in [0, 1], got range [{lo:.4g}, {hi:.4g}]")


def validate_times(times: Sequence[float], ref: int = 1) -> tuple[float, ...]:
    """Check exposure times: three positive finite numbers, ``times[ref] == 1`` (times are
    relative to the reference frame). Returns them as floats."""
    try:
        ts = tuple(float(t) for t in times)
    except (TypeError, ValueError):
        raise TypeError(f"times must be a sequence of 3 numbers, got {times!r}") from None
    if len(ts) != 3:
        raise ValueError(f"times must hold 3 exposure times (short, reference, long), got {len(ts)}")
    if not all(math.isfinite(t) and t > 0 for t in ts):
        raise ValueError(f"exposure times must be finite and > 0, got {ts}")
    if ref != 1:
        raise ValueError(f"ref must be 1 (the middle exposure is the reference), got {ref!r}")
    if ts[ref] != 1.0:
        raise ValueError(f"times must be relative to the reference: times[{ref}] must be 1, "
                         f"got {ts[ref]} (divide all times by it)")
    if not ts[0] < ts[1] < ts[2]:
        raise ValueError(f"times must be increasing (short, reference, long), got {ts}")
    return ts


def ldr_to_hdr(ldr: Array, t: float, gamma: float = GAMMA) -> Array:
    """Linearise an LDR frame onto the reference radiance scale: ``H = I^gamma / t``.

    ldr: any shape, values in [0, 1] (numpy or torch, returned in kind); t: the frame's exposure
    time relative to the reference (> 0); gamma: the camera response exponent (2.2)."""
    _check_ldr("ldr", ldr)
    if isinstance(t, bool) or not isinstance(t, (int, float, np.floating)) or not \
            (math.isfinite(t) and t > 0):
        raise ValueError(f"t (exposure time) must be a finite number > 0, got {t!r}")
    if not (isinstance(gamma, (int, float)) and gamma > 0):
        raise ValueError(f"gamma must be > 0, got {gamma!r}")
    return ldr ** gamma / t  # H_i = I_i^gamma / t_i


def mu_tonemap(x: Array, mu: float = MU) -> Array:
    """The mu-law range compressor ``T(x) = log(1 + mu x) / log(1 + mu)`` (mu = 5000).

    x: linear HDR values >= 0 of any shape (numpy or torch; differentiable for torch)."""
    if not _is_array(x):
        raise TypeError(f"x must be a numpy array or torch tensor, got {type(x).__name__}")
    if not mu > 0:
        raise ValueError(f"mu must be > 0, got {mu!r}")
    lo = float(x.detach().min() if isinstance(x, torch.Tensor) else x.min())
    if lo < 0:
        raise ValueError(f"x must be linear HDR values >= 0, got min {lo:.4g}")
    log1p = torch.log1p if isinstance(x, torch.Tensor) else np.log1p
    return log1p(mu * x) / math.log1p(mu)  # T(x) = log(1 + mu x) / log(1 + mu)


def tent_weight(ldr: Array) -> Array:
    """Well-exposedness ``Lambda(I) = 2I`` for I < 0.5, ``2 - 2I`` otherwise (per channel).

    ldr: the reference LDR frame (not its HDR), any shape, values in [0, 1]."""
    _check_ldr("ldr", ldr)
    where = torch.where if isinstance(ldr, torch.Tensor) else np.where
    return where(ldr < 0.5, 2 * ldr, 2 - 2 * ldr)  # Lambda(I)


def triangle_weights(ldr_ref: Array, tau: float = 0.5) -> tuple[Array, Array, Array]:
    """Reference-driven merge weights (Kalantari-style triangles) from the reference LDR:
    ``w_short = clip((I - (1 - tau)) / tau)`` (over-exposed reference), ``w_long =
    clip((tau - I) / tau)`` (under-exposed), ``w_ref = 1 - w_short - w_long``; with tau = 0.5,
    w_ref is :func:`tent_weight`. Returns (w_short, w_ref, w_long), each shaped like ldr_ref."""
    if not 0 < tau <= 0.5:
        raise ValueError(f"tau must be in (0, 0.5], got {tau!r}")
    clip = (lambda a: a.clamp(0, 1)) if isinstance(ldr_ref, torch.Tensor) else \
        (lambda a: np.clip(a, 0, 1))
    w_short = clip((ldr_ref - (1 - tau)) / tau)
    w_long = clip((tau - ldr_ref) / tau)
    return w_short, 1 - w_short - w_long, w_long


def _check_frames(name: str, ldrs: Array) -> None:
    if not _is_array(ldrs):
        raise TypeError(f"{name} must be a numpy array or torch tensor, got {type(ldrs).__name__}")
    if ldrs.ndim not in (4, 5) or ldrs.shape[-4] != 3:
        raise ValueError(f"{name} must have shape (3, C, H, W) or (B, 3, C, H, W) (three frames: "
                         f"short, reference, long), got {tuple(ldrs.shape)}")
    _check_ldr(name, ldrs)


def merge_aligned(ldrs: Array, times: Sequence[float], ref: int = 1, tau: float = 0.5,
                  weights: Callable[[Array, float], tuple[Array, Array, Array]] = triangle_weights,
                  gamma: float = GAMMA) -> Array:
    """The color component: ``Y_color = sum_i w_i(I_ref) H_i`` over aligned frames.

    ldrs: aligned LDR frames (3, C, H, W) or (B, 3, C, H, W), short/reference/long, in [0, 1];
    times: their exposure times with ``times[1] == 1``; weights: ``(I_ref, tau) -> (w_short,
    w_ref, w_long)`` (the official repository ships Y_color precomputed, so the exact merge
    weights are a parameter; default :func:`triangle_weights`). Returns (C, H, W) or (B, C, H, W)."""
    _check_frames("ldrs", ldrs)
    ts = validate_times(times, ref)
    hdrs = [ldr_to_hdr(ldrs[..., i, :, :, :], ts[i], gamma) for i in range(3)]
    w = weights(ldrs[..., ref, :, :, :], tau)
    return w[0] * hdrs[0] + w[1] * hdrs[1] + w[2] * hdrs[2]  # Y_color = sum_i w_i H_i


def align_to_reference(ldrs: np.ndarray, times: Sequence[float], method: str = "phase",
                       ref: int = 1, gamma: float = GAMMA) -> tuple[np.ndarray, np.ndarray]:
    """Align the non-reference frames of one scene to the reference by a global translation.

    ldrs: (3, C, H, W) numpy LDR frames in [0, 1]. The reference and the frame are re-exposed
    to the longer of their two exposure times and clipped (``clip(H t)^(1/gamma)``), so they
    saturate in the same places, then
    :func:`skimage.registration.phase_cross_correlation` on the channel mean gives an integer
    shift, applied with edge replication. Only ``method="phase"`` exists (optical flow, the
    paper's choice, is out of scope). Returns (aligned (3, C, H, W), shifts (3, 2) in (dy, dx)
    that were applied to each frame; the reference row is 0)."""
    from scipy.ndimage import shift as nd_shift
    from skimage.registration import phase_cross_correlation

    if not isinstance(ldrs, np.ndarray):
        raise TypeError(f"ldrs must be a numpy array (3, C, H, W), got {type(ldrs).__name__}")
    if ldrs.ndim != 4:
        raise ValueError(f"ldrs must have shape (3, C, H, W) (one scene), got {ldrs.shape}")
    _check_frames("ldrs", ldrs)
    if method != "phase":
        raise ValueError(f"method must be 'phase' (global phase correlation), got {method!r}")
    ts = validate_times(times, ref)
    ldrs = np.asarray(ldrs, dtype=np.float64)
    aligned = ldrs.copy()
    shifts = np.zeros((3, 2))
    for i in range(3):
        if i == ref:
            continue
        t_view = max(ts[i], ts[ref])  # the longer exposure of the pair: both saturate alike
        ref_view, frame_view = (
            np.clip(ldrs[j] ** gamma / ts[j] * t_view, 0, 1).mean(axis=0) ** (1 / gamma)
            for j in (ref, i))
        s, _, _ = phase_cross_correlation(ref_view, frame_view, normalization="phase")
        shifts[i] = s
        if np.any(s != 0):
            aligned[i] = nd_shift(ldrs[i], (0, s[0], s[1]), order=0, mode="nearest")
    return aligned, shifts


def psnr(pred: Array, target: Array, peak: float = 1.0, mask: Array | None = None) -> float:
    """``10 log10(peak^2 / MSE)`` over all elements (or the elements where ``mask`` is true;
    a (..., H, W) mask broadcasts over channels). The official evaluation uses peak 1."""
    p = torch.as_tensor(pred, dtype=torch.float64)
    t = torch.as_tensor(target, dtype=torch.float64)
    if p.shape != t.shape:
        raise ValueError(f"pred and target must have the same shape, got {tuple(p.shape)} and "
                         f"{tuple(t.shape)}")
    err = (p - t) ** 2
    if mask is not None:
        m = torch.as_tensor(mask, dtype=torch.bool)
        if m.ndim == err.ndim - 1:
            m = m.unsqueeze(-3)
        m = m.expand_as(err)
        if not m.any():
            raise ValueError("mask selects no pixel")
        err = err[m]
    return float(10 * torch.log10(peak ** 2 / err.mean().clamp_min(1e-20)))


def psnr_mu(pred: Array, target: Array, mask: Array | None = None, mu: float = MU) -> float:
    """PSNR-mu: :func:`psnr` (peak 1) between the tone-mapped images ``T(pred)``, ``T(target)``."""
    return psnr(mu_tonemap(torch.as_tensor(pred, dtype=torch.float64), mu),
                mu_tonemap(torch.as_tensor(target, dtype=torch.float64), mu), 1.0, mask)
