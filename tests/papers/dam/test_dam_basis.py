"""Basis, least-squares start and frequency grid of DAM."""

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.dam import evaluate_basis, init_coefficients, log_frequencies, sinusoid_basis


def test_sinusoid_basis_layout():
    t = torch.tensor([0.0, 0.25, 0.5], dtype=torch.float64)
    phi = sinusoid_basis(t, [1.0, 2.0])
    assert phi.shape == (3, 5)
    assert torch.allclose(phi[1], torch.tensor([1.0, 0.0, math.cos(math.pi / 2), -1.0, 1.0],
                                               dtype=torch.float64), atol=1e-12)
    assert torch.all(phi[:, -1] == 1)
    with pytest.raises(ValueError, match="times must be finite"):
        sinusoid_basis(torch.tensor([0.0, float("nan")]), [1.0])


@settings(max_examples=25)
@given(n=st.integers(5, 40), k=st.integers(1, 6), ridge=st.floats(1e-3, 10.0),
       seed=st.integers(0, 10_000))
def test_init_coefficients_equals_a_direct_ridge_solve(n, k, ridge, seed):
    rng = np.random.default_rng(seed)
    t = -np.sort(rng.uniform(0, 30, n))[::-1]
    v = rng.normal(size=n)
    f = np.geomspace(0.02, 1.0, k)
    got = init_coefficients(t, v, f, ridge=ridge).numpy()
    phi = np.concatenate([np.sin(2 * np.pi * t[:, None] * f), np.cos(2 * np.pi * t[:, None] * f),
                          np.ones((n, 1))], axis=1)
    pen = np.diag(np.r_[np.full(2 * k, ridge), 0.0])  # offset not penalised
    want = np.linalg.solve(phi.T @ phi + pen, phi.T @ v)
    assert np.allclose(got, want, rtol=1e-7, atol=1e-8)


def test_init_coefficients_recovers_a_sinusoid_and_respects_masks():
    t = torch.linspace(-20, 0, 200, dtype=torch.float64)
    f = torch.tensor([0.05, 0.2, 0.4], dtype=torch.float64)
    v = 3.0 * torch.sin(2 * math.pi * 0.2 * t) - 1.5 * torch.cos(2 * math.pi * 0.05 * t) + 2.0
    th = init_coefficients(t, v, f, ridge=1e-9)
    assert torch.allclose(th, torch.tensor([0, 3.0, 0, -1.5, 0, 0, 2.0], dtype=torch.float64),
                          atol=1e-5)
    # at t = 5: 3 sin(2 pi) - 1.5 cos(pi / 2) + 2 = 2
    y5 = evaluate_basis(th, torch.tensor([5.0], dtype=torch.float64), f)
    assert y5.item() == pytest.approx(2.0, abs=1e-4)
    # padded points are ignored; a dropped frequency gets theta = 0
    tp = torch.cat([t, torch.zeros(5, dtype=torch.float64)])
    vp = torch.cat([v, torch.full((5,), 100.0, dtype=torch.float64)])
    mask = torch.cat([torch.ones(200, dtype=torch.bool), torch.zeros(5, dtype=torch.bool)])
    assert torch.allclose(init_coefficients(tp, vp, f, 1e-9, mask=mask), th, atol=1e-6)
    fm = torch.tensor([True, False, True])
    th2 = init_coefficients(t, v, f, 1e-3, freq_mask=fm)
    assert th2[1] == 0 and th2[4] == 0
    with pytest.raises(ValueError, match="ridge must be a positive number"):
        init_coefficients(t, v, f, ridge=0.0)


def test_log_frequencies_drop_above_nyquist():
    f = log_frequencies(64, 1 / 96, 1000.0)
    assert f.size == 64 and np.all(np.diff(f) > 0)
    kept = log_frequencies(64, 1 / 96, 1000.0, finest_step=1.0)  # daily data: nu <= 0.5/day
    assert kept.max() <= 0.5 and kept.size < 64
    assert np.array_equal(kept, f[f <= 0.5])
    with pytest.raises(ValueError, match="min_period < max_period"):
        log_frequencies(8, 10.0, 1.0)
