"""n-step REINFORCE (loss against a hand computation, a tiny deterministic run) and improve."""

import copy

import numpy as np
import pytest
import torch

from iclr24.papers.jssp_improve import (
    L2SPolicy,
    ReinforceConfig,
    dispatch,
    improve,
    random_instance,
    train_n_step_reinforce,
)
from iclr24.papers.jssp_improve.training import _reinforce_loss


def test_reinforce_loss_matches_hand_computation():
    rewards = [np.array([1.0, 0.0]), np.array([0.0, 0.0]), np.array([2.0, 3.0])]
    lp = [torch.tensor([-1.0, -2.0]), torch.tensor([-0.5, -1.0]), torch.tensor([-0.2, -0.3])]
    dones = [np.array([False, False]), np.array([False, True]), np.array([False, False])]
    loss = _reinforce_loss(rewards, lp, dones, gamma=1.0)
    eps = np.finfo(np.float32).eps
    r0 = np.array([3.0, 2.0, 2.0])  # returns of instance 0
    n0 = (r0 - r0.mean()) / (r0.std() + eps)
    l0 = -(np.array([-1.0, -0.5, -0.2]) * n0).sum()
    r1 = np.array([3.0, 3.0])  # instance 1, step 1 left out (no move)
    n1 = (r1 - r1.mean()) / (r1.std() + eps)
    l1 = -(np.array([-2.0, -0.3]) * n1).sum()
    assert float(loss) == pytest.approx((l0 + l1) / 2, rel=1e-5)


def test_training_is_deterministic_and_updates(one_torch_thread):
    cfg = ReinforceConfig(n_jobs=6, n_machines=4, batch_size=4, horizon=8, n_step=4,
                          episodes=2, lr=1e-3)

    def run():
        torch.manual_seed(0)
        pol = L2SPolicy(hidden=8, gin_layers=1, gat_layers=1, policy_layers=1)
        before = [p.detach().clone() for p in pol.parameters()]
        log = train_n_step_reinforce(pol, cfg, seed=5)
        changed = any(not torch.equal(a, b) for a, b in zip(before, pol.parameters()))
        return log, changed, [p.detach() for p in pol.parameters()]

    (log1, ch1, p1), (log2, _, p2) = run(), run()
    assert len(log1) == 2 and ch1 and log1 == log2
    assert all(torch.equal(a, b) for a, b in zip(p1, p2))
    with pytest.raises(ValueError, match="gamma"):
        ReinforceConfig(gamma=1.5)
    with pytest.raises(ValueError, match="episodes"):
        ReinforceConfig(episodes=0)


def test_improve_keeps_the_best(one_torch_thread):
    insts = [random_instance(5, 4, seed=s) for s in range(3)]
    pol = L2SPolicy(hidden=8, gin_layers=1, gat_layers=1, policy_layers=1)
    res = improve(insts, pol, 15, seed=0)
    for x, (sched, c) in zip(insts, res):
        assert c <= dispatch(x).makespan() and sched.makespan() == c
    _s0, c0 = improve(insts[0], pol, 0)
    assert c0 == dispatch(insts[0]).makespan()
    assert pol.training  # the caller's policy is untouched ...
    before = {k: v.clone() for k, v in pol.state_dict().items()}
    improve(insts, pol, 5, batch_norm_stats="batch")
    improve(insts, pol, 5, batch_norm_stats="running")
    assert all(torch.equal(before[k], v) for k, v in pol.state_dict().items())  # ... buffers too
    with pytest.raises(ValueError, match="batch_norm_stats"):
        improve(insts[0], pol, 1, batch_norm_stats="eval")
    with pytest.raises(ValueError, match="steps"):
        improve(insts[0], pol, -1)
    with pytest.raises(TypeError, match="L2SPolicy"):
        improve(insts[0], object(), 1)


def test_move_entropy_ratio_known_answers(one_torch_thread):
    from iclr24.papers.jssp_improve import ImprovementEnv, move_entropy_ratio

    insts = [random_instance(5, 4, seed=s) for s in range(4)]
    pol = L2SPolicy(hidden=8, gin_layers=1, gat_layers=1, policy_layers=1)
    with torch.no_grad():  # z = 0: every move scores 0, the uniform (random N5) policy
        pol.head[-1][2].weight.zero_()
        pol.head[-1][2].bias.zero_()
    assert move_entropy_ratio(pol, insts) == pytest.approx(1.0, abs=1e-6)
    # a trained-looking policy: compare with H / log K computed from its log-probabilities
    torch.manual_seed(1)
    pol = L2SPolicy(hidden=8, gin_layers=1, gat_layers=1, policy_layers=1)
    with torch.no_grad():
        pol.head[-1][2].weight.mul_(30.0)
    batch, moves = ImprovementEnv(insts, horizon=0).reset()
    roll = copy.deepcopy(pol).train()  # batch statistics, dropout 0
    with torch.no_grad():
        lps = [lp for lp in roll(batch, moves) if len(lp) > 1]
    want = np.mean([float(-(lp.exp() * lp).sum() / np.log(len(lp))) for lp in lps])
    got = move_entropy_ratio(pol, insts)
    assert got == pytest.approx(want, rel=1e-6) and got < 0.95
    assert move_entropy_ratio(pol, insts, batch_norm_stats="running") != pytest.approx(got)
    # one job: no machine conflicts, no N5 move anywhere -> nothing to measure
    assert np.isnan(move_entropy_ratio(pol, [random_instance(1, 4, seed=0)]))
    with pytest.raises(TypeError, match="policy"):
        move_entropy_ratio(object(), insts)
    with pytest.raises(ValueError, match="batch_norm_stats"):
        move_entropy_ratio(pol, insts, batch_norm_stats="eval")
