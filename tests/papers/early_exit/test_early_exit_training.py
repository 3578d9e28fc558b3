"""Oracle exits, gate targets and weights, the IM losses, warm-up and the trainer's phases."""


import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from iclr24.papers.early_exit import (
    EarlyExitNet,
    JEIDNNTrainer,
    default_gates,
    gate_loss,
    gate_targets,
    oracle_exit,
    positive_weights,
    residual_mlp_backbone,
    warmup_exit_heads,
    weighted_im_loss,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 6), st.integers(2, 6), st.floats(0, 3), st.integers(0, 10**6))
def test_oracle_exit_matches_brute_force(B, L, lam, seed):
    rng = np.random.default_rng(seed)
    ce = rng.exponential(size=(B, L))
    costs = np.sort(rng.uniform(0, 1, L))
    costs[-1] = 1.0
    got = oracle_exit(torch.tensor(ce), torch.tensor(costs), lam).tolist()
    for b in range(B):
        best = min(range(L), key=lambda l: (ce[b, l] + lam * costs[l], l))
        assert got[b] == best


def test_oracle_ties_go_to_the_earliest_exit_and_lambda_zero_is_min_ce():
    ce = torch.tensor([[1.0, 1.0, 1.0], [0.5, 0.1, 0.3]])
    assert oracle_exit(ce, [0.2, 0.6, 1.0], 0.0).tolist() == [0, 1]
    assert oracle_exit(ce, [0.2, 0.6, 1.0], 10.0).tolist() == [0, 0]


def test_oracle_rejects_bad_input():
    with pytest.raises(ValueError, match="lam"):
        oracle_exit(torch.zeros(2, 3), [0.1, 0.5, 1.0], -0.1)
    with pytest.raises(ValueError, match="costs"):
        oracle_exit(torch.zeros(2, 3), [0.5, 1.0], 0.5)


