"""Masks on the tone-mapped scale, L1 averaged over all pixels, the loss weights."""

import math

import pytest
import torch

from iclr24.papers.selfhdr import (
    color_mask,
    expansion_mask,
    gradient_ssim_loss,
    mu_tonemap,
    selfhdr_stage1_loss,
    selfhdr_stage2_loss,
    structure_masks,
    tent_weight,
)

MU = 5000.0


def _inv_t(y):
    """Inverse mu-law: the linear value whose tone map is y."""
    return ((1 + MU) ** torch.as_tensor(y, dtype=torch.float64) - 1) / MU


def _img(v, h=1, w=1):
    return torch.full((1, 3, h, w), float(v), dtype=torch.float64)


@pytest.mark.parametrize("t_gap, kept", [(4.9 / 255, 1.0), (5.0 / 255 + 1e-9, 0.0),
                                         (6 / 255, 0.0)])
def test_stage1_mask_threshold_on_tonemapped_scale(t_gap, kept):
    ldr_ref = _img(0.5)  # Lambda = 1, so the gap is not reweighted
    t_ref = 0.3
    y_color = _img(float(_inv_t(t_ref + t_gap)))
    hdr_ref = _img(float(_inv_t(t_ref)))
    assert float(expansion_mask(y_color, ldr_ref, hdr_ref)) == kept


def test_stage1_mask_is_not_a_linear_threshold():
    ldr_ref = _img(0.5)
    # dark: a linear gap of 1e-4 (far below 5/255) is a tone-mapped gap of ~0.06 -> dropped
    assert float(expansion_mask(_img(2e-4), ldr_ref, _img(1e-4))) == 0.0
    # bright: a linear gap of 0.05 (above 5/255) is a tone-mapped gap of ~0.002 -> kept
    assert float(expansion_mask(_img(3.05), ldr_ref, _img(3.0))) == 1.0


def test_stage1_mask_weights_by_tent_of_reference_ldr_and_channel_mean():
    t_ref = 0.3
    y_color = _img(float(_inv_t(t_ref + 8 / 255)))
    hdr_ref = _img(float(_inv_t(t_ref)))
    assert float(expansion_mask(y_color, _img(0.5), hdr_ref)) == 0.0  # 8/255 gap, Lambda 1
    assert float(expansion_mask(y_color, _img(0.9), hdr_ref)) == 1.0  # Lambda 0.2: 1.6/255
    # one channel off by 12/255, two exact: channel mean 4/255 < 5/255 -> kept
    yc = hdr_ref.clone()
    yc[:, 0] = _inv_t(t_ref + 12 / 255)
    assert float(expansion_mask(yc, _img(0.5), hdr_ref)) == 1.0


@pytest.mark.parametrize("t_gap, kept", [(9.9 / 255, 1.0), (10 / 255 + 1e-9, 0.0)])
def test_stage2_mask_threshold(t_gap, kept):
    y_stru = _img(float(_inv_t(0.5)))
    y_color = _img(float(_inv_t(0.5 + t_gap)))
    assert float(color_mask(y_color, y_stru)) == kept
    m1, m2 = structure_masks(y_color, _img(0.5), y_stru, y_stru)
    assert float(m2) == kept and m1.shape == (1, 1, 1, 1)
    assert structure_masks(y_color, _img(0.5), y_stru)[1] is None


def _random_case(seed, h=4, w=6):
    g = torch.Generator().manual_seed(seed)
    rand = lambda: torch.rand(2, 3, h, w, generator=g, dtype=torch.float64)
    return rand() * 2, rand() * 2, rand(), rand()


def test_stage1_loss_is_l1_over_all_pixels_with_weight_4():
    s_out, y_color, ldr_ref, _ = _random_case(0)
    hdr_ref = ldr_ref ** 2.2
    # the color component agrees with the reference on the bottom half and ghosts on the top
    y_color = hdr_ref.clone()
    y_color[..., :2, :] = hdr_ref[..., :2, :] * 3 + 0.5
    m1 = expansion_mask(y_color, ldr_ref, hdr_ref)
    assert 0 < float(m1.mean()) < 1
    lam = tent_weight(ldr_ref)
    ts, tc, th = (mu_tonemap(x) for x in (s_out, y_color, hdr_ref))
    expand = ((ts - tc).abs() * m1).sum() / ts.numel()  # masked-out pixels count as zeros
    preserve = ((ts - th).abs() * lam).sum() / ts.numel()
    got = selfhdr_stage1_loss(s_out, y_color, ldr_ref, hdr_ref)
    assert math.isclose(float(got), float(expand + 4 * preserve), rel_tol=1e-10)
    # normalising by the mask count instead would give a different number
    assert not math.isclose(float(got), float(((ts - tc).abs() * m1).sum() / (m1.sum() * 3)
                                              + 4 * preserve), rel_tol=1e-3)


def test_stage2_loss_is_masked_l1_plus_weighted_perceptual():
    f_out, y_color, y_stru, _ = _random_case(1)
    m2 = color_mask(y_color, y_stru)
    l1 = ((mu_tonemap(f_out) - mu_tonemap(y_color)).abs() * m2).sum() / f_out.numel()
    assert math.isclose(float(selfhdr_stage2_loss(f_out, y_color, y_stru, None)), float(l1),
                        rel_tol=1e-10)
    calls = []

    def perceptual(a, b):
        calls.append((a, b))
        return torch.tensor(0.25, dtype=torch.float64)

    got = selfhdr_stage2_loss(f_out, y_color, y_stru, perceptual)
    assert math.isclose(float(got), float(l1) + 0.25, rel_tol=1e-10)
    a, b = calls[0]
    assert torch.allclose(a, mu_tonemap(f_out)) and torch.allclose(b, mu_tonemap(y_stru))


def test_gradient_ssim_standin():
    x = torch.rand(2, 3, 12, 12, generator=torch.Generator().manual_seed(0))
    assert float(gradient_ssim_loss(x, x)) == pytest.approx(0.0, abs=1e-6)
    y = x.flip(-1)
    assert float(gradient_ssim_loss(x, y)) > 0.1
    p = x.clone().requires_grad_(True)
    gradient_ssim_loss(p, y).backward()
    assert p.grad.abs().sum() > 0


def test_losses_reject_bad_input():
    f, yc, ys, _ = _random_case(2)
    with pytest.raises(ValueError, match="fixed label"):
        selfhdr_stage2_loss(f, yc, ys.clone().requires_grad_(True))
    with pytest.raises(ValueError, match=r"\(B, 3, H, W\)"):
        selfhdr_stage1_loss(f[:, :2], yc, ys, ys)
    with pytest.raises(ValueError, match="shape"):
        selfhdr_stage2_loss(f, yc[..., :3], ys)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        expansion_mask(yc, ys * 3 + 1, ys)
    with pytest.raises(TypeError, match="callable"):
        selfhdr_stage2_loss(f, yc, ys, perceptual="vgg")
