"""Spatial guidance: G, tau, the variance floor, the K schedule, first-frame zeroing, the
training-time variant, the kit hook, and hint validation."""

import pytest
import torch

from iclr24.kits.diffusion import GaussianDiffusion
from iclr24.papers.omnicontrol import (
    MotionRepresentation,
    SpatialGuidance,
    check_hint,
    control_errors,
    generate_motions,
    guidance_scale,
    random_hints,
)


@pytest.fixture(scope="module")
def problem():
    m = generate_motions(4, 0, dtype=torch.float64)
    rep = MotionRepresentation(6).with_statistics(generate_motions(24, 1).features)
    g = torch.Generator().manual_seed(0)
    hint, mask = random_hints(m.positions, g, n_keyframes=5)
    mu = rep.normalise(m.features) + 0.3 * torch.randn(m.features.shape, generator=g,
                                                      dtype=torch.float64)
    return rep, mu, hint, mask


def test_guidance_scale_is_20_over_max_keyframes():
    mask = torch.zeros(2, 10, 3, dtype=torch.bool)
    mask[0, :4, 0] = True
    mask[0, :2, 2] = True
    mask[1, :, 1] = True
    assert torch.allclose(guidance_scale(mask), torch.tensor([20 / 4, 20 / 10],
                                                             dtype=torch.float64))


def test_cost_is_a_sum_of_unsquared_norms(problem):
    rep, mu, hint, mask = problem
    guide = SpatialGuidance(rep)
    pos = rep.to_global(mu)
    expected = torch.stack([sum(torch.linalg.norm(pos[b, n, j] - hint[b, n, j])
                                for n, j in mask[b].nonzero().tolist()) for b in range(4)])
    assert torch.allclose(guide.cost(mu, hint, mask), expected)
    d = control_errors(pos, hint, mask)
    assert torch.isnan(d[~mask]).all() and torch.allclose(d[mask].sum(), expected.sum())


@pytest.mark.parametrize("zero_first", [True, False])
def test_gradient_is_autograd_of_cost(problem, zero_first):
    rep, mu, hint, mask = problem
    mask = mask.clone()
    mask[:, 0, 2] = True                      # a hint on the first frame
    guide = SpatialGuidance(rep, zero_first_frame=zero_first)
    x = mu.clone().requires_grad_(True)
    ref, = torch.autograd.grad(guide.cost(x, hint, mask).sum(), x)
    got = guide.gradient(mu, hint, mask)
    if zero_first:
        assert torch.all(got[:, 0] == 0) and ref[:, 0].abs().max() > 0
        ref[:, 0] = 0
    assert torch.allclose(got, ref, atol=1e-10)


@pytest.mark.parametrize("var, used", [(1e-4, 0.01), (0.3, 0.3)])
def test_one_step_update_and_variance_floor(problem, var, used):
    """mu <- mu - tau * max(var, 0.01) * grad G, tau = 20 / 5 keyframes."""
    rep, mu, hint, mask = problem
    guide = SpatialGuidance(rep, k_early=1, t_switch=10)
    out = guide(mu, 50, torch.full((4, 1, 1), var, dtype=torch.float64), hint, mask)
    expected = mu - (20 / 5) * used * guide.gradient(mu, hint, mask)
    assert torch.allclose(out, expected)


def test_k_schedule(problem, monkeypatch):
    rep, mu, hint, mask = problem
    guide = SpatialGuidance(rep, k_early=3, k_late=7, t_switch=10)
    calls = []
    real = guide.gradient
    monkeypatch.setattr(guide, "gradient", lambda *a: calls.append(1) or real(*a))
    guide(mu, 10, 0.5, hint, mask)
    assert len(calls) == 3
    calls.clear()
    guide(mu, 9, 0.5, hint, mask)
    assert len(calls) == 7


def test_guidance_reaches_the_hints(problem):
    rep, mu, hint, mask = problem
    guide = SpatialGuidance(rep, k_early=200)
    before = control_errors(rep.to_global(mu), hint, mask).nanmean()
    after = control_errors(rep.to_global(guide(mu, 50, 0.01, hint, mask)), hint,
                           mask).nanmean()
    assert after < 0.05 * before


def test_training_input_guidance_per_row(problem, monkeypatch):
    """Rows with t < t_switch take k_late steps, others k_early; tau is the fixed 0.5."""
    rep, mu, hint, mask = problem
    guide = SpatialGuidance(rep)
    t = torch.tensor([0, 50, 5, 90])
    var = torch.full((4,), 0.2, dtype=torch.float64)
    one = guide.guide_training_input(mu, t, var, hint, mask, k_early=1, k_late=1)
    assert torch.allclose(one, mu - 0.5 * 0.2 * guide.gradient(mu, hint, mask))
    out = guide.guide_training_input(mu, t, var, hint, mask, k_early=2, k_late=5, t_switch=20)
    for row, k in zip(range(4), (5, 2, 5, 2)):
        x = mu[row:row + 1]
        for _ in range(k):
            x = x - 0.5 * 0.2 * guide.gradient(x, hint[row:row + 1], mask[row:row + 1])
        assert torch.allclose(out[row:row + 1], x)


def test_mean_hook_in_the_kit_sampler(problem):
    """A denoiser that always predicts zeros, guided through the kit's mean hook, ends near
    the hints; unguided it does not."""
    rep, _, hint, mask = problem
    diff = GaussianDiffusion("cosine", 10, predict="x0")
    guide = SpatialGuidance(rep, t_switch=1, k_late=500)

    def model(x, t):
        return torch.zeros_like(x)

    kw = {"generator": torch.Generator().manual_seed(0)}
    x_g = diff.sample(model, (4, 60, 19), mean_hook=guide.mean_hook(hint.float(), mask), **kw)
    x_u = diff.sample(model, (4, 60, 19), generator=torch.Generator().manual_seed(0))
    err_g = control_errors(rep.to_global(x_g), hint.float(), mask).nanmean()
    err_u = control_errors(rep.to_global(x_u), hint.float(), mask).nanmean()
    assert err_g < 0.3 * err_u


def test_bad_hints(problem):
    rep, mu, hint, mask = problem
    guide = SpatialGuidance(rep)
    with pytest.raises(ValueError, match="mask must be .* to match the motion"):
        guide(mu, 5, 0.1, hint, mask[:, :30])
    with pytest.raises(ValueError, match="hint must be .* to match the motion"):
        guide(mu, 5, 0.1, hint[:2], mask)
    empty = mask.clone()
    empty[2] = False
    with pytest.raises(ValueError, match=r"controls nothing in sample\(s\) \[2\]"):
        guide(mu, 5, 0.1, hint, empty)
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        check_hint(hint, mask.float(), 4, 60, 6)
    bad = hint.clone()
    bad[mask] = float("nan")
    with pytest.raises(ValueError, match="non-finite"):
        check_hint(bad, mask, 4, 60, 6)
    with pytest.raises(ValueError, match="k_early must be a non-negative int"):
        SpatialGuidance(rep, k_early=-1)
    with pytest.raises(TypeError, match="representation must be a MotionRepresentation"):
        SpatialGuidance("rep")
