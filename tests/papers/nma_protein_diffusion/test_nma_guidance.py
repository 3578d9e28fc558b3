"""Normal-mode and motif guidance: the update against finite differences, activation window,
COM removal, skipping, the sampler, and errors."""

import math

import numpy as np
import pytest
import torch

from iclr24.kits.diffusion import GaussianDiffusion, com_free_noise
from iclr24.papers.nma_protein_diffusion import (
    MotifGuidance,
    NormalModeGuidance,
    backbone_dataset,
    dynamics_loss,
    guided_ddpm_sample,
    hinge_protein,
    normal_modes,
)

N = 24
MOTIF = torch.arange(6, 14)


def _target():
    p = hinge_protein(N, np.random.default_rng(1))
    x = torch.from_numpy(p.coords)
    _, v = normal_modes(x)
    return x, v[:, 0].reshape(N, 3)[MOTIF]


def _x(batch=2, seed=0):
    return torch.from_numpy(backbone_dataset(batch, N, seed=seed)).double()


class Shrink(torch.nn.Module):
    """A toy x0-denoiser: x0_hat = c * x_t (depends on x_t, so the network Jacobian matters)."""

    def __init__(self, c=0.9):
        super().__init__()
        self.c = c

    def forward(self, x, t):
        return self.c * x


def test_update_matches_finite_differences():
    _, disp = _target()
    diff = GaussianDiffusion("cosine", 20, predict="x0")
    guide = NormalModeGuidance(disp, MOTIF, scale=50.0, cond_frac=0.5)
    x = _x(1)
    t = 4
    delta = guide(x, t, Shrink(), diff)

    def loss(z):
        _, v = normal_modes(0.9 * z)
        return float(dynamics_loss(v[:, 0].reshape(N, 3)[MOTIF], disp))

    z = x[0]
    h = 1e-6
    g = torch.Generator().manual_seed(3)
    for _ in range(3):  # directional derivatives along random directions
        u = torch.randn(z.shape, generator=g, dtype=z.dtype)
        u = u - u.mean(0)  # delta is COM-free, so compare along COM-free directions
        fd = (loss(z + h * u) - loss(z - h * u)) / (2 * h)
        alpha = float(diff.alphas[t])
        assert alpha < 0.999  # the alpha_t factor is visible at this tolerance
        expect = -(1 - alpha) * 50.0 * alpha * fd  # (1 - a_t) gs a_t g, the official scale
        assert float((delta[0] * u).sum()) == pytest.approx(expect, rel=1e-5, abs=1e-8)
    assert torch.allclose(delta.mean(1), torch.zeros(1, 3, dtype=delta.dtype), atol=1e-12)
    assert guide.last_loss.shape == (1,) and float(guide.last_loss[0]) == pytest.approx(loss(z))


def test_window_scale_and_stop_gradient():
    _, disp = _target()
    diff = GaussianDiffusion("cosine", 20, predict="eps")
    x = _x()
    guide = NormalModeGuidance(disp, MOTIF, scale=10.0, cond_frac=0.5)
    assert torch.count_nonzero(guide(x, 10, Shrink(), diff)) == 0  # t >= cond_frac * T: off
    assert torch.count_nonzero(guide(x, 9, Shrink(), diff)) > 0
    zero = NormalModeGuidance(disp, MOTIF, scale=0.0)
    assert torch.count_nonzero(zero(x, 0, Shrink(), diff)) == 0

    def const_eps(z, t):  # output independent of x_t: both gradient paths agree exactly
        return torch.full_like(z, 0.01)

    full = NormalModeGuidance(disp, MOTIF, scale=10.0)(x, 3, const_eps, diff)
    stop = NormalModeGuidance(disp, MOTIF, scale=10.0, through_denoiser=False)(x, 3, const_eps,
                                                                               diff)
    assert torch.allclose(full, stop)
    full = NormalModeGuidance(disp, MOTIF, scale=10.0)(x, 3, Shrink(0.5), diff)
    stop = NormalModeGuidance(disp, MOTIF, scale=10.0, through_denoiser=False)(x, 3,
                                                                               Shrink(0.5), diff)
    assert not torch.allclose(full, stop)


