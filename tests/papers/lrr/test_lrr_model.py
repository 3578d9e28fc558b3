"""Two-stream encoder and cross-attention LM: shapes, causality, stream locality, the motion
stream's frame differences, and errors."""

import pytest
import torch

from iclr24.papers.lrr import CrossAttentionLM, TwoStreamVideoEncoder, patchify


def test_patchify_matches_a_loop():
    v = torch.randn(2, 3, 3, 8, 8)
    p = patchify(v, 4)
    assert p.shape == (2, 3, 4, 48)
    for i in range(2):
        for j in range(2):
            assert torch.equal(p[1, 2, 2 * i + j], v[1, 2, :, 4 * i:4 * i + 4, 4 * j:4 * j + 4].reshape(-1))


def test_encoder_shapes_and_streams(one_torch_thread):
    torch.manual_seed(0)
    enc = TwoStreamVideoEncoder(24, 8, 32, 1, 1, 4, 12).eval()
    v = torch.rand(2, 12, 3, 24, 24)
    out = enc(v)
    assert out.shape == (2, 2 * 12 * 9, 32)
    spatial = TwoStreamVideoEncoder(24, 8, 32, 1, 0, 4, 12)
    assert spatial(v).shape == (2, 12 * 9, 32) and spatial.tokens_per_frame() == 9
    # the spatial stream attends within a frame: changing frame 5 changes only its tokens
    v2 = v.clone()
    v2[:, 5] = torch.rand(2, 3, 24, 24)
    out2 = enc(v2)
    changed = (out2[:, :108] - out[:, :108]).abs().amax(-1) > 1e-6
    assert changed[:, 45:54].all() and not changed[:, :45].any() and not changed[:, 54:].any()
    # the motion stream mixes frames (attention over time): other frames' motion tokens move
    assert ((out2[:, 108:] - out[:, 108:]).abs().amax(-1) > 1e-6)[:, :45].any()
    # frame order is explicit: reversing the video changes the memory
    assert not torch.allclose(enc(v.flip(1)), out.flip(1), atol=1e-4)


def test_motion_stream_sees_only_differences(one_torch_thread):
    """Two different static videos (every frame equal) give the same motion tokens, since the
    stream reads x_t - x_{t-1} (zero for t = 0)."""
    torch.manual_seed(1)
    enc = TwoStreamVideoEncoder(24, 8, 32, 1, 2, 4, 12).eval()
    a = torch.rand(1, 1, 3, 24, 24).expand(1, 8, 3, 24, 24)
    b = torch.rand(1, 1, 3, 24, 24).expand(1, 8, 3, 24, 24)
    ma, mb = enc(a), enc(b)
    assert torch.allclose(ma[:, 72:], mb[:, 72:], atol=1e-5)
    assert not torch.allclose(ma[:, :72], mb[:, :72], atol=1e-3)
    # adding a constant to every frame leaves the motion stream unchanged
    assert torch.allclose(enc(a + 0.3)[:, 72:], ma[:, 72:], atol=1e-5)


def test_lm_is_causal_and_reads_memory(one_torch_thread):
    torch.manual_seed(2)
    lm = CrossAttentionLM(20, 32, 2, 4, 1, 16).eval()
    tok = torch.randint(0, 20, (2, 10))
    mem = torch.randn(2, 7, 32)
    out = lm(tok, mem)
    assert out.shape == (2, 10, 20)
    tok2 = tok.clone()
    tok2[:, 6] = (tok[:, 6] + 1) % 20
    out2 = lm(tok2, mem)
    assert torch.allclose(out[:, :6], out2[:, :6], atol=1e-6)
    assert not torch.allclose(out[:, 6:], out2[:, 6:], atol=1e-4)
    assert not torch.allclose(lm(tok, torch.randn(2, 7, 32)), out, atol=1e-4)
    # memory order does not matter (cross-attention is a set operation over visual tokens)
    assert torch.allclose(lm(tok, mem[:, torch.randperm(7)]), out, atol=1e-5)
    # cross_every=2: only the second layer has cross-attention
    lm2 = CrossAttentionLM(20, 32, 2, 4, 2, 16)
    assert [blk.cross for blk in lm2.blocks] == [False, True]


def test_errors():
    enc = TwoStreamVideoEncoder(24, 8, 32, 1, 1, 4, 12)
    with pytest.raises(ValueError, match="frame_size 24 must be divisible by patch 5"):
        TwoStreamVideoEncoder(24, 5, 32)
    with pytest.raises(ValueError, match="dim 30 must be divisible by heads 4"):
        TwoStreamVideoEncoder(24, 8, 30)
    with pytest.raises(ValueError, match="motion_layers"):
        TwoStreamVideoEncoder(24, 8, 32, 1, -1)
    with pytest.raises(ValueError, match=r"video must have shape \(B, T, 3, 24, 24\)"):
        enc(torch.rand(2, 12, 3, 16, 16))
    with pytest.raises(ValueError, match="encoder takes 1..12"):
        enc(torch.rand(1, 13, 3, 24, 24))
    with pytest.raises(TypeError, match="video must be a torch.Tensor"):
        enc([[0.0]])
    lm = CrossAttentionLM(20, 32, 2, 4, 1, 16)
    with pytest.raises(ValueError, match="token ids must lie in"):
        lm(torch.tensor([[0, 25]]), None)
    with pytest.raises(ValueError, match="LM takes 1..16"):
        lm(torch.zeros(1, 17, dtype=torch.long), None)
    with pytest.raises(ValueError, match="torch.long"):
        lm(torch.zeros(1, 3), None)
    with pytest.raises(ValueError, match="memory must have shape"):
        lm(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 4, 16))
