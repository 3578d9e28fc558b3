"""PRESMemory: gamma = 0 is TGNMemory exactly, the fusion formula, learnable gamma, errors."""

import copy

import pytest
import torch
from torch_geometric.nn.models import TGNMemory
from torch_geometric.nn.models.tgn import IdentityMessage, LastAggregator

from iclr24.papers.pres import PRESMemory, make_drifting_stream, pending_messages

MSG, DIM = 8, 6


@pytest.fixture(scope="module")
def stream():
    return make_drifting_stream(num_users=20, num_items=10, num_events=400, num_clusters=3,
                                seed=1)


def _tgn(num_nodes=30, seed=0):
    torch.manual_seed(seed)
    return TGNMemory(num_nodes, MSG, DIM, DIM, IdentityMessage(MSG, DIM, DIM), LastAggregator())


def _feed(memory, data, batch=40, read=True):
    """Run the TGN training protocol's memory calls; returns the memories read per batch."""
    reads = []
    for s in range(0, data.num_events, batch):
        src, dst = data.src[s:s + batch], data.dst[s:s + batch]
        if read:
            reads.append(memory(torch.cat([src, dst]).unique())[0].detach().clone())
        memory.update_state(src, dst, data.t[s:s + batch], data.msg[s:s + batch])
    return reads


def test_gamma_zero_reproduces_tgn_memory_exactly(stream, one_torch_thread):
    plain = _tgn()
    pres = PRESMemory(copy.deepcopy(plain), gamma=0.0)
    with torch.no_grad():
        r_plain, r_pres = _feed(plain, stream), _feed(pres, stream)
        assert all(torch.equal(a, b) for a, b in zip(r_plain, r_pres))
        assert torch.equal(plain.memory, pres.base.memory)
        plain.eval(), pres.eval()  # the flush of pending messages
        assert torch.equal(plain.memory, pres.base.memory)
        _feed(plain, stream[:80], read=False), _feed(pres, stream[:80], read=False)
        assert torch.equal(plain.memory, pres.base.memory)
    assert pres.stats.count.sum() > 0  # statistics are still recorded


def test_stored_state_is_the_fusion_of_prediction_and_update(stream, one_torch_thread):
    """store_fused=True (this project's variant), one batch by hand:
    s = gamma (s_prev + mu) + (1 - gamma) s_til where the node has history
    and pending messages; the plain update elsewhere; delta recorded = s - s_prev."""
    gamma = 0.7
    pres = PRESMemory(_tgn(), gamma=gamma, store_fused=True)
    with torch.no_grad():
        _feed(pres, stream[:200], read=False)
        shadow = copy.deepcopy(pres.base)  # same state, same stored messages
        src, dst = stream.src[200:240], stream.dst[200:240]
        t, msg = stream.t[200:240], stream.msg[200:240]
        n_id = torch.cat([src, dst]).unique()
        prev = pres.base.memory[n_id].clone()
        mask = pending_messages(pres.base, n_id)
        count_before = pres.stats.count[n_id].clone()
        mean_before = pres.stats.mean[n_id].clone()
        read = pres(n_id)[0]
        pres.update_state(src, dst, t, msg)
        shadow.update_state(src, dst, t, msg)
        s_til = shadow.memory[n_id]
        fused = gamma * (prev + mean_before) + (1 - gamma) * s_til
        use = (mask & (count_before > 0))[:, None]
        expected = torch.where(use, fused, s_til)
    assert use.any() and (~use).any()
    torch.testing.assert_close(pres.base.memory[n_id], expected)
    torch.testing.assert_close(read, expected)  # what forward returned is what was stored
    torch.testing.assert_close(pres.stats.count[n_id], count_before + mask.float())


def test_eval_mode_flush_and_eval_updates_are_corrected(stream, one_torch_thread):
    pres = PRESMemory(_tgn(), gamma=0.5, store_fused=True)
    with torch.no_grad():
        _feed(pres, stream[:200], read=False)
        before = pres.stats.count.sum().item()
        pending = pending_messages(pres.base, torch.arange(pres.num_nodes)).sum().item()
        pres.eval()
        assert pres.stats.count.sum().item() == before + pending
        assert not pending_messages(pres.base, torch.arange(pres.num_nodes)).any()
        n_id = torch.arange(pres.num_nodes)
        stored = pres.base.memory.clone()
        assert torch.equal(pres(n_id)[0], stored)  # eval reads the stored (fused) memory
        _feed(pres, stream[200:240], read=False)
        assert not torch.equal(pres.base.memory, stored)


