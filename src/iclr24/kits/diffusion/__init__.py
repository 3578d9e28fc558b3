"""Gaussian diffusion for the generative papers (omnicontrol, nma_protein_diffusion, the
lattice of diffcsp_pp).

- ``schedules.py``: ``beta_schedule("linear" | "cosine", T)``.
- ``gaussian.py``: ``GaussianDiffusion`` (``q_sample``, ``q_posterior``, ``x0_from_eps`` /
  ``eps_from_x0``, ``reverse_step``, ``sample`` with a posterior-mean hook and a noise scale
  eta, ``loss``, ``timesteps``) and ``ReverseStep``.
- ``centre_of_mass.py``: ``com_free_noise`` and ``remove_com`` (masked) for point clouds.

Usage::

    from iclr24.kits.diffusion import GaussianDiffusion, com_free_noise
    diff = GaussianDiffusion("cosine", 100, predict="x0")
    loss = diff.loss(model, x0, generator=g)                 # model(x_t, t) -> x0 estimate
    x = diff.sample(model, (16, 48, 3), generator=g, eta=0.4, noise_fn=com_free_noise,
                    mean_hook=lambda mean, t, var, x0, xt: mean - var * grad_of_cost(mean))
"""

from .centre_of_mass import com_free_noise, remove_com
from .gaussian import GaussianDiffusion, ReverseStep
from .schedules import SCHEDULES, beta_schedule

__all__ = ["SCHEDULES", "GaussianDiffusion", "ReverseStep", "beta_schedule", "com_free_noise",
           "remove_com"]
