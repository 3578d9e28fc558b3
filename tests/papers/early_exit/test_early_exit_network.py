"""EarlyExitNet: exits, frozen backbone, costs; the threshold baseline; bad input."""

import numpy as np
import pytest
import torch
from torch import nn

from iclr24.papers.early_exit import EarlyExitNet, ThresholdExit, residual_mlp_backbone

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _net(depth=4, width=6, head_cost=0.0):
    blocks, head = residual_mlp_backbone(width, depth, 3, torch.Generator().manual_seed(0))
    ims = [nn.Linear(width, 3) for _ in range(depth - 1)]
    return EarlyExitNet(blocks, ims, head, [1.0, 2.0, 3.0, 4.0][:depth], head_cost=head_cost)


def test_forward_all_gives_one_logit_per_exit_and_the_last_is_the_backbone():
    net = _net()
    x = torch.randn(5, 6)
    outs = net.forward_all(x)
    assert len(outs) == net.num_exits == 4 and all(o.shape == (5, 3) for o in outs)
    z = x
    for b in net.blocks:
        z = b(z)
    torch.testing.assert_close(outs[-1], net.final_head(z))
    torch.testing.assert_close(net(x), outs[-1])


def test_backbone_is_frozen_and_stays_in_eval_mode():
    net = _net()
    assert not any(p.requires_grad for p in net.blocks.parameters())
    assert all(p.requires_grad for p in net.exit_heads.parameters())
    net.train()
    assert not net.blocks.training and not net.final_head.training
    assert net.exit_heads.training


def test_exit_costs_closed_form():
    net = _net(head_cost=2.0)            # blocks 1, 2, 3, 4; total backbone 12
    np.testing.assert_allclose(net.exit_costs().numpy(), np.array([1, 3, 6, 12]) / 12)
    # overhead 0.5 per IM, paid by every later exit: the final pays all three
    np.testing.assert_allclose(net.exit_costs(0.5).numpy(),
                               np.array([1.5, 4.0, 7.5, 13.5]) / 12)
    with pytest.raises(ValueError, match="exit_overhead"):
        net.exit_costs([0.1, 0.2])


def test_block_costs_of_the_wrong_length_and_other_bad_input():
    blocks, head = residual_mlp_backbone(4, 3, 2)
    ims = [nn.Linear(4, 2), nn.Linear(4, 2)]
    with pytest.raises(ValueError, match="block_costs"):
        EarlyExitNet(blocks, ims, head, [1.0, 1.0])
    with pytest.raises(ValueError, match="block_costs"):
        EarlyExitNet(blocks, ims, head, [1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="exit_heads"):
        EarlyExitNet(blocks, ims[:1], head, [1.0] * 3)
    with pytest.raises(ValueError, match="width"):
        residual_mlp_backbone(0, 3, 2)


def test_threshold_exit_known_answers():
    net = _net()
    x = torch.randn(40, 6)
    assert (ThresholdExit(net, 0.0).predict(x)[1] == 0).all()
    _, exits, probs = ThresholdExit(net, float("inf")).predict(x)
    assert (exits == 3).all()
    with torch.no_grad():
        outs = net.forward_all(x)
    np.testing.assert_allclose(probs, torch.softmax(outs[-1], 1).numpy(), rtol=1e-5)
    t = 0.5
    conf = np.stack([torch.softmax(o, 1).amax(1).numpy() for o in outs[:-1]], 1)
    want = [next((l for l in range(3) if conf[i, l] >= t), 3) for i in range(40)]
    th = ThresholdExit(net, t, exit_overhead=0.25)
    _, exits, _ = th.predict(x)
    assert exits.tolist() == want
    assert th.average_cost(exits) == pytest.approx(float(net.exit_costs(0.25)[exits].mean()))
    with pytest.raises(ValueError, match="threshold"):
        ThresholdExit(net, -0.1)