def test_reset_state_clears_memory_and_statistics(stream):
    pres = PRESMemory(_tgn(), gamma=0.9)
    with torch.no_grad():
        _feed(pres, stream[:120], read=False)
    assert pres.stats.count.sum() > 0
    pres.reset_state(statistics=False)
    assert pres.base.memory.abs().sum() == 0 and pres.stats.count.sum() > 0
    pres.reset_state()
    assert pres.stats.count.sum() == 0
    assert {"base.memory", "stats.count", "stats.mean", "stats.m2"} <= set(pres.state_dict())


def test_learnable_gamma_stays_in_unit_interval_and_gets_gradient(stream):
    pres = PRESMemory(_tgn(), gamma=0.9, learnable_gamma=True)
    assert abs(float(pres.gamma.detach()) - 0.9) < 1e-6
    assert any(p is pres.gamma_logit for p in pres.parameters())
    with torch.no_grad():
        _feed(pres, stream[:200], read=False)
    n_id = torch.cat([stream.src[200:240], stream.dst[200:240]]).unique()
    out = pres(n_id)[0]
    out.pow(2).sum().backward()
    assert pres.gamma_logit.grad is not None and pres.gamma_logit.grad.abs() > 0


@pytest.mark.parametrize("gamma", [-0.1, 1.5, float("nan"), True, "0.5"])
def test_gamma_outside_unit_interval_is_refused(gamma):
    with pytest.raises(ValueError, match=r"gamma must be a number in \[0, 1\]"):
        PRESMemory(_tgn(), gamma=gamma)


def test_other_bad_arguments():
    with pytest.raises(ValueError, match=r"initial gamma in \(0, 1\)"):
        PRESMemory(_tgn(), gamma=1.0, learnable_gamma=True)
    with pytest.raises(TypeError, match="store_fused must be a bool"):
        PRESMemory(_tgn(), store_fused=1)
    with pytest.raises(TypeError, match="memory must be a torch_geometric TGNMemory"):
        PRESMemory(torch.nn.Linear(2, 2))
    pres = PRESMemory(_tgn(num_nodes=30))
    with pytest.raises(ValueError, match="memory has 30 nodes"):
        pres(torch.tensor([0, 30]))
    with pytest.raises(ValueError, match="dst holds node ids"):
        pres.update_state(torch.tensor([1]), torch.tensor([31]), torch.tensor([0]),
                          torch.zeros(1, MSG))
    with pytest.raises(TypeError, match="n_id must be a LongTensor"):
        pres(torch.tensor([0.0]))


def test_default_is_the_official_placement():
    assert PRESMemory(_tgn()).store_fused is False


def test_official_placement_fuses_only_what_forward_returns(stream, one_torch_thread):
    """store_fused=False (the default): the stored memory stays TGNMemory's own (bit for bit,
    any gamma), while forward returns the fusion, in training from the pending update and in
    eval from the memory before each node's latest update."""
    gamma = 0.6
    plain = _tgn()
    pres = PRESMemory(copy.deepcopy(plain), gamma=gamma, store_fused=False)
    with torch.no_grad():
        _feed(plain, stream[:200], read=False), _feed(pres, stream[:200], read=False)
        assert torch.equal(plain.memory, pres.base.memory)
        assert pres.stats.count.sum() > 0
        n_id = torch.cat([stream.src[200:240], stream.dst[200:240]]).unique()
        prev = pres.base.memory[n_id].clone()
        s_til = plain(n_id)[0]
        use = (pending_messages(pres.base, n_id) & (pres.stats.count[n_id] > 0))[:, None]
        expected = torch.where(use, gamma * (prev + pres.stats.mean[n_id]) + (1 - gamma) * s_til,
                               s_til)
        torch.testing.assert_close(pres(n_id)[0], expected)
        plain.eval(), pres.eval()
        assert torch.equal(plain.memory, pres.base.memory)
        everyone = torch.arange(pres.num_nodes)
        has = (pres.stats.count > 0)[:, None]
        expected = torch.where(has, gamma * (pres.prev_memory + pres.stats.mean)
                               + (1 - gamma) * plain.memory, plain.memory)
        torch.testing.assert_close(pres(everyone)[0], expected)
        pres.reset_state()
        assert pres.prev_memory.abs().sum() == 0
