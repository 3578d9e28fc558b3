"""Collectives over virtual ranks: exactness, qgZ error bound, byte counts vs the formula."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.zeropp import (
    CROSS,
    INTRA,
    CastCodec,
    CommLedger,
    Topology,
    cross_node_volume,
    qgz_slice_order,
    quantized_all_gather,
    reference_reduce_scatter,
    ring_all_gather,
    ring_reduce_scatter,
    run_simulated,
    simulate_hierarchical_reduce,
)
from iclr24.papers.zeropp.simulator import SimulatedRankError

TOPO = Topology(4, 2)


def _rs_job(comm, grads):
    out = ring_reduce_scatter(comm, grads[comm.rank], comm.topology.all_ranks(),
                              CastCodec(torch.float32), "rs")
    return out / comm.world_size, comm.ledger.snapshot()


def _ag_job(comm, shards, bits):
    return quantized_all_gather(comm, shards[comm.rank], comm.topology.all_ranks(), bits, 16)


def test_topology_layout_and_errors():
    t = Topology(8, 4)
    assert t.num_nodes == 2 and t.node_of(5) == 1 and t.local_rank(5) == 1
    assert t.intra_ranks(5) == [4, 5, 6, 7] and t.inter_ranks(5) == [1, 5]
    assert t.is_cross_node(3, 4) and not t.is_cross_node(4, 7)
    assert Topology.from_nodes(4, 2) == TOPO
    with pytest.raises(ValueError, match="multiple"):
        Topology(6, 4)
    with pytest.raises(ValueError, match="world_size"):
        Topology(0, 1)
    with pytest.raises(TypeError, match="ranks_per_node"):
        Topology(4, 2.0)
    with pytest.raises(ValueError, match="rank"):
        t.node_of(8)


def test_slice_order_is_a_permutation_grouped_by_local_index():
    order = qgz_slice_order(Topology(6, 3))
    assert sorted(order) == list(range(6))
    assert order == [0, 3, 1, 4, 2, 5]  # local 0 of nodes 0,1; local 1 of nodes 0,1; ...


def test_ring_reduce_scatter_equals_exact_mean():
    g = torch.Generator().manual_seed(1)
    grads = [torch.randn(4 * 33, generator=g) for _ in range(4)]
    outs = run_simulated(_rs_job, TOPO, (grads,))
    ref = reference_reduce_scatter(grads)
    for (out, _), r in zip(outs, ref):
        assert torch.allclose(out, r, atol=1e-6)
    ledger = CommLedger(TOPO)
    for _, snap in outs:
        ledger.absorb(snap)
    # ring: each node's one cross edge carries N-1 messages of M/N (fp32 here)
    assert ledger.egress_per_node(CROSS) == [3 * 33 * 4, 3 * 33 * 4]
    assert ledger.messages() == 4 * 3


def test_quantized_all_gather_matches_local_quantization():
    g = torch.Generator().manual_seed(2)
    shards = [torch.randn(40, generator=g) for _ in range(4)]
    outs = run_simulated(_ag_job, TOPO, (shards, 8))
    full = torch.cat(shards)
    for out in outs:
        assert torch.equal(out, outs[0])  # every rank sees the same weights
    assert (outs[0] - full).abs().max() <= full.abs().max() / 127


def test_ring_all_gather_order():
    def job(comm):
        pl = torch.full((3,), comm.rank, dtype=torch.uint8)
        return [int(p[0]) for p in ring_all_gather(comm, pl, [3, 1, 0, 2], "ag")]
    for out in run_simulated(job, TOPO):
        assert out == [3, 1, 0, 2]


def test_hierarchical_reduce_without_quantization_is_exact():
    g = torch.Generator().manual_seed(3)
    for topo in (TOPO, Topology(6, 3), Topology(6, 2), Topology(4, 4), Topology(4, 1)):
        grads = [torch.randn(topo.world_size * 7, generator=g) for _ in range(topo.world_size)]
        outs, _ = simulate_hierarchical_reduce(grads, topo, bits=None)
        for out, ref in zip(outs, reference_reduce_scatter(grads)):
            assert torch.allclose(out, ref, atol=1e-6)


@settings(max_examples=8, deadline=None)
@given(layout=st.sampled_from([(4, 2), (6, 3), (6, 2), (8, 2)]), bits=st.sampled_from([8, 4, 2]),
       s=st.integers(1, 40), block=st.integers(1, 64), seed=st.integers(0, 1000))
def test_quantized_hierarchical_reduce_within_quantizer_error(layout, bits, s, block, seed):
    topo = Topology(*layout)
    g = torch.Generator().manual_seed(seed)
    grads = [torch.randn(topo.world_size * s, generator=g) * (r + 1)
             for r in range(topo.world_size)]
    outs, _ = simulate_hierarchical_reduce(grads, topo, bits=bits, block_size=block)
    qmax = 2 ** (bits - 1) - 1
    # stage 1 quantizes each rank's chunk (error <= max|g_r| / 2qmax per element); stage 2
    # requantizes node sums (<= sum of the node's max|g_r| (1 + 1/2qmax) / 2qmax); mean over N
    amax = sum(float(gr.abs().max()) for gr in grads)
    bound = amax * (2 + 1 / (2 * qmax)) / (2 * qmax) / topo.world_size
    for out, ref in zip(outs, reference_reduce_scatter(grads)):
        assert float((out - ref).abs().max()) <= bound * 1.0001 + 1e-6


def test_qgz_bytes_match_the_formula_and_error_is_small():
    g = torch.Generator().manual_seed(4)
    s = 4096
    grads = [torch.randn(4 * s, generator=g) for _ in range(4)]
    outs, ledger = simulate_hierarchical_reduce(grads, TOPO, bits=4, block_size=2048)
    m_bytes = 2 * 4 * s  # the fp16 gradient
    cross = ledger.egress_per_node(CROSS)
    formula = cross_node_volume(4, 2, quantized_gradients=4)["grad_reduce"]  # 0.125
    assert cross[0] == cross[1]
    assert abs(cross[0] / m_bytes - formula) / formula < 0.01
    assert ledger.total(link=INTRA) > 0
    ref = reference_reduce_scatter(grads)
    rel = torch.cat([o - r for o, r in zip(outs, ref)]).norm() / torch.cat(ref).norm()
    assert rel < 0.2  # int4 with two quantization stages


def test_formula_values_from_the_paper():
    z3 = cross_node_volume(4, 2)["total"]
    zpp = cross_node_volume(4, 2, 8, True, 4)["total"]
    assert z3 == pytest.approx(2.25) and zpp == pytest.approx(0.5)
    assert z3 / zpp == pytest.approx(4.5)
    big = cross_node_volume(384, 16)["total"] / cross_node_volume(384, 16, 8, True, 4)["total"]
    assert big == pytest.approx(3 * 383 / 384 / (0.5 * 383 / 384 + 0.25 * 23 / 24))
    assert 4.0 < big < 4.1
    assert cross_node_volume(4, 4)["total"] == 0.0  # one node: nothing crosses
    with pytest.raises(ValueError, match="multiple"):
        cross_node_volume(5, 2)


def test_ledger_api_and_errors():
    ledger = CommLedger(TOPO)
    ledger.record("a", 0, 1, 10)
    ledger.record("a", 1, 2, 5)
    ledger.record("b", 3, 0, 7)
    assert ledger.total() == 22 and ledger.total("a") == 15
    assert ledger.total(link=CROSS) == 12 and ledger.egress_per_node(CROSS) == [5, 7]
    assert {r["phase"] for r in ledger.rows()} == {"a", "b"}
    merged = CommLedger.merged([ledger, ledger])
    assert merged.total() == 44 and merged.messages() == 6
    with pytest.raises(ValueError, match="link"):
        ledger.total(link="wifi")
    with pytest.raises(ValueError, match="nbytes"):
        ledger.record("a", 0, 1, -1)
    with pytest.raises(TypeError, match="topology"):
        CommLedger("4x2")


def test_simulator_reports_the_failing_rank():
    def job(comm):
        if comm.rank == 2:
            raise ValueError("boom")
        return ring_all_gather(comm, torch.zeros(1, dtype=torch.uint8), [0, 1, 2, 3], "x")
    with pytest.raises(SimulatedRankError, match="virtual rank 2 failed: ValueError: boom"):
        run_simulated(job, TOPO, timeout_s=20)


def test_collective_argument_errors():
    def job(comm):
        with pytest.raises(ValueError, match="must contain this rank"):
            ring_all_gather(comm, torch.zeros(1, dtype=torch.uint8), [5, 6], "x")
        with pytest.raises(ValueError, match="divisible"):
            ring_reduce_scatter(comm, torch.zeros(3), [0, 1, 2, 3], CastCodec(), "x")
        with pytest.raises(TypeError, match="uint8"):
            comm.transport.exchange([((comm.rank + 1) % 4, torch.zeros(2))], [])
        return True
    assert all(run_simulated(job, TOPO, timeout_s=20))
