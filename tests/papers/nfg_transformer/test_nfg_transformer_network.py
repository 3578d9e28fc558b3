"""NfgTransformer encoder and heads: action-permutation equivariance (the MLP fails it), masks,
size-independent parameters, attention against a hand computation, and input errors."""

import math

import pytest
import torch

from iclr24.papers.nfg_transformer import (
    DeviationGainHead,
    NashHead,
    NfgTransformer,
    PayoffHead,
    PayoffMLP,
    l2_invariant_games,
)
from iclr24.papers.nfg_transformer.network import QKNormAttention


def _model(n_players=2, d=16):
    torch.manual_seed(0)
    return NfgTransformer(n_players=n_players, d_model=d, n_blocks=2, n_heads=4, qkv_dim=16,
                          n_action_self_attn=1)


def _permute(g, mask, perms):
    for p, perm in enumerate(perms):
        g, mask = g.index_select(2 + p, perm), mask.index_select(1 + p, perm)
    return g, mask


@pytest.mark.parametrize("shape", [(4, 5), (3, 2, 4)])
def test_action_permutations_commute_with_encoder_and_heads(shape, one_torch_thread):
    n = len(shape)
    gen = torch.Generator().manual_seed(1)
    g = l2_invariant_games(3, shape, gen)
    mask = torch.rand((3, *shape), generator=gen) < 0.6
    mask[(slice(None),) + (0,) * n] = True
    enc = _model(n)
    nash, dev, pay = NashHead(16), DeviationGainHead(16), PayoffHead(16, 4, 16)
    perms = [torch.randperm(t, generator=gen) for t in shape]
    gp, mp = _permute(g, mask, perms)
    with torch.no_grad():
        e0, e1 = enc(g, mask), enc(gp, mp)
        for p in range(n):
            assert (e1[p] - e0[p][:, perms[p]]).abs().max() < 1e-5
            l0, l1 = nash(e0, mask)[p][:, perms[p]], nash(e1, mp)[p]
            assert torch.equal(torch.isinf(l0), torch.isinf(l1))
            assert (l1 - l0).nan_to_num(0, 0, 0).abs().max() < 1e-5
        j0, y0 = dev(e0), pay(e0)
        for p, perm in enumerate(perms):
            j0, y0 = j0.index_select(1 + p, perm), y0.index_select(2 + p, perm)
        assert (dev(e1) - j0).abs().max() < 1e-5
        assert (pay(e1) - y0).abs().max() < 1e-5


def test_mlp_baseline_is_not_equivariant():
    torch.manual_seed(0)
    mlp = PayoffMLP((4, 4))
    gen = torch.Generator().manual_seed(2)
    g = l2_invariant_games(3, (4, 4), gen)
    perm = torch.tensor([1, 0, 3, 2])
    with torch.no_grad():
        out0, out1 = mlp(g)[0][:, perm], mlp(g.index_select(2, perm))[0]
    assert (out0 - out1).abs().max() > 1e-3


def test_parameters_do_not_depend_on_game_size_and_outputs_have_game_shape():
    enc = _model()
    for shape in [(2, 3), (6, 5)]:
        out = enc(l2_invariant_games(2, shape, torch.Generator().manual_seed(0)))
        assert [tuple(o.shape) for o in out] == [(2, shape[0], 16), (2, shape[1], 16)]


def test_unobserved_payoffs_do_not_leak_and_absent_actions_are_masked():
    enc = _model()
    g = l2_invariant_games(2, (4, 4), torch.Generator().manual_seed(3))
    mask = torch.ones(2, 4, 4, dtype=torch.bool)
    mask[:, 1, 2] = False
    mask[:, 3, :] = False  # action 3 of player 0 never observed
    g2 = g.clone()
    g2[:, :, 1, 2] += 10.0
    g2[:, :, 3, :] -= 7.0
    with torch.no_grad():
        e1, e2 = enc(g, mask), enc(g2, mask)
    for a, b in zip(e1, e2):
        assert torch.allclose(a, b, atol=1e-6)
    # absent actions keep their zero embedding (the final RMSNorm of 0 is 0) and get -inf logits
    assert torch.all(e1[0][:, 3] == 0)
    logits = NashHead(16)(e1, mask)
    assert torch.isinf(logits[0][:, 3]).all() and torch.isfinite(logits[0][:, :3]).all()
    assert torch.allclose(logits[0].softmax(-1).sum(-1), torch.ones(2))


def test_qk_norm_attention_matches_hand_computation():
    torch.manual_seed(0)
    att = QKNormAttention(8, 8, 8, 2, 8)
    x = torch.randn(3, 5, 8)
    mask = torch.rand(3, 5, 5) < 0.7
    mask[..., 0] = True
    q = att.norm_q(att.q(x)).reshape(3, 5, 2, 4).transpose(1, 2)
    k = att.norm_k(att.k(x)).reshape(3, 5, 2, 4).transpose(1, 2)
    v = att.v(x).reshape(3, 5, 2, 4).transpose(1, 2)
    logits = (q @ k.transpose(-1, -2)) / math.sqrt(4)
    w = logits.masked_fill(~mask[:, None], -math.inf).softmax(-1)
    expected = att.out((w @ v).transpose(1, 2).reshape(3, 5, 8))
    assert torch.allclose(att(x, x, mask), expected, atol=1e-5)
    # Q/K/V maps have no bias (official); RMSNorm normalises q over its full width
    assert att.q.bias is None and att.k.bias is None and att.v.bias is None
    qn = att.norm_q(att.q(x)) / att.norm_q.weight
    assert torch.allclose(qn.square().mean(-1), torch.ones(3, 5), atol=1e-3)


def test_bad_payoffs_and_masks_give_clear_errors():
    enc = _model()
    g = l2_invariant_games(2, (3, 3), torch.Generator().manual_seed(0))
    with pytest.raises(ValueError, match="players"):
        enc(torch.zeros(2, 3, 3, 3))  # 3 players on axis 1, 2 action axes
    with pytest.raises(ValueError, match="n_players=2"):
        enc(torch.zeros(2, 3, 3, 3, 3))  # a valid 3-player game, model built for 2
    with pytest.raises(ValueError, match="mask must have shape"):
        enc(g, torch.ones(2, 3, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask must have shape"):
        enc(g, torch.ones(2, 3, 3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="bool"):
        enc(g, torch.ones(2, 3, 3))
    with pytest.raises(ValueError, match="at least one joint action"):
        enc(g, torch.zeros(2, 3, 3, dtype=torch.bool))
    with pytest.raises(TypeError, match="floating"):
        enc(torch.zeros(2, 2, 3, 3, dtype=torch.long))
    nan = g.clone()
    nan[1, 0, 1, 1] = float("nan")
    with pytest.raises(ValueError, match="payoffs must be finite"):
        enc(nan)  # used to give NaN embeddings (hence NaN logits) silently
    with pytest.raises(ValueError, match="payoffs must be finite"):
        enc(nan.clone().fill_(float("inf")))
    mask = torch.ones(2, 3, 3, dtype=torch.bool)
    mask[1, 1, 1] = False  # an unobserved NaN payoff is allowed and never enters
    out = enc(nan, mask)
    assert all(torch.isfinite(e).all() for e in out)
    with pytest.raises(ValueError, match="at least one game"):
        enc(g[:0])  # empty batch: used to fail deep inside attention
    with pytest.raises(ValueError, match="n_players"):
        NfgTransformer(n_players=1)
    with pytest.raises(ValueError, match="divisible"):
        NfgTransformer(d_model=16, n_heads=3, qkv_dim=16)
