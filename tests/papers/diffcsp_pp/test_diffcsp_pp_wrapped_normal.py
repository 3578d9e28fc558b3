"""Wrapped-normal score against autograd of the log density, and its normaliser."""

import math

import numpy as np
import pytest
import torch

from iclr24.papers.diffcsp_pp import (
    WrappedNormalSchedule,
    wrapped_normal_noise_score,
    wrapped_normal_score,
    wrapped_normal_sigma_norm,
)


def _log_density(d, sigma, images=30):
    n = torch.arange(-images, images + 1, dtype=d.dtype)
    return torch.logsumexp(-(d[:, None] + n) ** 2 / (2 * sigma ** 2), dim=1)


@pytest.mark.parametrize("sigma", [0.005, 0.05, 0.3, 0.5])
def test_score_is_gradient_of_log_density(sigma):
    d = torch.linspace(-0.9, 0.9, 37, dtype=torch.float64) * min(1.0, 6 * sigma)
    d.requires_grad_(True)
    (grad,) = torch.autograd.grad(_log_density(d, sigma).sum(), d)
    torch.testing.assert_close(wrapped_normal_score(d.detach(), sigma), grad, rtol=1e-8,
                               atol=1e-8)
    torch.testing.assert_close(wrapped_normal_noise_score(d.detach(), sigma), -grad, rtol=1e-8,
                               atol=1e-8)


def test_score_is_periodic_and_gaussian_for_small_sigma():
    d = torch.rand(50, dtype=torch.float64) - 0.5
    torch.testing.assert_close(wrapped_normal_score(d + 1, 0.2), wrapped_normal_score(d, 0.2))
    small = 0.01 * d
    torch.testing.assert_close(wrapped_normal_score(small, 0.01), -small / 0.01 ** 2)


def test_sigma_norm_matches_monte_carlo_and_limits():
    sig = torch.tensor([0.01, 0.1, 0.5], dtype=torch.float64)
    g = torch.Generator().manual_seed(0)
    z = torch.randn(400_000, 3, generator=g, dtype=torch.float64) * sig
    mc = (wrapped_normal_score(z % 1.0, sig) ** 2).mean(0)
    torch.testing.assert_close(wrapped_normal_sigma_norm(sig), mc, rtol=0.02, atol=0)
    assert wrapped_normal_sigma_norm([0.001]).item() == pytest.approx(1e6, rel=1e-6)


def test_schedule_is_geometric_with_zero_start():
    s = WrappedNormalSchedule(10, 0.005, 0.5)
    assert s.sigmas[0] == 0 and s.sigma_norm[0] == 1
    np.testing.assert_allclose(s.sigmas[1:].numpy(), np.geomspace(0.005, 0.5, 10))
    with pytest.raises(ValueError, match="sigma_begin"):
        WrappedNormalSchedule(10, 0.5, 0.1)
    with pytest.raises(ValueError, match="sigma must be positive"):
        wrapped_normal_score(torch.zeros(2), 0.0)
    assert math.isfinite(float(wrapped_normal_score(torch.tensor([0.49]), 1e-3)))
