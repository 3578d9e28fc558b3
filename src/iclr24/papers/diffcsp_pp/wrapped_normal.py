"""Score matching of fractional coordinates on the torus [0, 1)^3 (DiffCSP, Jiao et al. 2023,
Sec. 3.3; kept unchanged by DiffCSP++).

The forward process adds Gaussian noise to fractional coordinates and wraps them,
x_t = (x_0 + sigma_t eps) mod 1, so x_t | x_0 follows the wrapped normal

    p_sigma(d) = sum_{n in Z} N(d + n; 0, sigma^2),       d = x_t - x_0.

Its score has a closed form (truncated to |n| <= ``images``, 10 as in the official code):

    grad_d log p_sigma(d) = - sum_n (d + n)/sigma^2 exp(-(d + n)^2 / 2 sigma^2)
                              / sum_n exp(-(d + n)^2 / 2 sigma^2).

The network is trained on the *negative* score (it points along the noise, like DDPM's eps),
divided by sqrt(lambda_t), lambda_t = E_d[|grad log p_sigma_t(d)|^2] per coordinate
(``sigma_norm``), so every step has a target of unit scale. The official code estimates
lambda_t by Monte Carlo (10,000 draws); here it is Gauss-Hermite quadrature of the same
expectation (deterministic, exact to ~1e-8 for the default schedule).

The noise levels are geometric, sigma_t = sigma_begin (sigma_end / sigma_begin)^((t-1)/(T-1))
for t = 1..T (official defaults sigma_begin = 0.005, sigma_end = 0.5), with sigma_0 = 0.
"""

from __future__ import annotations

import math

import numpy as np
import torch

__all__ = ["WrappedNormalSchedule", "wrapped_normal_noise_score", "wrapped_normal_score",
           "wrapped_normal_sigma_norm"]


def _check_sigma(sigma: torch.Tensor) -> None:
    if torch.any(sigma <= 0):
        raise ValueError("sigma must be positive")


def wrapped_normal_score(d: torch.Tensor, sigma: torch.Tensor | float,
                         images: int = 10) -> torch.Tensor:
    """grad_d log p_sigma(d) of the unit-period wrapped normal (elementwise, any shape;
    ``sigma`` broadcastable to ``d``)."""
    s = torch.as_tensor(sigma, dtype=d.dtype, device=d.device)
    _check_sigma(s)
    if not isinstance(images, int) or images < 0:
        raise ValueError(f"images must be a non-negative int, got {images!r}")
    n = torch.arange(-images, images + 1, dtype=d.dtype, device=d.device)
    shifted = d.unsqueeze(-1) + n  # (..., 2 images + 1)
    s = s.unsqueeze(-1)
    logw = -shifted ** 2 / (2 * s ** 2)
    w = torch.softmax(logw, dim=-1)  # exp(-(d+n)^2/2s^2) / sum_n, computed stably
    return -(w * shifted).sum(-1) / s.squeeze(-1) ** 2


def wrapped_normal_noise_score(d: torch.Tensor, sigma: torch.Tensor | float,
                               images: int = 10) -> torch.Tensor:
    """-grad_d log p_sigma(d): the direction of the noise (the official ``d_log_p_wrapped_normal``
    returns this sign)."""
    return -wrapped_normal_score(d, sigma, images)


def wrapped_normal_sigma_norm(sigma: torch.Tensor | np.ndarray, nodes: int = 64,
                              images: int = 10) -> torch.Tensor:
    """lambda(sigma) = E_{z ~ N(0,1)} [grad log p_sigma(sigma z)^2] per coordinate (the score is
    1-periodic, so wrapping the draw does not change it), by ``nodes``-point Gauss-Hermite."""
    s = torch.as_tensor(np.asarray(sigma, dtype=np.float64)).flatten()
    _check_sigma(s)
    x, w = np.polynomial.hermite_e.hermegauss(nodes)  # weight exp(-z^2/2)
    z = torch.as_tensor(x)
    wt = torch.as_tensor(w / math.sqrt(2 * math.pi))
    score = wrapped_normal_score(s[:, None] * z[None, :], s[:, None], images)
    return (wt * score ** 2).sum(-1)


class WrappedNormalSchedule:
    """sigma_t and lambda_t for t = 0..T (index 0: sigma = 0, lambda = 1, as in the official
    SigmaScheduler)."""

    def __init__(self, steps: int, sigma_begin: float = 0.005, sigma_end: float = 0.5) -> None:
        if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
            raise ValueError(f"steps must be a positive int, got {steps!r}")
        if not 0 < sigma_begin < sigma_end:
            raise ValueError(f"need 0 < sigma_begin < sigma_end, got {sigma_begin}, "
                             f"{sigma_end}")
        self.steps, self.sigma_begin, self.sigma_end = steps, float(sigma_begin), float(sigma_end)
        geo = np.exp(np.linspace(math.log(sigma_begin), math.log(sigma_end), steps))
        self.sigmas = torch.cat([torch.zeros(1, dtype=torch.float64), torch.as_tensor(geo)])
        self.sigma_norm = torch.cat([torch.ones(1, dtype=torch.float64),
                                     wrapped_normal_sigma_norm(geo)])
