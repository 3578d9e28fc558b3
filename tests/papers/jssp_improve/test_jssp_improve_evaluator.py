"""The batched max-plus evaluator: est / lst / makespan exact against CPM and networkx, batching
invariance, a hand-computed case, cycle detection."""

import networkx as nx
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.jssp_improve import (
    JSSPInstance,
    MaxPlusPass,
    Schedule,
    batched_times,
    cpm_times,
    dispatch,
    random_instance,
    schedule_batch,
)


def _random_schedules(seed, k, n, m):
    rng = np.random.default_rng(seed)
    return [dispatch(random_instance(n, m, seed=rng), "random", seed=rng) for _ in range(k)]


@settings(max_examples=12)
@given(seed=st.integers(0, 10_000), n=st.integers(1, 6), m=st.integers(1, 6))
def test_est_lst_exact_against_cpm_and_networkx(seed, n, m):
    scheds = _random_schedules(seed, 3, n, m)
    batch = schedule_batch(scheds)
    est, lst, c = batched_times(batch)
    ptr = batch.ptr.tolist()
    for g, s in enumerate(scheds):
        e_ref, l_ref, c_ref = cpm_times(s)
        np.testing.assert_array_equal(est[ptr[g]:ptr[g + 1]].numpy(), e_ref)
        np.testing.assert_array_equal(lst[ptr[g]:ptr[g + 1]].numpy(), l_ref)
        ej, em = s.edges()
        p = s.instance.node_durations()
        G = nx.DiGraph()
        G.add_weighted_edges_from((int(u), int(v), int(p[u])) for u, v in
                                  np.concatenate([ej, em], 1).T)
        assert nx.dag_longest_path_length(G) == c[g] == c_ref
        e, ls = est[ptr[g]:ptr[g + 1]], lst[ptr[g]:ptr[g + 1]]
        assert e[0] == 0 and ls[0] == 0 and ls[-1] == c[g]
        assert bool((ls >= e).all())


def test_batching_invariance():
    scheds = _random_schedules(1, 5, 4, 3) + _random_schedules(2, 3, 6, 5)  # mixed sizes
    est_b, lst_b, c_b = batched_times(schedule_batch(scheds))
    parts = [batched_times(schedule_batch([s])) for s in scheds]
    torch.testing.assert_close(est_b, torch.cat([p[0] for p in parts]))
    torch.testing.assert_close(lst_b, torch.cat([p[1] for p in parts]))
    torch.testing.assert_close(c_b, torch.cat([p[2] for p in parts]))


def test_hand_computed_two_by_two():
    # job 0: M0 (3) -> M1 (2); job 1: M1 (4) -> M0 (1); orders M0: [0, 1], M1: [1, 0]
    inst = JSSPInstance(np.array([[3, 2], [4, 1]]), np.array([[0, 1], [1, 0]]))
    s = Schedule(inst, np.array([[0, 1], [1, 0]]))
    est, lst, c = s.times()
    # O00 [0,3]; O10 [0,4]; O01 after O00 and O10 on M1 -> [4,6]; O11 after O10 and O00 -> [4,5]
    np.testing.assert_array_equal(est, [0, 0, 4, 0, 4, 6])
    assert c == 6
    # lst: T=6; O01 = 4; O11 = 5; O00 = min(4, 5) - 3 = 1; O10 = min(lst O11=5, lst O01=4) - 4 = 0
    np.testing.assert_array_equal(lst, [0, 1, 4, 0, 5, 6])


def test_cycle_raises():
    inst = JSSPInstance(np.array([[3, 2], [4, 1]]), np.array([[0, 1], [1, 0]]))
    bad = Schedule(inst, np.array([[1, 0], [0, 1]]))  # O00->O01->O10->O11->O00
    with pytest.raises(ValueError, match="cycle"):
        batched_times(schedule_batch([bad]))


def test_maxplus_pass_directions():
    edge = torch.tensor([[0, 1, 0], [2, 2, 1]])
    x = torch.tensor([[1.0], [5.0], [3.0]])
    fwd = MaxPlusPass("source_to_target")(x, edge)
    bwd = MaxPlusPass("target_to_source")(x, edge)
    assert fwd.squeeze().tolist() == [0.0, 1.0, 5.0]  # node 2 gets max(x0, x1); node 0 none
    assert bwd.squeeze().tolist() == [5.0, 3.0, 0.0]  # node 0 gets max(x2, x1)


def test_batched_times_bad_input():
    with pytest.raises(TypeError, match="batch.dur"):
        batched_times(object())


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -1.0])
def test_batched_times_refuses_bad_durations(bad):
    batch = schedule_batch(_random_schedules(0, 2, 3, 3))
    batch.dur = batch.dur.to(torch.float64)
    batch.dur[5] = bad
    with pytest.raises(ValueError, match=r"batch\.dur.*batch\.dur\[5\]"):
        batched_times(batch)


def test_batched_times_refuses_out_of_range_arcs():
    batch = schedule_batch(_random_schedules(0, 2, 3, 3))
    batch.edge_index = batch.edge_index.clone()
    batch.edge_index[1, 0] = batch.dur.shape[0]
    with pytest.raises(ValueError, match="batch.edge_index"):
        batched_times(batch)
