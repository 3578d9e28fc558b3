"""The HDR imaging model of SelfHDR (Sec. 3 of arXiv 2310.01840): linearisation, the mu-law
tone map, the well-exposedness tent, the color component (merge of aligned exposures) and the
global alignment used to build it, plus the PSNR metrics of the paper's tables.

Conventions (the field's, as Kalantari's SIG17 data and the official loaders use them). Three LDR
frames (short, reference, long) with values in [0, 1]; exposure times are relative to the
*shortest* frame, ``times = 2^EV`` with the short frame at 0 EV, so ``times[0] == 1`` (e.g.
t = (1, 4, 16) for EV 0, +2, +4) and ``H_i = I_i^gamma / t_i`` puts every frame on the short
frame's radiance scale: HDR values lie in [0, 1] wherever the short frame is unsaturated, which
is the range the mu-law (mu = 5000) and the official PSNR-mu / PSNR-l (peak 1) assume.
(Issue 38: the first version normalised to the reference, ``times[1] == 1``, which put the
ground truth at up to 3.6 and changed PSNR-mu by about a dB for the same outputs.)

What differs from the paper. The paper aligns with optical flow (Liu's flow, the FSHDR recipe);
here :func:`align_to_reference` estimates one global integer translation per frame, so anything
that moves on its own is not compensated and ghosts in the color component, as flow failures
do on real captures. The default estimator (``method="search"``) tries every translation within
``max_shift`` pixels and keeps the one with the smallest mean absolute difference between the
exposure-matched frames (a robust block match in the spirit of Ward's bitmap alignment for
bracketed exposures). Issue 38 found scikit-image's phase correlation (``method="phase"``, the
first version's default, still available) wrong on more than half of the 32 px test scenes:
whitened spectra of small crops are dominated by the wrap-around edges, the moving sprite and
the saturated blobs. Optical flow and real HDR captures are out of reach here (but see
:mod:`.hdr_io` for reading Kalantari's scenes).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence

import numpy as np
import torch

__all__ = [
    "ALIGN_METHODS",
    "GAMMA",
    "MU",
    "align_dense",
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
    """Check exposure times: three finite numbers > 0, increasing (short, reference, long),
    relative to the shortest frame (``times[0] == 1``, the convention of Kalantari's data:
    ``2^EV`` with the short frame at 0 EV). Returns them as floats."""
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
    if not ts[0] < ts[1] < ts[2]:
        raise ValueError(f"times must be increasing (short, reference, long), got {ts}")
    if ts[0] != 1.0:
        raise ValueError(f"times must be relative to the shortest exposure: times[0] must be 1, "
                         f"got {ts[0]} (divide all times by it; HDR values then lie in [0, 1])")
    return ts


def ldr_to_hdr(ldr: Array, t: float, gamma: float = GAMMA) -> Array:
    """Linearise an LDR frame onto the short frame's radiance scale: ``H = I^gamma / t``.

    ldr: any shape, values in [0, 1] (numpy or torch, returned in kind); t: the frame's exposure
    time relative to the shortest frame (> 0); gamma: the camera response exponent (2.2)."""
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
    times: their exposure times with ``times[0] == 1``; weights: ``(I_ref, tau) -> (w_short,
    w_ref, w_long)`` (the official repository ships Y_color precomputed, so the exact merge
    weights are a parameter; default :func:`triangle_weights`). Returns (C, H, W) or (B, C, H, W)."""
    _check_frames("ldrs", ldrs)
    ts = validate_times(times, ref)
    hdrs = [ldr_to_hdr(ldrs[..., i, :, :, :], ts[i], gamma) for i in range(3)]
    w = weights(ldrs[..., ref, :, :, :], tau)
    return w[0] * hdrs[0] + w[1] * hdrs[1] + w[2] * hdrs[2]  # Y_color = sum_i w_i H_i


ALIGN_METHODS = ("search", "phase")


def _exposure_matched(ldr: np.ndarray, t: float, t_view: float, gamma: float) -> np.ndarray:
    """The frame as if exposed for ``t_view``: ``clip(I^gamma / t * t_view)^(1/gamma)``."""
    return np.clip(ldr ** gamma / t * t_view, 0, 1) ** (1 / gamma)


