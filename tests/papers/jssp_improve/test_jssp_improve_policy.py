"""The GIN + DGHAN policy: move distribution equals the masked full-matrix softmax, batch
invariance in eval mode, gradients reach both modules, argument errors."""

import pytest
import torch

from iclr24.papers.jssp_improve import ImprovementEnv, L2SPolicy, random_instance


@pytest.fixture
def state():
    env = ImprovementEnv([random_instance(5, 4, seed=s) for s in range(3)], horizon=5)
    return env.reset()


def test_log_probs_equal_masked_full_softmax(state, one_torch_thread):
    batch, moves = state
    torch.manual_seed(0)
    pol = L2SPolicy(hidden=16, gin_layers=2, gat_layers=2, heads=2, policy_layers=2).eval()
    lps = pol(batch, moves)
    z = pol.embed(batch)
    ptr = batch.ptr.tolist()
    for g, (ms, lp) in enumerate(zip(moves, lps)):
        zg = z[ptr[g]:ptr[g + 1]]
        full = zg @ zg.T  # the official n_nodes x n_nodes score matrix
        mask = torch.ones_like(full, dtype=torch.bool)
        for u, v in ms:
            mask[u, v] = False
        flat = torch.log_softmax(full.masked_fill(mask, float("-inf")).reshape(-1), 0)
        ref = torch.stack([flat[u * full.shape[0] + v] for u, v in ms])
        torch.testing.assert_close(lp, ref)
        assert abs(float(lp.detach().exp().sum()) - 1) < 1e-5


def test_batch_invariance_in_eval_mode(one_torch_thread):
    insts = [random_instance(5, 4, seed=s) for s in range(3)]
    pol = L2SPolicy(hidden=16, gin_layers=2, gat_layers=2).eval()
    b1, m1 = ImprovementEnv(insts, horizon=1).reset()
    b2, m2 = ImprovementEnv(insts[::-1], horizon=1).reset()
    lp1, lp2 = pol(b1, m1), pol(b2, m2)[::-1]
    for a, b in zip(lp1, lp2):
        torch.testing.assert_close(a, b)


def test_act_greedy_sampling_and_gradients(state, one_torch_thread):
    batch, moves = state
    pol = L2SPolicy(hidden=16, gin_layers=2, gat_layers=2, policy_layers=2).eval()
    acts, lp = pol.act(batch, moves, greedy=True)
    for a, ms, lps in zip(acts, moves, pol(batch, moves)):
        assert a == tuple(ms[int(lps.argmax())])
    pol.train()
    g = torch.Generator().manual_seed(1)
    acts, lp = pol.act(batch, moves, generator=g)
    assert all(a in ms for a, ms in zip(acts, moves)) and lp.shape == (3,)
    (-lp.sum()).backward()
    assert pol.gin[0].nn[0].weight.grad.abs().sum() > 0
    assert pol.gat[0].job.lin.weight.grad.abs().sum() > 0
    assert pol.gat[0].mch.lin.weight.grad.abs().sum() > 0


def test_no_move_graph_gets_none(state):
    batch, moves = state
    moves = [moves[0], [], moves[2]]
    acts, lp = L2SPolicy(hidden=8, gin_layers=1, gat_layers=1, policy_layers=1).act(batch, moves)
    assert acts[1] is None and float(lp[1]) == 0.0


def test_policy_errors(state):
    with pytest.raises(ValueError, match="hidden"):
        L2SPolicy(hidden=0)
    with pytest.raises(ValueError, match="dropout"):
        L2SPolicy(dropout=1.5)
    batch, moves = state
    with pytest.raises(ValueError, match="one list"):
        L2SPolicy(hidden=8)(batch, moves[:1])