def test_gate_targets_by_scheme():
    oracle = torch.tensor([0, 2, 3])   # 3 gates, exit 3 = the final head
    t, m = gate_targets(oracle, 3, "exit_subsequent")
    assert t.tolist() == [[1, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert m.tolist() == [[1, 1, 1]] * 3
    t, m = gate_targets(oracle, 3, "ignore_subsequent")
    assert m.tolist() == [[1, 0, 0], [1, 1, 1], [1, 1, 1]]
    with pytest.raises(ValueError, match="gate_scheme"):
        gate_targets(oracle, 3, "other")


def test_positive_weights_are_the_capped_official_ratios():
    oracle = torch.tensor([0] * 2 + [1] * 5 + [3] * 13)   # 20 samples, 3 gates
    w = positive_weights(oracle, 3, cap=5.0)
    # gate 0: (20-2)/2 = 9 -> 5; gate 1: 15/5 = 3; gate 2: count 0 -> 0.1 -> 199.9 -> 5
    torch.testing.assert_close(w, torch.tensor([5.0, 3.0, 5.0]))


def test_gate_loss_is_weighted_bce():
    z = torch.tensor([[0.3, -1.0], [2.0, 0.5]])
    t = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    m = torch.ones_like(t)
    w = torch.tensor([2.0, 4.0])
    bce = -(t * torch.log(torch.sigmoid(z)) + (1 - t) * torch.log(1 - torch.sigmoid(z)))
    expected = (bce * torch.tensor([[2.0, 1.0], [1.0, 4.0]])).mean()
    torch.testing.assert_close(gate_loss(z, t, m, w), expected)


def _ce_and_P(seed=0):
    gen = torch.Generator().manual_seed(seed)
    logits = torch.randn(6, 4, 5, generator=gen, requires_grad=True)   # (B, G, C)
    y = torch.randint(0, 5, (6,), generator=gen)
    ce = torch.stack([nn.functional.cross_entropy(logits[:, l], y, reduction="none")
                      for l in range(4)], 1)
    P = torch.rand(6, 4, generator=gen) * 0.5 + 0.05
    return logits, ce, P


def test_official_weighted_loss_is_the_plain_ce_sum_in_value_and_gradient():
    logits, ce, P = _ce_and_P()
    plain = ce.mean()   # mean over (B, G) of the unweighted CEs
    (g_plain,) = torch.autograd.grad(plain, logits, retain_graph=True)
    official = weighted_im_loss(ce, P, "official")
    (g_off,) = torch.autograd.grad(official, logits, retain_graph=True)
    torch.testing.assert_close(official, plain)
    torch.testing.assert_close(g_off, g_plain)


def test_intended_weighted_loss_keeps_the_value_but_not_the_gradient():
    logits, ce, P = _ce_and_P()
    (g_plain,) = torch.autograd.grad(ce.mean(), logits, retain_graph=True)
    intended = weighted_im_loss(ce, P, "intended")
    (g_int,) = torch.autograd.grad(intended, logits, retain_graph=True)
    torch.testing.assert_close(intended, ce.mean())       # the rescaling keeps the size
    assert not torch.allclose(g_int, g_plain, atol=1e-4)
    # its gradient is that of sum_l w_l CE_l with constant weights w_l = P_l * ratio
    w = (P * (ce.sum(1, keepdim=True) / (P * ce).sum(1, keepdim=True))).detach()
    (g_const,) = torch.autograd.grad((w * ce).mean(), logits)
    torch.testing.assert_close(g_int, g_const)


def test_weighted_loss_with_every_gate_closed_is_zero_not_nan():
    _logits, ce, _ = _ce_and_P()
    for mode in ("intended", "official"):
        assert weighted_im_loss(ce, torch.zeros_like(ce), mode).item() == 0.0
    with pytest.raises(ValueError, match="im_loss"):
        weighted_im_loss(ce, ce.detach(), "weighted")


def _toy_net(seed=0, depth=3, width=8):
    gen = torch.Generator().manual_seed(seed)
    blocks, head = residual_mlp_backbone(width, depth, 3, gen)
    ims = [nn.Linear(width, 3) for _ in range(depth - 1)]
    with torch.no_grad():
        for im in ims:
            im.weight.uniform_(-0.3, 0.3, generator=gen)
            im.bias.zero_()
    return EarlyExitNet(blocks, ims, head, [b.macs for b in blocks], head_cost=width * 3)


def _toy_data(n=96, width=8, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = (rng.normal(size=(n, width)) + 2 * np.eye(3, width)[y]).astype(np.float32)
    return X, y


def test_gate_phase_alone_trains_gates_only_and_the_backbone_never_moves():
    net = _toy_net()
    X, y = _toy_data()
    backbone = [p.clone() for p in net.blocks.parameters()]
    ims = [p.clone() for p in net.exit_heads.parameters()]
    gates = default_gates(2, seed=0)
    g0 = [p.clone() for g in gates for p in g.parameters()]
    # the first switch (batch 0) enters the gate phase; a huge period never leaves it
    JEIDNNTrainer(net, gates, 0.5, warmup_epochs=0, epochs=2, batch_size=16,
                  alternate_every=10**6).fit(X, y, X, y)
    assert all(torch.equal(a, b) for a, b in zip(backbone, net.blocks.parameters()))
    assert all(torch.equal(a, b) for a, b in zip(ims, net.exit_heads.parameters()))
    assert not all(torch.equal(a, b) for a, b in zip(g0, (p for g in gates for p in g.parameters())))


def test_alternation_trains_ims_and_predict_returns_consistent_outputs():
    net = _toy_net()
    X, y = _toy_data()
    ims = [p.clone() for p in net.exit_heads.parameters()]
    tr = JEIDNNTrainer(net, default_gates(2), 0.5, warmup_epochs=0, epochs=2, batch_size=16,
                       alternate_every=2).fit(X, y, X, y)
    assert not all(torch.equal(a, b) for a, b in zip(ims, net.exit_heads.parameters()))
    pred, exits, probs = tr.predict(X)
    assert pred.shape == exits.shape == (96,) and probs.shape == (96, 3)
    np.testing.assert_allclose(probs.sum(1), 1.0, rtol=1e-6)
    np.testing.assert_array_equal(pred, probs.argmax(1))
    assert tr.average_cost(exits) == pytest.approx(float(tr.costs.numpy()[exits].mean()))
    assert len(tr.history) == 2


def test_warmup_restores_each_ims_best_state_and_improves_it():
    net = _toy_net()
    X, y = _toy_data()
    with torch.no_grad():
        before = [float((z.argmax(1).numpy() == y).mean()) for z in net.forward_all(torch.tensor(X))]
    epochs = warmup_exit_heads(net, X, y, X, y, max_epochs=8, batch_size=16,
                               generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        after = [float((z.argmax(1).numpy() == y).mean()) for z in net.forward_all(torch.tensor(X))]
    assert len(epochs) == 2 and all(1 <= e <= 8 for e in epochs)
    assert all(a >= b for a, b in zip(after[:-1], before[:-1]))
    assert after[-1] == before[-1]   # the frozen final head is untouched


def test_trainer_rejects_bad_arguments():
    net = _toy_net()
    with pytest.raises(ValueError, match="lam"):
        JEIDNNTrainer(net, default_gates(2), -1.0)
    with pytest.raises(ValueError, match="gates"):
        JEIDNNTrainer(net, default_gates(3), 0.5)
    with pytest.raises(ValueError, match="im_loss"):
        JEIDNNTrainer(net, default_gates(2), 0.5, im_loss="weighted")
    with pytest.raises(ValueError, match="alternate_every"):
        JEIDNNTrainer(net, default_gates(2), 0.5, alternate_every=0)
    with pytest.raises(TypeError, match="EarlyExitNet"):
        JEIDNNTrainer(nn.Linear(2, 2), default_gates(2), 0.5)
    tr = JEIDNNTrainer(net, default_gates(2), 0.5)
    with pytest.raises(ValueError, match="exit_index"):
        tr.average_cost(np.array([0, 5]))


def test_same_seed_same_model():
    X, y = _toy_data()
    outs = []
    for _ in range(2):
        net = _toy_net()
        tr = JEIDNNTrainer(net, default_gates(2, seed=3), 0.25, warmup_epochs=2, epochs=2,
                           batch_size=16, seed=5).fit(X, y, X, y)
        outs.append(tr.predict(X)[2])
    np.testing.assert_array_equal(*outs)