def _search_shift(ref_view: np.ndarray, frame_view: np.ndarray, max_shift: int) -> np.ndarray:
    """The integer (dy, dx), |dy|, |dx| <= max_shift, that minimises the mean absolute difference
    between ``ref_view`` and ``frame_view`` moved by (dy, dx) over their overlap (C, H, W views);
    ties go to the smaller shift."""
    h, w = ref_view.shape[-2:]
    best, best_cost = (0, 0), np.inf
    span = range(-max_shift, max_shift + 1)
    for dy, dx in sorted(itertools.product(span, span), key=lambda d: (abs(d[0]) + abs(d[1]), d)):
        # moved[y, x] = frame[y - dy, x - dx]: compare on the rows/columns both cover
        r = ref_view[:, max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)]
        f = frame_view[:, max(-dy, 0):h + min(-dy, 0), max(-dx, 0):w + min(-dx, 0)]
        cost = float(np.abs(r - f).mean())
        if cost < best_cost:
            best, best_cost = (dy, dx), cost
    return np.array(best, dtype=np.float64)


def align_to_reference(ldrs: np.ndarray, times: Sequence[float], method: str = "search",
                       ref: int = 1, gamma: float = GAMMA, max_shift: int = 4
                       ) -> tuple[np.ndarray, np.ndarray]:
    """Align the non-reference frames of one scene to the reference by a global translation.

    ldrs: (3, C, H, W) numpy LDR frames in [0, 1]. The reference and the frame are re-exposed
    to the longer of their two exposure times and clipped (``clip(H t)^(1/gamma)``), so they
    saturate in the same places. ``method="search"`` (default) tries every integer shift with
    |dy|, |dx| <= ``max_shift`` and keeps the one with the smallest mean absolute difference
    over the overlap (robust to a small object moving on its own); ``method="phase"`` is
    :func:`skimage.registration.phase_cross_correlation` on the channel mean (unbounded, less
    reliable on small crops; ``max_shift`` unused). The shift is applied with edge replication.
    Optical flow, the paper's choice, is out of scope. Returns (aligned (3, C, H, W), shifts
    (3, 2) in (dy, dx) that were applied to each frame; the reference row is 0)."""
    from scipy.ndimage import shift as nd_shift

    if not isinstance(ldrs, np.ndarray):
        raise TypeError(f"ldrs must be a numpy array (3, C, H, W), got {type(ldrs).__name__}")
    if ldrs.ndim != 4:
        raise ValueError(f"ldrs must have shape (3, C, H, W) (one scene), got {ldrs.shape}")
    _check_frames("ldrs", ldrs)
    if method not in ALIGN_METHODS:
        raise ValueError(f"method must be one of {ALIGN_METHODS}, got {method!r}")
    ts = validate_times(times, ref)
    h, w = ldrs.shape[-2:]
    if isinstance(max_shift, bool) or not isinstance(max_shift, (int, np.integer)) or \
            not 0 <= max_shift < min(h, w) // 2:
        raise ValueError(f"max_shift must be an int in [0, {min(h, w) // 2}) for {h}x{w} "
                         f"frames, got {max_shift!r}")
    ldrs = np.asarray(ldrs, dtype=np.float64)
    aligned = ldrs.copy()
    shifts = np.zeros((3, 2))
    for i in range(3):
        if i == ref:
            continue
        t_view = max(ts[i], ts[ref])  # the longer exposure of the pair: both saturate alike
        ref_view, frame_view = (_exposure_matched(ldrs[j], ts[j], t_view, gamma)
                                for j in (ref, i))
        if method == "search":
            s = _search_shift(ref_view, frame_view, int(max_shift))
        else:
            from skimage.registration import phase_cross_correlation

            s, _, _ = phase_cross_correlation(ref_view.mean(axis=0), frame_view.mean(axis=0),
                                              normalization="phase")
        shifts[i] = s
        if np.any(s != 0):
            aligned[i] = nd_shift(ldrs[i], (0, s[0], s[1]), order=0, mode="nearest")
    return aligned, shifts


def _moved(frame: np.ndarray, dy: np.ndarray | int, dx: np.ndarray | int) -> np.ndarray:
    """``moved[:, y, x] = frame[:, y - dy, x - dx]`` with edge replication; ``dy``/``dx`` are
    integers or per-pixel (H, W) integer maps."""
    h, w = frame.shape[-2:]
    yy, xx = np.mgrid[:h, :w]
    return frame[:, np.clip(yy - dy, 0, h - 1), np.clip(xx - dx, 0, w - 1)]


