"""The three losses and caption parsing, against closed forms and hand computations."""

import math

import pytest
import torch
from torch.nn import functional as F

from iclr24.papers.bimodal_separation import (
    bimodal_contrastive_loss,
    consistency_reconstruction_loss,
    loss_weight,
    parse_caption,
    weighted_l1,
)


def test_loss_weight_is_clamped_log1p():
    m = torch.tensor([0.0, 1e-4, 1.0, 1e6])
    assert torch.allclose(loss_weight(m), torch.tensor([1e-3, 1e-3, math.log(2.0), 10.0]))


def test_weighted_l1_closed_form():
    p, t = torch.tensor([[1.0, 2.0], [3.0, 4.0]]), torch.tensor([[0.0, 2.0], [5.0, 4.0]])
    w = torch.tensor([[2.0, 1.0], [0.5, 3.0]])
    assert weighted_l1(p, t, w).item() == pytest.approx((2 * 1 + 0 + 0.5 * 2 + 0) / 4)
    with pytest.raises(ValueError, match="same shape"):
        weighted_l1(p, t[:1], w)


def test_consistency_is_zero_for_sources_that_add_up_and_uses_presence():
    g = torch.Generator().manual_seed(0)
    s = torch.rand(2, 3, 5, 4, generator=g)
    mix = s[:, 0] + s[:, 1]  # third slot repeats the second phrase: weights 1, 1/2, 1/2
    s[:, 2] = s[:, 1]
    presence = torch.tensor([[1.0, 0.5, 0.5]] * 2)
    assert consistency_reconstruction_loss(s, presence, mix).item() == pytest.approx(0, abs=1e-7)
    # closed form with a wrong sum: weights from |M_n|
    off = consistency_reconstruction_loss(s, torch.ones(2, 3), mix)
    expect = torch.mean(loss_weight(mix) * s[:, 1].abs())
    assert off.item() == pytest.approx(expect.item(), rel=1e-6)
    with pytest.raises(ValueError, match="expected source_mags"):
        consistency_reconstruction_loss(s, presence[:, :2], mix)


def test_contrastive_matches_cross_entropy_and_masks_rows():
    g = torch.Generator().manual_seed(1)
    a = F.normalize(torch.randn(5, 8, generator=g), dim=1)
    t = F.normalize(torch.randn(5, 8, generator=g), dim=1)
    logits = 10.0 * a @ t.T
    ref = -torch.log_softmax(logits, 1).diagonal().mean()
    assert bimodal_contrastive_loss(a, t, 10.0).item() == pytest.approx(ref.item(), rel=1e-6)
    valid = torch.tensor([True, False, True, True, False])
    sub = 10.0 * a[valid] @ t[valid].T
    ref_sub = -torch.log_softmax(sub, 1).diagonal().mean()
    assert bimodal_contrastive_loss(a, t, 10.0, valid).item() == pytest.approx(ref_sub.item(),
                                                                               rel=1e-6)
    # identical embeddings: every row is chance, log N
    same = F.normalize(torch.ones(4, 8), dim=1)
    assert bimodal_contrastive_loss(same, same, 5.0).item() == pytest.approx(math.log(4))
    # perfect alignment of orthogonal rows with a large scale: near zero
    eye = torch.eye(4, 8)
    assert bimodal_contrastive_loss(eye, eye, 100.0).item() < 1e-30 + 1e-6
    with pytest.raises(ValueError, match="valid must be a bool"):
        bimodal_contrastive_loss(a, t, 1.0, torch.ones(5))


def test_parse_caption_pads_with_repeats_weighted_one_over_count():
    phrases, a, first = parse_caption("whistle and hiss", 3)
    assert phrases == ["whistle", "hiss", "whistle"]
    assert a == [0.5, 1.0, 0.5] and first == [True, True, False]
    phrases, a, first = parse_caption("bass, clicks and chord", 3)
    assert phrases == ["bass", "clicks", "chord"] and a == [1.0] * 3 and all(first)
    assert parse_caption("hiss", 3) == (["hiss"] * 3, [1 / 3] * 3, [True, False, False])


def test_parse_caption_rejects_more_phrases_than_n_sources():
    with pytest.raises(ValueError, match="4 phrases, more than n_sources = 3"):
        parse_caption("whistle and hiss and bass and chord", 3)
    with pytest.raises(ValueError, match="names no sound"):
        parse_caption(" and ", 3)
    with pytest.raises(TypeError, match="caption must be a str"):
        parse_caption(3, 3)
