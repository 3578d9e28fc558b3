"""Game generators: L2-invariant centring/scaling, DISC-game structure and masks, determinism."""

import pytest
import torch

from iclr24.papers.nfg_transformer import disc_games, l2_invariant_games, nash_conv


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 3, 4)])
def test_l2_invariant_games_are_centred_on_own_axis_with_unit_variance(shape):
    g = l2_invariant_games(6, shape, torch.Generator().manual_seed(0), dtype=torch.float64)
    assert g.shape == (6, len(shape), *shape)
    for p in range(len(shape)):
        assert g[:, p].mean(dim=1 + p).abs().max() < 1e-12
        variance = g[:, p].flatten(1).square().mean(1)
        assert torch.allclose(variance, torch.ones(6, dtype=torch.float64))


def test_l2_invariant_games_are_seeded():
    a = l2_invariant_games(2, (3, 3), torch.Generator().manual_seed(5))
    b = l2_invariant_games(2, (3, 3), torch.Generator().manual_seed(5))
    c = l2_invariant_games(2, (3, 3), torch.Generator().manual_seed(6))
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_centring_does_not_change_incentives():
    raw = torch.randn(4, 2, 3, 3, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    centred = raw - torch.stack([raw[:, 0].mean(1, keepdim=True).expand(4, 3, 3),
                                 raw[:, 1].mean(2, keepdim=True).expand(4, 3, 3)], 1)
    s = [torch.softmax(torch.randn(4, 3, dtype=torch.float64), -1) for _ in range(2)]
    torch.testing.assert_close(nash_conv(raw, s, reduce="sum"), nash_conv(centred, s, reduce="sum"))


def test_disc_games_are_constant_sum_skew_and_masks_symmetric():
    g, m = disc_games(50, 6, 4, 0.5, torch.Generator().manual_seed(0))
    assert g.shape == (50, 2, 6, 6) and m.shape == (50, 6, 6) and m.dtype == torch.bool
    w = g[:, 0]
    assert torch.allclose(g[:, 0] + g[:, 1], torch.ones_like(w))
    assert torch.allclose(w + w.transpose(1, 2), torch.ones_like(w), atol=1e-6)  # sigma(-x)
    assert torch.allclose(torch.diagonal(w, dim1=1, dim2=2), torch.full((50, 6), 0.5))
    assert torch.equal(m, m.transpose(1, 2)) and m[:, 0, 0].all()
    off = ~torch.eye(6, dtype=torch.bool)
    rate = m[:, off].float().mean()
    assert 0.4 < rate < 0.6  # lower triangle kept w.p. 0.5 and mirrored
    # cyclic structure: far from transitive (many win-rate triangles are intransitive)
    assert (w > 0.9).any() and (w < 0.1).any()


def test_generators_reject_bad_arguments():
    with pytest.raises(ValueError, match="shape"):
        l2_invariant_games(2, (3,))
    with pytest.raises(ValueError, match="batch"):
        l2_invariant_games(0, (3, 3))
    with pytest.raises(TypeError, match="generator"):
        l2_invariant_games(2, (3, 3), generator=0)
    with pytest.raises(ValueError, match="keep_prob"):
        disc_games(2, 4, keep_prob=1.5)
    with pytest.raises(ValueError, match="n_strategies"):
        disc_games(2, 0)