def align_dense(ldrs: np.ndarray, times: Sequence[float], *, radius: int = 10, window: int = 3,
                penalty: float = 0.002, max_shift: int = 4, gamma: float = GAMMA
                ) -> tuple[np.ndarray, np.ndarray]:
    """Align the non-reference frames of one scene to the reference with a dense integer flow
    (block matching), the laptop stand-in for the optical flow the paper uses.

    First the global translation of :func:`align_to_reference` (search within ``max_shift``);
    then, for every pixel, the residual shift d with |d|_inf <= ``radius`` that minimises the
    mean absolute difference of the exposure-matched frames over a ``window`` x ``window``
    block plus ``penalty`` * |d|_inf (a small-motion prior, in units of the LDR difference).
    Like optical flow it follows an object that moves on its own; like optical flow it fails
    where the content has no match (occlusions, the background the object uncovered) and where
    a frame is saturated, and the color component ghosts there. The defaults were chosen, with
    no network trained, as the settings whose merge scores best on the training scenes of the
    claims (issue 38). Cost: (2 radius + 1)^2 window sums per frame.

    ldrs: (3, C, H, W) numpy LDR frames in [0, 1]. Returns (aligned (3, C, H, W), flow
    (3, 2, H, W): the integer (dy, dx) applied at each pixel, ``aligned[i][:, y, x] =
    ldrs[i][:, y - dy, x - dx]`` (edge replicated); the reference's flow is 0)."""
    from scipy.ndimage import uniform_filter

    if not isinstance(ldrs, np.ndarray):
        raise TypeError(f"ldrs must be a numpy array (3, C, H, W), got {type(ldrs).__name__}")
    if ldrs.ndim != 4:
        raise ValueError(f"ldrs must have shape (3, C, H, W) (one scene), got {ldrs.shape}")
    _check_frames("ldrs", ldrs)
    for name, v, lo in (("radius", radius, 0), ("window", window, 1)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{name} must be an int >= {lo}, got {v!r}")
    if window % 2 == 0:
        raise ValueError(f"window must be odd (a block centred on the pixel), got {window}")
    if isinstance(penalty, bool) or not isinstance(penalty, (int, float)) or \
            not (math.isfinite(penalty) and penalty >= 0):
        raise ValueError(f"penalty must be a finite number >= 0, got {penalty!r}")
    ts = validate_times(times)
    _, global_shifts = align_to_reference(ldrs, ts, max_shift=max_shift, gamma=gamma)
    ldrs = np.asarray(ldrs, dtype=np.float64)
    h, w = ldrs.shape[-2:]
    aligned = ldrs.copy()
    flow = np.zeros((3, 2, h, w), dtype=np.int64)
    span = range(-int(radius), int(radius) + 1)
    for i in (0, 2):
        t_view = max(ts[i], ts[1])  # the longer exposure of the pair: both saturate alike
        ref_view = _exposure_matched(ldrs[1], ts[1], t_view, gamma)
        frame_view = _exposure_matched(ldrs[i], ts[i], t_view, gamma)
        gy, gx = (int(v) for v in global_shifts[i])
        pad = int(radius) + int(max_shift)
        padded = np.pad(frame_view, ((0, 0), (pad, pad), (pad, pad)), mode="edge")
        best = np.full((h, w), np.inf)
        for dy, dx in sorted(itertools.product(span, span), key=lambda d: (max(map(abs, d)), d)):
            y0, x0 = pad - gy - dy, pad - gx - dx  # padded[:, y0:y0+h, x0:x0+w] = moved frame
            diff = np.abs(ref_view - padded[:, y0:y0 + h, x0:x0 + w]).mean(axis=0)
            cost = uniform_filter(diff, size=int(window), mode="nearest") \
                + penalty * max(abs(dy), abs(dx))  # block cost + small-motion prior
            better = cost < best  # ties keep the smaller shift (visited first)
            best[better] = cost[better]
            flow[i, 0][better], flow[i, 1][better] = gy + dy, gx + dx
        aligned[i] = _moved(ldrs[i], flow[i, 0], flow[i, 1])
    return aligned, flow


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
