"""DAM's output space: a fixed basis of sinusoids (+ an offset), and its least-squares start.

    f(t) = sum_k [ theta^s_k sin(2 pi nu_k t) + theta^c_k cos(2 pi nu_k t) ] + theta_0     (DAM Sec. 3)

t is real time (days) relative to the forecast origin, so one basis serves every sampling
resolution. theta is laid out as [theta^s_1..K, theta^c_1..K, theta_0] (2K + 1 numbers).

theta_0 initialisation (paper App. E): a ridge-regularised least-squares fit of the basis to
the context, (Phi^T Phi + lambda I) theta = Phi^T v. Frequencies above the Nyquist rate of the
densest resolution alias and make that solve ill-posed, so :func:`log_frequencies` drops them.
The paper uses a few hundred frequencies (437 is recalled, not confirmed); here K is a parameter.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = [
    "evaluate_basis",
    "init_coefficients",
    "log_frequencies",
    "nyquist_mask",
    "sinusoid_basis",
]


def log_frequencies(n: int, min_period: float, max_period: float,
                    finest_step: float | None = None) -> np.ndarray:
    """``n`` log-spaced frequencies (cycles/day) for periods in [min_period, max_period] days,
    dropping those above the Nyquist rate 1 / (2 * finest_step) of the densest resolution.

    Returns (K,) ascending, K <= n."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    if not (0 < min_period < max_period and math.isfinite(max_period)):
        raise ValueError(f"need 0 < min_period < max_period, got {min_period!r}, {max_period!r}")
    freqs = np.geomspace(1.0 / max_period, 1.0 / min_period, int(n))
    if finest_step is not None:
        if not (finest_step > 0):
            raise ValueError(f"finest_step must be positive, got {finest_step!r}")
        freqs = freqs[freqs <= 1.0 / (2.0 * finest_step) * (1 + 1e-12)]
        if freqs.size == 0:
            raise ValueError("every frequency lies above the Nyquist rate of finest_step")
    return freqs


def nyquist_mask(freqs: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """(B, K) bool: which frequencies a series sampled every ``step`` days (B,) can resolve."""
    return freqs[None, :] <= 1.0 / (2.0 * step[:, None]) * (1 + 1e-9)


def _as_tensor(x, name: str, like: torch.Tensor | None = None) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        x = torch.as_tensor(np.asarray(x, dtype=np.float64))
    if like is not None:
        x = x.to(dtype=like.dtype, device=like.device)
    if not torch.is_floating_point(x):
        x = x.double()
    if not torch.all(torch.isfinite(x)):
        raise ValueError(f"{name} must be finite (found NaN or inf)")
    return x


def sinusoid_basis(times, freqs) -> torch.Tensor:
    """Phi: times (..., n) days, freqs (K,) cycles/day -> (..., n, 2K + 1) = [sin, cos, 1]."""
    t = _as_tensor(times, "times")
    f = _as_tensor(freqs, "freqs", like=t)
    if f.ndim != 1:
        raise ValueError(f"freqs must be 1-D, got shape {tuple(f.shape)}")
    arg = 2 * math.pi * t[..., None] * f  # 2 pi nu_k t
    return torch.cat([torch.sin(arg), torch.cos(arg), torch.ones_like(t)[..., None]], dim=-1)


def init_coefficients(t_ctx, v_ctx, freqs, ridge: float = 1e-3, mask=None,
                      freq_mask=None) -> torch.Tensor:
    """theta_0 = argmin ||Phi theta - v||^2 + ridge ||theta||^2 over the context (App. E).

    t_ctx, v_ctx: (..., n); mask: (..., n) bool (True = a real point; padding is ignored);
    freq_mask: (..., K) bool (False = frequency unusable for this series, its theta fixed to 0).
    Returns (..., 2K + 1). The offset is not penalised, so a constant context gives theta_0 = v.
    """
    if not (isinstance(ridge, (int, float)) and not isinstance(ridge, bool) and ridge > 0):
        raise ValueError(f"ridge must be a positive number, got {ridge!r}")
    t = _as_tensor(t_ctx, "t_ctx")
    v = _as_tensor(v_ctx, "v_ctx", like=t)
    if t.shape != v.shape:
        raise ValueError(f"t_ctx {tuple(t.shape)} and v_ctx {tuple(v.shape)} differ in shape")
    phi = sinusoid_basis(t, freqs)  # (..., n, P)
    w = torch.ones_like(t) if mask is None else torch.as_tensor(mask).to(t)
    phi_w = phi * w[..., None]
    pen = torch.full((phi.shape[-1],), float(ridge), dtype=t.dtype, device=t.device)
    pen[-1] = 0.0  # the offset is not shrunk
    if freq_mask is not None:
        fm = torch.as_tensor(freq_mask).to(device=t.device, dtype=torch.bool)
        keep = torch.cat([fm, fm, torch.ones_like(fm[..., :1])], dim=-1).to(t)  # (..., P)
        phi_w = phi_w * keep[..., None, :]
        pen = pen + (1.0 - keep)  # a unit penalty pins dropped coefficients to 0
    gram = phi_w.transpose(-1, -2) @ phi_w + torch.diag_embed(pen.expand(*phi.shape[:-2], -1))
    rhs = phi_w.transpose(-1, -2) @ (v * w)[..., None]
    return torch.linalg.solve(gram, rhs)[..., 0]  # (Phi^T Phi + lambda I) theta = Phi^T v


def evaluate_basis(theta: torch.Tensor, t_query, freqs) -> torch.Tensor:
    """f(t) = Phi(t) theta: theta (..., 2K + 1), t_query (..., m) -> (..., m)."""
    t = _as_tensor(t_query, "t_query", like=theta)
    phi = sinusoid_basis(t, _as_tensor(freqs, "freqs", like=theta))
    if phi.shape[-1] != theta.shape[-1]:
        raise ValueError(f"theta has {theta.shape[-1]} coefficients, the basis {phi.shape[-1]}")
    return (phi @ theta[..., None])[..., 0]
