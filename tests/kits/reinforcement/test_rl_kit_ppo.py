import pytest
import torch

from iclr24.kits.reinforcement import clipped_policy_loss, clipped_value_loss, gae


def test_gae_on_a_hand_computed_episode():
    # three steps, the episode ends after step 1; step 2 starts a new one and is bootstrapped
    r = torch.tensor([1.0, 2.0, 3.0])
    v = torch.tensor([0.5, 1.0, 1.5])
    d = torch.tensor([0.0, 1.0, 0.0])
    g, lam, last = 0.9, 0.8, 2.0
    d2 = 3.0 + g * last - 1.5                 # δ_2 (bootstrapped with V(s_3) = 2)
    d1 = 2.0 - 1.0                             # δ_1 (terminal: no bootstrap)
    d0 = 1.0 + g * 1.0 - 0.5                   # δ_0
    a2, a1 = d2, d1                            # the episode boundary cuts the recursion
    a0 = d0 + g * lam * a1
    adv, ret = gae(r, v, d, last, gamma=g, lam=lam)
    assert torch.allclose(adv, torch.tensor([a0, a1, a2]))
    assert torch.allclose(ret, adv + v)


def test_gae_limits():
    r = torch.tensor([1.0, 0.0, 2.0, 1.0])
    v = torch.tensor([0.3, -0.2, 0.7, 0.1])
    d = torch.zeros(4)
    g = 0.95
    adv1, ret1 = gae(r, v, d, 0.0, gamma=g, lam=1.0)      # λ = 1: Monte Carlo returns
    mc = torch.tensor([sum(g ** k * r[t + k] for k in range(4 - t)) for t in range(4)])
    assert torch.allclose(ret1, mc)
    adv0, _ = gae(r, v, d, 0.0, gamma=g, lam=0.0)         # λ = 0: one-step TD errors
    nxt = torch.cat([v[1:], torch.zeros(1)])
    assert torch.allclose(adv0, r + g * nxt - v)
    par, _ = gae(torch.stack([r, r], 1), torch.stack([v, v], 1), torch.zeros(4, 2), 0.0,
                 gamma=g, lam=1.0)                         # (T, N) environments
    assert torch.allclose(par[:, 0], adv1) and torch.allclose(par[:, 1], adv1)
    with pytest.raises(ValueError, match="share a shape"):
        gae(r, v[:3], d, 0.0)
    with pytest.raises(ValueError, match="gamma"):
        gae(r, v, d, 0.0, gamma=1.5)


def test_clipped_policy_loss_by_hand_and_its_gradient():
    old = torch.zeros(3)
    new = torch.log(torch.tensor([1.1, 1.5, 0.5])).requires_grad_()
    adv = torch.tensor([1.0, 1.0, -1.0])
    loss = clipped_policy_loss(new, old, adv, clip=0.2)
    # min(ρA, clip(ρ)A): 1.1 (inside), 1.2 (clipped above), -0.8 (clipped: min(-0.5, -0.8))
    assert torch.isclose(loss, -torch.tensor((1.1 + 1.2 - 0.8) / 3))
    loss.backward()
    assert new.grad[1] == 0 and new.grad[2] == 0 and new.grad[0] != 0  # clipped terms are flat


def test_clipped_value_loss_by_hand():
    v = torch.tensor([1.0, 3.0])
    old = torch.tensor([0.9, 1.0])
    ret = torch.tensor([2.0, 2.0])
    # row 0: plain 1.0, clipped (0.9 + 0.1 - 2)^2 = 1.0; row 1: plain 1.0, clipped (1.2 - 2)^2
    # = 0.64, so the max is 1.0 in both rows: ½ · mean(1, 1)
    assert torch.isclose(clipped_value_loss(v, old, ret, clip=0.2), torch.tensor(0.5))
    assert torch.isclose(clipped_value_loss(v, old, ret, clip=None), torch.tensor(0.5))
    v2 = torch.tensor([2.5])
    assert torch.isclose(clipped_value_loss(v2, torch.tensor([0.0]), torch.tensor([0.0]),
                                            clip=0.2), torch.tensor(0.5 * 6.25))
