import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.diffusion import (
    GaussianDiffusion,
    beta_schedule,
    com_free_noise,
    remove_com,
)


def test_schedules_closed_forms():
    lin = beta_schedule("linear", 1000)
    assert lin[0] == pytest.approx(1e-4) and lin[-1] == pytest.approx(0.02)
    assert beta_schedule("linear", 100)[-1] == pytest.approx(0.2)  # scaled by 1000 / T
    cos = beta_schedule("cosine", 50)
    abar = torch.cumprod(1 - cos, 0)

    def f(t):
        return math.cos((t / 50 + 0.008) / 1.008 * math.pi / 2) ** 2

    for t in (0, 10, 30, 48):  # abar_t = f(t + 1) / f(0) where no beta was clipped
        assert float(abar[t]) == pytest.approx(f(t + 1) / f(0), rel=1e-9)
    assert float(cos.max()) <= 0.999
    with pytest.raises(ValueError, match="schedule"):
        beta_schedule("sigmoid", 10)
    with pytest.raises(ValueError, match="steps"):
        beta_schedule("linear", 0)


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 99), st.sampled_from(["linear", "cosine"]))
def test_posterior_equals_gaussian_conditioning(t, name):
    d = GaussianDiffusion(name, 100)
    # joint of (x_{t-1}, x_t) given x0 = 0 from the chain, then condition on x_t
    ab_prev = float(d.abar[t - 1])
    a, b = float(d.alphas[t]), float(d.betas[t])
    s = 1 - ab_prev                      # Var(x_{t-1} | x0)
    cov, vt = math.sqrt(a) * s, a * s + b
    x0, xt = torch.tensor([[0.7]], dtype=torch.float64), torch.tensor([[-1.3]],
                                                                       dtype=torch.float64)
    mu_prev, mu_t = math.sqrt(ab_prev) * 0.7, math.sqrt(float(d.abar[t])) * 0.7
    ref_mean = mu_prev + cov / vt * (-1.3 - mu_t)
    ref_var = s - cov ** 2 / vt
    mean, var = d.q_posterior(x0, xt, t)
    assert float(mean) == pytest.approx(ref_mean, rel=1e-9)
    assert float(var) == pytest.approx(ref_var, rel=1e-9)
    assert math.isclose(vt, 1 - float(d.abar[t]), rel_tol=1e-12)  # marginal consistency


def test_x0_eps_round_trip_and_q_sample_moments():
    d = GaussianDiffusion("cosine", 40)
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(6, 3, 4, generator=g, dtype=torch.float64)
    eps = torch.randn(6, 3, 4, generator=g, dtype=torch.float64)
    t = torch.tensor([0, 5, 10, 20, 30, 39])
    xt = d.q_sample(x0, t, eps)
    assert torch.allclose(d.x0_from_eps(xt, t, eps), x0, atol=1e-9)
    assert torch.allclose(d.eps_from_x0(xt, t, x0), eps, atol=1e-9)
    big = torch.randn(200_000, 1, generator=g, dtype=torch.float64)
    xs = d.q_sample(torch.full_like(big, 2.0), 25, big)
    assert float(xs.mean()) == pytest.approx(2 * float(d.abar[25].sqrt()), abs=0.01)
    assert float(xs.var()) == pytest.approx(1 - float(d.abar[25]), rel=0.02)


def _gaussian_data_denoiser(d, m, v):
    """E[x0 | x_t] for x0 ~ N(m, v): the Bayes-optimal x0 prediction (closed form)."""
    def model(xt, t):
        ab = d.abar[t].to(xt.dtype).view(-1, *([1] * (xt.dim() - 1)))
        return m + ab.sqrt() * v / (ab * v + 1 - ab) * (xt - ab.sqrt() * m)
    return model


def test_sampling_with_the_optimal_denoiser_recovers_the_data_distribution():
    d = GaussianDiffusion("cosine", 100, predict="x0")
    g = torch.Generator().manual_seed(1)
    out = d.sample(_gaussian_data_denoiser(d, 1.5, 0.25), (20_000, 1), generator=g)
    assert float(out.mean()) == pytest.approx(1.5, abs=0.02)
    assert float(out.std()) == pytest.approx(0.5, rel=0.05)
    # eps-parameterised: the same denoiser through eps_from_x0 gives the same law
    de = GaussianDiffusion("cosine", 100, predict="eps")
    opt = _gaussian_data_denoiser(de, 1.5, 0.25)
    out2 = de.sample(lambda x, t: de.eps_from_x0(x, t, opt(x, t)), (20_000, 1), generator=g)
    assert float(out2.mean()) == pytest.approx(1.5, abs=0.02)