def test_guidance_lowers_the_loss_of_x0():
    _, disp = _target()
    diff = GaussianDiffusion("cosine", 20, predict="x0")
    guide = NormalModeGuidance(disp, MOTIF, scale=20.0, max_grad_norm=1.0)
    x = _x(3, seed=5)
    d = guide(x, 2, Shrink(1.0), diff)
    before = guide.last_loss.clone()
    guide(x + 0.01 * d / d.flatten(1).norm(dim=1)[:, None, None], 2, Shrink(1.0), diff)
    assert torch.all(guide.last_loss < before)
    assert float(d.flatten(1).norm(dim=1).max()) <= (1 - float(diff.alphas[2])) * 20.0 + 1e-9


def test_non_rigid_estimate_is_skipped():
    _, disp = _target()
    diff = GaussianDiffusion("cosine", 20, predict="x0")
    x = _x(2)
    x[1, N // 2:] += torch.tensor([300.0, 0, 0], dtype=x.dtype)  # two far-apart pieces
    guide = NormalModeGuidance(disp, MOTIF, scale=10.0)
    d = guide(x, 1, Shrink(1.0), diff)
    assert torch.count_nonzero(d[1]) == 0 and torch.count_nonzero(d[0]) > 0
    assert guide.skipped == 1 and guide.attempted == 2
    guide(x, 15, Shrink(1.0), diff)  # inactive (t >= cond_frac T): neither attempted nor skipped
    assert guide.skipped == 1 and guide.attempted == 2


def test_non_finite_estimate_is_skipped_not_propagated():
    _, disp = _target()
    diff = GaussianDiffusion("cosine", 20, predict="x0")
    x = _x(2)

    def nan_for_second(z, t):
        out = 0.9 * z
        return torch.cat([out[:1], torch.full_like(out[1:], float("nan"))])

    guide = NormalModeGuidance(disp, MOTIF, scale=10.0)
    d = guide(x, 2, nan_for_second, diff)
    assert torch.isfinite(d).all()
    assert torch.count_nonzero(d[1]) == 0 and torch.count_nonzero(d[0]) > 0
    assert guide.skipped == 1 and guide.attempted == 2
    assert torch.isfinite(guide.last_loss[0]) and torch.isnan(guide.last_loss[1])
    # the first structure's update is the one it gets alone
    alone = NormalModeGuidance(disp, MOTIF, scale=10.0)(x[:1], 2, Shrink(), diff)
    assert torch.allclose(d[:1], alone)


def test_sampler_warns_with_the_skipped_count():
    """issue 38: skipped guidance steps used to increment a counter silently."""
    import warnings

    from iclr24.papers.nma_protein_diffusion import GuidanceSkippedWarning

    _, disp = _target()
    diff = GaussianDiffusion("cosine", 10, predict="x0", variance="beta")
    split = 3 * com_free_noise((2, N, 3), torch.Generator().manual_seed(1))
    split[:, N // 2:] += 30.0  # two pieces 50+ units apart: never one rigid network

    def keep(z, t):  # x0_hat = x_t: the estimate stays split
        return z

    guide = NormalModeGuidance(disp, MOTIF, scale=1.0, cond_frac=0.5, angstrom_per_unit=10.0)
    with pytest.warns(GuidanceSkippedWarning, match=r"skipped 10 of the 10 structure-steps"):
        guided_ddpm_sample(keep, diff, [guide], (2, N, 3), x_T=split, eta=0.0,
                           generator=torch.Generator().manual_seed(0))
    assert guide.skipped == guide.attempted == 10
    with warnings.catch_warnings():  # nothing skipped, nothing said
        warnings.simplefilter("error", GuidanceSkippedWarning)
        guided_ddpm_sample(Shrink(0.95), diff, [NormalModeGuidance(disp, MOTIF, scale=0.0)],
                           (2, N, 3), generator=torch.Generator().manual_seed(0))


def test_motif_guidance_pulls_motif_to_target_shape():
    diff = GaussianDiffusion("cosine", 20, predict="x0")
    x = _x(2, seed=2)
    target = _x(1, seed=9)[0, MOTIF]
    rot, _ = torch.linalg.qr(torch.randn(3, 3, dtype=torch.float64,
                                         generator=torch.Generator().manual_seed(0)))
    rot = rot * torch.sign(torch.linalg.det(rot))
    guide = MotifGuidance(target, MOTIF, scale=20.0)
    d = guide(x, 3, Shrink(1.0), diff)
    # the superposition makes the target's frame irrelevant
    d_rot = MotifGuidance(target @ rot.T + 5.0, MOTIF, scale=20.0)(x, 3, Shrink(1.0), diff)
    assert torch.allclose(d, d_rot, atol=1e-8)
    before = guide.last_loss.clone()
    guide(x + 0.5 * d / d.abs().max(), 3, Shrink(1.0), diff)
    assert torch.all(guide.last_loss < before)
    scale = (1 - float(diff.alphas[3])) * 20.0 * math.sqrt(1.5 - float(diff.alphas[3]))
    assert float(d.abs().max()) <= scale  # |d L1 / dx| <= 1 / (3 n_m) per entry


def test_sampler_unguided_equals_kit_and_guided_differs():
    _, disp = _target()
    diff = GaussianDiffusion("cosine", 12, predict="x0", variance="beta")
    model = Shrink(0.95)
    a = guided_ddpm_sample(model, diff, [], (3, N, 3), generator=torch.Generator().manual_seed(4))
    b = diff.sample(model, (3, N, 3), generator=torch.Generator().manual_seed(4), eta=0.4,
                    noise_fn=com_free_noise)
    assert torch.allclose(a, b)
    null = NormalModeGuidance(disp, MOTIF, scale=0.0)
    c = guided_ddpm_sample(model, diff, [null], (3, N, 3),
                           generator=torch.Generator().manual_seed(4))
    assert torch.equal(a, c)
    x_T = 5 * com_free_noise((3, N, 3), torch.Generator().manual_seed(1))
    guided = NormalModeGuidance(disp, MOTIF, scale=5.0, cond_frac=1.0)
    d = guided_ddpm_sample(model, diff, [guided], (3, N, 3), x_T=x_T,
                           generator=torch.Generator().manual_seed(4))
    e = guided_ddpm_sample(model, diff, [], (3, N, 3), x_T=x_T,
                           generator=torch.Generator().manual_seed(4))
    assert not torch.allclose(d, e)
    assert torch.allclose(d.mean(1), torch.zeros(3, 3), atol=1e-5)


def test_bad_input():
    _, disp = _target()
    diff = GaussianDiffusion("cosine", 12, predict="x0")
    far = NormalModeGuidance(disp, torch.arange(20, 28))
    with pytest.raises(ValueError, match="residue_idx out of range"):
        guided_ddpm_sample(Shrink(), diff, [far], (2, N, 3))
    with pytest.raises(ValueError, match="residue_idx out of range"):
        far(_x(), 0, Shrink(), diff)
    with pytest.raises(ValueError, match="out of range"):
        NormalModeGuidance(disp, torch.arange(-1, 7))
    with pytest.raises(ValueError, match="rows but residue_idx"):
        NormalModeGuidance(disp, torch.arange(0, 5))
    with pytest.raises(ValueError, match="cond_frac"):
        NormalModeGuidance(disp, MOTIF, cond_frac=1.5)
    with pytest.raises(ValueError, match="scale"):
        NormalModeGuidance(disp, MOTIF, scale=-1.0)
    with pytest.raises(ValueError, match="mode_index"):
        NormalModeGuidance(disp, MOTIF, mode_index=3)
    with pytest.raises(ValueError, match="target_pos"):
        MotifGuidance(torch.zeros(8, 2), MOTIF)
    with pytest.raises(TypeError, match="guidances"):
        guided_ddpm_sample(Shrink(), diff, [lambda *a: 0], (2, N, 3))
    with pytest.raises(ValueError, match=r"shape must be \(B, N, 3\)"):
        guided_ddpm_sample(Shrink(), diff, [], (2, N))
    with pytest.raises(TypeError, match="GaussianDiffusion"):
        guided_ddpm_sample(Shrink(), "cosine", [], (2, N, 3))
