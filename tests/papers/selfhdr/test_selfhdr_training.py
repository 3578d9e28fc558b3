"""AHDRNet, the scene generator and the two-stage trainer: Y_stru computed once with S frozen,
noise only on the reference in stage 2, bad input."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr24.kits.frozen_standins import is_frozen
from iclr24.papers.selfhdr import (
    AHDRNet,
    SelfHDRConfig,
    SelfHDRTrainer,
    align_dense,
    align_to_reference,
    make_hdr_scenes,
    merge_aligned,
    network_inputs,
)

TINY = SelfHDRConfig(channels=4, dense_layers=1, growth=2, blocks=1, steps=3, batch_size=2,
                     patch_size=8)


@pytest.fixture(scope="module")
def scenes():
    return make_hdr_scenes(4, 16, seed=0)


def test_scenes_shapes_ranges_and_determinism(scenes):
    assert scenes.ldrs.shape == (4, 3, 3, 16, 16) and scenes.gt.shape == (4, 3, 16, 16)
    assert scenes.ldrs.min() >= 0 and scenes.ldrs.max() <= 1
    assert np.allclose(scenes.ldrs * 255, np.round(scenes.ldrs * 255), atol=1e-4)  # 8-bit
    assert scenes.motion_mask.any(axis=(1, 2)).all()
    assert np.all(np.abs(scenes.camera_shifts[:, [0, 2]]).max(axis=2) >= 1)
    assert np.all(np.abs(scenes.camera_shifts).max(axis=2) <= 3)
    assert np.isclose(scenes.gt.max(axis=(1, 2, 3)), 0.9).any()  # [0, 1], Kalantari's scale
    assert scenes.gt.max() <= 0.9 + 1e-6
    again = make_hdr_scenes(4, 16, seed=0)
    assert np.array_equal(again.ldrs, scenes.ldrs) and np.array_equal(again.gt, scenes.gt)


def test_reference_ldr_is_the_ground_truth_exposed():
    s = make_hdr_scenes(2, 32, seed=1, noise=0.0)
    expected = np.round(np.clip(s.gt * 4, 0, 1) ** (1 / 2.2) * 255) / 255  # t_ref = 4, no noise
    assert np.allclose(s.ldrs[:, 1], expected, atol=1e-6)


def test_ahdrnet_shapes_range_and_gradients():
    torch.manual_seed(0)
    net = AHDRNet(channels=4, dense_layers=2, growth=2, blocks=2, out_scale=4.0)
    x = [torch.rand(2, 6, 10, 12, requires_grad=True) for _ in range(3)]
    y = net(*x)
    assert y.shape == (2, 3, 10, 12) and 0 <= float(y.detach().min()) <= float(y.detach().max()) <= 4
    y.sum().backward()
    assert all(t.grad.abs().sum() > 0 for t in x)
    with pytest.raises(ValueError, match=r"\(B, 6, H, W\)"):
        net(torch.rand(2, 3, 8, 8), x[1], x[2])
    with pytest.raises(ValueError, match="share one shape"):
        net(torch.rand(2, 6, 8, 8), torch.rand(2, 6, 9, 8), torch.rand(2, 6, 8, 8))
    with pytest.raises(ValueError, match="channels"):
        AHDRNet(channels=0)


def test_network_inputs_concat_hdr_and_ldr(scenes):
    x1, x2, x3 = network_inputs(scenes.ldrs, scenes.times)
    ldr = torch.as_tensor(scenes.ldrs)
    assert torch.allclose(x1[:, :3], ldr[:, 0] ** 2.2)
    assert torch.allclose(x2[:, 3:], ldr[:, 1]) and torch.allclose(x3[:, :3], ldr[:, 2] ** 2.2 / 16)
    with pytest.raises(ValueError, match=r"\(N, 3, 3, H, W\)"):
        network_inputs(scenes.ldrs[:, :2], scenes.times)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        network_inputs(scenes.ldrs * 255, scenes.times)
    with pytest.raises(ValueError, match="times\\[0\\]"):
        network_inputs(scenes.ldrs, (0.25, 1.0, 4.0))


class _Recorder(nn.Module):
    """A stand-in network that records what it is fed and counts its calls."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.tensor(0.1))
        self.seen = []

    def forward(self, x1, x2, x3):
        self.seen.append((x1.detach().clone(), x2.detach().clone(), x3.detach().clone()))
        return torch.sigmoid(self.w) * x2[:, :3] + 1e-3