def test_mean_hook_sees_each_step_and_eta_zero_is_deterministic():
    d = GaussianDiffusion("linear", 10, predict="x0")
    seen = []

    def hook(mean, t, var, x0, xt):
        seen.append((t, float(var.flatten()[0]), x0.shape == xt.shape))
        return mean + 1.0  # a visible edit

    x_T = torch.zeros(3, 2)
    out = d.sample(lambda x, t: torch.zeros_like(x), (3, 2), x_T=x_T, eta=0.0, mean_hook=hook)
    assert [s[0] for s in seen] == list(range(9, -1, -1))
    assert all(s[2] for s in seen)
    assert seen[0][1] == pytest.approx(float(d.posterior_var[9]))
    # x0-model 0: mean = ct_t * x_t, then +1 every step
    x = torch.zeros(3, 2, dtype=torch.float64)
    for t in range(9, -1, -1):
        x = float(d.ct[t]) * x + 1.0
    assert torch.allclose(out.double(), x, atol=1e-6)
    a = d.sample(lambda x, t: x * 0.5, (4, 2), x_T=torch.ones(4, 2), eta=0.0)
    b = d.sample(lambda x, t: x * 0.5, (4, 2), x_T=torch.ones(4, 2), eta=0.0)
    assert torch.equal(a, b)


def test_loss_targets_and_mask():
    d = GaussianDiffusion("linear", 20, predict="eps")
    g = torch.Generator().manual_seed(0)
    x0 = torch.randn(8, 5)

    def oracle(xt, t):  # recovers the noise exactly from x_t and the known x0
        return d.eps_from_x0(xt, t, x0)

    assert float(d.loss(oracle, x0, generator=g)) < 1e-10
    zero = d.loss(lambda xt, t: torch.zeros_like(xt), x0, generator=g)
    assert 0.3 < float(zero) < 3.0  # E[eps^2] = 1
    mask = torch.zeros(8, 5)
    mask[:, 0] = 1
    dx = GaussianDiffusion("linear", 20, predict="x0")
    assert float(dx.loss(lambda xt, t: x0 * mask, x0, generator=g, mask=mask)) < 1e-12


def test_com_free_noise_and_chain_stay_centred():
    g = torch.Generator().manual_seed(0)
    mask = torch.ones(4, 10, dtype=torch.bool)
    mask[:, 7:] = False
    z = com_free_noise((4, 10, 3), g, mask=mask)
    assert torch.allclose(z[:, :7].mean(1), torch.zeros(4, 3), atol=1e-6)
    assert torch.all(z[:, 7:] == 0)
    d = GaussianDiffusion("cosine", 30, predict="x0")
    x0 = remove_com(torch.randn(4, 10, 3, generator=g))
    xt = d.q_sample(x0, 12, com_free_noise((4, 10, 3), g))
    assert torch.allclose(xt.mean(1), torch.zeros(4, 3), atol=1e-5)
    out = d.sample(lambda x, t: remove_com(x), (4, 10, 3), generator=g,
                   noise_fn=com_free_noise)
    assert torch.allclose(out.mean(1), torch.zeros(4, 3), atol=1e-5)
    big = com_free_noise((20_000, 5, 1), g)
    assert float(big[:, 0].var()) == pytest.approx(1 - 1 / 5, rel=0.03)


def test_bad_input():
    with pytest.raises(ValueError, match="betas"):
        GaussianDiffusion(torch.tensor([0.1, 1.2]))
    with pytest.raises(ValueError, match="steps is required"):
        GaussianDiffusion("cosine")
    with pytest.raises(ValueError, match="predict"):
        GaussianDiffusion("cosine", 10, predict="v")
    d = GaussianDiffusion("cosine", 10)
    with pytest.raises(ValueError, match=r"t must lie in \[0, 10\)"):
        d.q_sample(torch.zeros(2, 3), 10, torch.zeros(2, 3))
    with pytest.raises(ValueError, match="one step per batch row"):
        d.q_sample(torch.zeros(2, 3), torch.tensor([1, 2, 3]), torch.zeros(2, 3))
    with pytest.raises(ValueError, match="noise must have"):
        d.q_sample(torch.zeros(2, 3), 1, torch.zeros(2, 4))
    with pytest.raises(ValueError, match="denoiser must return"):
        d.sample(lambda x, t: x[:, :1], (2, 3))
    with pytest.raises(ValueError, match="eta"):
        d.sample(lambda x, t: x, (2, 3), eta=-1)
    with pytest.raises(ValueError, match="mask must have shape"):
        remove_com(torch.zeros(2, 4, 3), torch.ones(2, 5))
    with pytest.raises(ValueError, match="no point"):
        remove_com(torch.zeros(2, 4, 3), torch.zeros(2, 4))
