"""Towards Non-Asymptotic Convergence for Diffusion-Based Generative Models (Li, Wei, Chen & Chi,
ICLR 2024; arXiv 2306.09251): rates of the deterministic (ODE-type) and stochastic (DDPM-type)
samplers with exact scores, measured as exact total variation in 1-D.

How the code maps to the paper:

- ``schedule``: the analysed noise schedule (beta_1 = T^{-c0}, geometric growth capped at
  c1 log T / T) -> :func:`li_schedule`;
- ``mixtures``: Gaussian-mixture targets, whose noised laws q_t and scores are closed-form ->
  :class:`GaussianMixture` (``noised``, ``score``, ``log_prob``, ``sample``);
- ``samplers``: the two update rules of Sec. 2 -> :func:`sample_ode`, :func:`sample_ddpm` (both
  noise placements);
- ``densities``: exact 1-D laws of the outputs (push-forward of the ODE map; grid propagation with
  a spectral Gaussian for DDPM), :func:`tv_1d`, :func:`gaussian_kl`;
- ``rate_experiments``: TV(q_1, p_1) against T, and controlled score errors.

Out of reach here: the theorems' dependence on the dimension d (d^2 for the ODE sampler, d^3 in
KL for DDPM) - exact TV is only computable for d <= 2 - and the general data distributions they
cover; we test one target family (1-D mixtures) with exact or controlled-error scores. The
theorems are upper bounds; a measured rate steeper than the bound is consistent with them.
"""

from .densities import gaussian_kl, propagate_density_1d, pushforward_density_1d, tv_1d
from .mixtures import GaussianMixture
from .rate_experiments import density_tv_sweep, ode_tv_sweep, perturbed_score
from .samplers import sample_ddpm, sample_ode
from .schedule import alpha_bars, li_schedule

__all__ = [
    "GaussianMixture",
    "alpha_bars",
    "density_tv_sweep",
    "gaussian_kl",
    "li_schedule",
    "ode_tv_sweep",
    "perturbed_score",
    "propagate_density_1d",
    "pushforward_density_1d",
    "sample_ddpm",
    "sample_ode",
    "tv_1d",
]
