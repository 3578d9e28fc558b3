"""Stage 2: the patch association loss (known answers), retrieval, the content mask and
fit_association (the key step removed leaves the spaces apart)."""

import math

import numpy as np
import pytest
import torch

from iclr24.papers.daefr import (
    AssociationConfig,
    VQAutoencoder,
    content_token_mask,
    fit_association,
    patch_association_loss,
    token_retrieval_accuracy,
)


def _hand_loss(zh, zl, scale, keep=None):
    """Symmetric CE by hand in numpy (float64), tokens image-major."""
    h = zh.permute(0, 2, 3, 1).reshape(-1, zh.shape[1]).double().numpy()
    l = zl.permute(0, 2, 3, 1).reshape(-1, zl.shape[1]).double().numpy()
    if keep is not None:
        h, l = h[keep], l[keep]
    h = h / np.linalg.norm(h, axis=1, keepdims=True)
    l = l / np.linalg.norm(l, axis=1, keepdims=True)
    logits = scale * h @ l.T

    def ce_diag(m):
        m = m - m.max(axis=1, keepdims=True)
        logp = m - np.log(np.exp(m).sum(axis=1, keepdims=True))
        return -np.mean(np.diag(logp))

    return 0.5 * (ce_diag(logits) + ce_diag(logits.T))


def test_loss_equals_hand_computed_symmetric_ce():
    g = torch.Generator().manual_seed(0)
    zh, zl = torch.randn(3, 5, 2, 4, generator=g), torch.randn(3, 5, 2, 4, generator=g)
    s = torch.tensor(math.log(1 / 0.07))
    got = patch_association_loss(zh, zl, s)
    assert got.item() == pytest.approx(_hand_loss(zh, zl, 1 / 0.07), rel=1e-5)


def test_loss_is_symmetric_in_its_two_branches_and_scale_invariant_per_token():
    g = torch.Generator().manual_seed(1)
    zh, zl = torch.randn(2, 4, 3, 3, generator=g), torch.randn(2, 4, 3, 3, generator=g)
    s = torch.tensor(1.3)
    a = patch_association_loss(zh, zl, s)
    assert patch_association_loss(zl, zh, s).item() == pytest.approx(a.item(), rel=1e-6)
    # tokens are L2-normalised first: rescaling a feature map changes nothing
    assert patch_association_loss(3.0 * zh, 0.5 * zl, s).item() == pytest.approx(a.item(),
                                                                                rel=1e-5)


def test_scale_is_clamped_at_100():
    g = torch.Generator().manual_seed(2)
    zh, zl = torch.randn(2, 4, 2, 2, generator=g), torch.randn(2, 4, 2, 2, generator=g)
    at_100 = patch_association_loss(zh, zl, torch.tensor(math.log(100.0)))
    s = torch.tensor(math.log(1000.0), requires_grad=True)
    above = patch_association_loss(zh, zl, s)
    assert above.item() == pytest.approx(at_100.item(), rel=1e-6)
    assert above.item() == pytest.approx(_hand_loss(zh, zl, 100.0), rel=1e-5)
    above.backward()
    assert s.grad.item() == 0.0  # past the clamp the scale no longer learns
    below = patch_association_loss(zh, zl, torch.tensor(math.log(50.0)))
    assert below.item() == pytest.approx(_hand_loss(zh, zl, 50.0), rel=1e-5)


def test_mask_drops_tokens_as_anchors_and_negatives():
    g = torch.Generator().manual_seed(3)
    zh, zl = torch.randn(2, 3, 2, 2, generator=g), torch.randn(2, 3, 2, 2, generator=g)
    mask = torch.tensor([[[True, False], [True, True]], [[False, False], [True, True]]])
    keep = mask.reshape(-1).numpy()
    got = patch_association_loss(zh, zl, torch.tensor(0.0), mask=mask)
    assert got.item() == pytest.approx(_hand_loss(zh, zl, 1.0, keep), rel=1e-5)


def test_aligned_features_give_a_low_loss_and_perfect_retrieval():
    g = torch.Generator().manual_seed(4)
    z = torch.randn(4, 16, 3, 3, generator=g)
    s = torch.tensor(math.log(100.0))
    assert token_retrieval_accuracy(z, 2 * z) == 1.0
    aligned = patch_association_loss(z, z, s).item()
    shuffled = patch_association_loss(z, z.flip(0), s).item()
    assert aligned < 0.1 < shuffled