def test_structure_labels_are_computed_once_with_s_frozen(scenes, one_torch_thread):
    trainer = SelfHDRTrainer(TINY)
    y_color, aligned = trainer.color_labels(scenes.ldrs)
    s_net = trainer.fit_stage1(scenes.ldrs, y_color)
    calls = []
    s_net.register_forward_hook(lambda *a: calls.append(1))
    y_stru = trainer.make_structure_labels(s_net, aligned)
    assert is_frozen(s_net) and not y_stru.requires_grad and y_stru.grad_fn is None
    assert len(calls) == 1  # one batched pass over the training set
    before = y_stru.clone()
    s_params = [p.clone() for p in s_net.parameters()]
    trainer.fit_stage2(scenes.ldrs, y_color, y_stru)
    assert len(calls) == 1  # stage 2 never runs S
    assert torch.equal(y_stru, before)
    assert all(torch.equal(a, b) for a, b in zip(s_params, s_net.parameters()))
    with pytest.raises(ValueError, match="S frozen"):
        trainer.fit_stage2(scenes.ldrs, y_color, y_stru.clone().requires_grad_(True))


def test_stage2_noise_only_on_reference_and_h2_recomputed(scenes, monkeypatch):
    trainer = SelfHDRTrainer(SelfHDRConfig(steps=2, batch_size=4, patch_size=None,
                                           noise_std=0.05))
    rec = _Recorder()
    monkeypatch.setattr(trainer, "new_network", lambda: rec)
    y = torch.as_tensor(scenes.gt)
    trainer.fit_stage2(scenes.ldrs, y, y.clone())
    x1, x2, x3 = network_inputs(scenes.ldrs, scenes.times)
    for b1, b2, b3 in rec.seen:
        # each recorded batch is some permutation of training scenes; find them by x1
        idx = [int(np.argmin([(b - x).abs().sum() for x in x1])) for b in b1]
        assert torch.equal(b1, x1[idx]) and torch.equal(b3, x3[idx])
        assert not torch.allclose(b2[:, 3:], x2[idx, 3:])  # the reference LDR got noise
        assert torch.allclose(b2[:, :3], b2[:, 3:] ** 2.2 / 4)  # and H_2 follows it (t_ref = 4)
    rec.seen.clear()
    trainer.fit_stage1(scenes.ldrs, y)  # stage 1: no noise
    for b1, b2, b3 in rec.seen:
        idx = [int(np.argmin([(b - x).abs().sum() for x in x1])) for b in b1]
        assert torch.equal(b2, x2[idx])


def test_training_reduces_the_stage1_loss(scenes, one_torch_thread):
    from iclr24.papers.selfhdr import selfhdr_stage1_loss

    cfg = SelfHDRConfig(channels=4, dense_layers=1, growth=2, blocks=1, steps=60,
                        batch_size=4, patch_size=None)
    trainer = SelfHDRTrainer(cfg)
    y_color, _ = trainer.color_labels(scenes.ldrs)
    ldr = torch.as_tensor(scenes.ldrs)

    def loss(net):
        out = trainer.predict(net, scenes.ldrs)
        return float(selfhdr_stage1_loss(out, y_color, ldr[:, 1], ldr[:, 1] ** 2.2 / 4))

    assert loss(trainer.fit_stage1(scenes.ldrs, y_color)) < 0.8 * loss(trainer.new_network())


def test_config_and_trainer_reject_bad_input(scenes):
    with pytest.raises(ValueError, match="> 0"):
        SelfHDRConfig(times=(0.0, 1.0, 4.0))
    with pytest.raises(ValueError, match="times\\[0\\]"):
        SelfHDRConfig(times=(0.25, 1.0, 4.0))
    with pytest.raises(ValueError, match="steps"):
        SelfHDRConfig(steps=0)
    with pytest.raises(ValueError, match="alignment must be one of"):
        SelfHDRConfig(alignment="flow")
    with pytest.raises(TypeError, match="SelfHDRConfig"):
        SelfHDRTrainer({"steps": 3})
    trainer = SelfHDRTrainer(TINY)
    with pytest.raises(ValueError, match="do not match"):
        trainer.fit_stage1(scenes.ldrs, torch.zeros(3, 3, 16, 16))
    with pytest.raises(ValueError, match="size"):
        make_hdr_scenes(2, 8)


@pytest.mark.parametrize("alignment, align", [("dense", align_dense),
                                              ("global", align_to_reference)])
def test_color_labels_merge_the_frames_aligned_as_configured(scenes, alignment, align):
    from dataclasses import replace

    y_color, aligned = SelfHDRTrainer(replace(TINY, alignment=alignment)).color_labels(scenes.ldrs)
    want = np.stack([align(s, TINY.times)[0] for s in scenes.ldrs])
    assert np.allclose(aligned.numpy(), want, atol=1e-6)
    assert np.allclose(y_color.numpy(), merge_aligned(want, TINY.times), atol=1e-6)