def test_retrieval_known_answer():
    # 4 tokens: LQ tokens 0 and 1 point at the right HQ token, 2 and 3 are swapped
    e = torch.eye(4)
    zh = e.T.reshape(1, 4, 2, 2)
    zl = e[[0, 1, 3, 2]].T.reshape(1, 4, 2, 2)
    assert token_retrieval_accuracy(zh, zl) == pytest.approx(0.5)


def test_content_token_mask_on_a_hand_built_image():
    x = -torch.ones(1, 1, 8, 8)
    x[0, 0, 0, 0] = 1.0  # top-left patch varies
    x[0, 0, 4:, 4:] = 1.0  # bottom-right patch is constant (bright), so not content
    x[0, 0, 5, 0] = -0.95  # a variation below the threshold
    mask = content_token_mask(x, (2, 2))
    assert mask.tolist() == [[[True, False], [False, False]]]


def test_bad_inputs_are_refused():
    z = torch.randn(2, 4, 2, 2)
    with pytest.raises(ValueError, match="same shape"):
        patch_association_loss(z, torch.randn(2, 4, 2, 3), torch.tensor(0.0))
    with pytest.raises(TypeError, match="logit_scale"):
        patch_association_loss(z, z, 2.0)
    with pytest.raises(ValueError, match="mask must be a bool tensor"):
        patch_association_loss(z, z, torch.tensor(0.0), mask=torch.ones(2, 2, 2))
    with pytest.raises(ValueError, match="at least 2 tokens"):
        patch_association_loss(z, z, torch.tensor(0.0), mask=torch.zeros(2, 2, 2, dtype=bool)
                               .index_put_((torch.tensor([0]),) * 3, torch.tensor(True)))
    with pytest.raises(ValueError, match="B, C, H, W"):
        patch_association_loss(z[0], z[0], torch.tensor(0.0))
    with pytest.raises(ValueError, match="multiple of grid"):
        content_token_mask(torch.zeros(1, 1, 9, 9), (2, 2))
    with pytest.raises(ValueError, match="steps"):
        AssociationConfig(steps=0)
    ae = VQAutoencoder(1, 4, (1, 2), 8, 8)
    with pytest.raises(TypeError, match="lq_ae"):
        fit_association(ae, torch.nn.Linear(2, 2), torch.zeros(2, 1, 8, 8),
                        torch.zeros(2, 1, 8, 8))
    with pytest.raises(ValueError, match="\\[-1, 1\\]"):
        fit_association(ae, ae, torch.full((2, 1, 8, 8), 3.0), torch.zeros(2, 1, 8, 8))


def _pairs():
    g = torch.Generator().manual_seed(0)
    x_hq = torch.rand(32, 1, 8, 8, generator=g) * 2 - 1
    x_lq = (0.5 * x_hq + 0.1 * torch.randn(32, 1, 8, 8, generator=g)).clamp(-1, 1)
    return x_hq, x_lq


def _retrieval(hq, lq, x_hq, x_lq):
    with torch.no_grad():
        return token_retrieval_accuracy(hq.encode(x_hq[:8]), lq.encode(x_lq[:8]))


@pytest.mark.usefixtures("one_torch_thread")
def test_fit_association_aligns_and_weight_zero_does_not():
    """Negative control of the association claim: with the association loss removed (weight 0)
    stage 2 leaves retrieval where it was; with it, retrieval rises far above that."""
    from iclr24.claims import Scale
    from iclr24.papers.daefr.claims import association_alignment

    x_hq, x_lq = _pairs()
    gains = {}
    for weight in (0.0, 1.0):
        torch.manual_seed(0)
        hq, lq = VQAutoencoder(1, 4, (1, 2), 8, 16), VQAutoencoder(1, 4, (1, 2), 8, 16)
        before = _retrieval(hq, lq, x_hq, x_lq)
        cfg = AssociationConfig(steps=30, batch_size=16, lr=3e-3, weight=weight,
                                mask_threshold=None)
        fit = fit_association(hq, lq, x_hq, x_lq, cfg, seed=0)
        gains[weight] = _retrieval(hq, lq, x_hq, x_lq) - before
        assert len(fit.assoc) == 30 and fit.logit_scale > 0
        assert not hq.training and not lq.training
    assert gains[1.0] > gains[0.0] + 0.05
    # the null arm scored as if it were the method (its gain over the stage-1 pair) does not
    # pass, even with the HQ encoder left on its codebook
    null_as_method = {"retrieval_gain_vs_null": gains[0.0], "hq_code_agreement_after": 1.0,
                      "hq_code_agreement_null": 1.0}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert association_alignment.verdict(null_as_method, scale) != "holds"
