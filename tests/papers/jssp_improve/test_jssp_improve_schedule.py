"""Schedules, features, critical path and N5: moves keep schedules feasible (hypothesis), N5 agrees
with the official pair rule, swaps outside N5 are refused."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.jssp_improve import (
    JSSPInstance,
    Schedule,
    apply_swap,
    critical_path,
    dispatch,
    n5_moves,
    random_instance,
)


def _official_pairs(mch, ops):
    """The official ``JsspN5._get_pairs`` rule, restated: scan the critical path's machines."""
    pairs, rg = [], len(mch) - 1
    for i in range(rg):
        if mch[i] != mch[i + 1]:
            continue
        if i == 0:
            if i + 2 < len(mch) and mch[i + 1] != mch[i + 2]:
                pairs.append((ops[i], ops[i + 1]))
        elif mch[i] != mch[i - 1]:
            pairs.append((ops[i], ops[i + 1]))
        elif i + 1 == rg:
            pass
        elif mch[i + 1] != mch[i + 2]:
            pairs.append((ops[i], ops[i + 1]))
    return pairs


@settings(max_examples=25)
@given(seed=st.integers(0, 100_000), n=st.integers(2, 7), m=st.integers(2, 6),
       rule=st.sampled_from(["random", "fdd_mwkr", "spt", "mwkr"]))
def test_n5_moves_keep_feasible_and_match_official_rule(seed, n, m, rule):
    inst = random_instance(n, m, seed=seed)
    s = dispatch(inst, rule, seed=seed)
    est, lst, c = s.times()
    path = critical_path(s, est, lst)
    p = inst.node_durations()
    # a real path: S -> first, tight arcs, ends at C
    assert est[path[0]] == 0 and est[path[-1]] + p[path[-1]] == c
    assert sum(p[v] for v in path) == c
    assert all(est[v] == lst[v] for v in path)
    moves = n5_moves(s, est, lst)
    mch = inst.node_machines()
    assert moves == _official_pairs([int(mch[v]) for v in path], path)
    nodes = s.machine_nodes()
    for u, v in moves:
        i = mch[u]
        assert mch[v] == i
        r = int(np.flatnonzero(nodes[i] == u)[0])
        assert nodes[i][r + 1] == v  # u directly before v on its machine
        t = apply_swap(s, u, v)
        _est2, _lst2, c2 = t.times()  # raises on a cycle: N5 keeps feasibility
        assert np.isfinite(c2)
        assert t.machine_nodes()[i][r] == v and t.machine_nodes()[i][r + 1] == u


def test_single_block_has_no_moves():
    # one machine: the critical path is one block -> no N5 move
    inst = JSSPInstance(np.array([[2], [3], [1]]), np.array([[0], [0], [0]]))
    s = Schedule(inst, np.array([[0, 1, 2]]))
    est, lst, c = s.times()
    assert c == 6 and n5_moves(s, est, lst) == []


def test_apply_swap_refuses_non_n5_moves():
    inst = random_instance(5, 4, seed=0)
    s = dispatch(inst)
    est, lst, _ = s.times()
    moves = n5_moves(s, est, lst)
    assert moves
    u, v = moves[0]
    with pytest.raises(ValueError, match="not an N5 move"):
        apply_swap(s, v, u)  # wrong orientation
    with pytest.raises(ValueError, match="not an N5 move"):
        apply_swap(s, 1, 2)  # a job arc
    with pytest.raises(TypeError, match="u must be an int"):
        apply_swap(s, 1.0, 2)


def test_to_pyg_fields_and_features():
    inst = random_instance(4, 3, seed=5)
    s = dispatch(inst)
    d = s.to_pyg()
    est, lst, _ = s.times()
    assert d.x.shape == (inst.n_nodes, 3)
    assert d.edge_index_job.shape == (2, 4 * (3 + 1)) and d.edge_index_mch.shape == (2, 3 * 3)
    np.testing.assert_allclose(d.x[:, 0].numpy(), inst.node_durations() / 99, rtol=1e-6)
    np.testing.assert_allclose(d.x[:, 1].numpy() * 1000, est, rtol=1e-5)
    np.testing.assert_allclose(d.x[:, 2].numpy() * 1000, lst, rtol=1e-5)


def test_schedule_validation_and_round_trip():
    inst = random_instance(4, 3, seed=1)
    with pytest.raises(ValueError, match="shape"):
        Schedule(inst, np.zeros((4, 3), dtype=int))
    with pytest.raises(ValueError, match="orders\\[0\\] must be a permutation"):
        Schedule(inst, np.array([[0, 0, 1, 2], [0, 1, 2, 3], [0, 1, 2, 3]]))
    with pytest.raises(TypeError, match="JSSPInstance"):
        Schedule("x", np.zeros((3, 4), dtype=int))
    s = dispatch(inst, "spt")
    est, _, _ = s.times()
    starts = est[1:-1].reshape(4, 3)
    np.testing.assert_array_equal(Schedule.from_start_times(inst, starts).orders, s.orders)
    with pytest.raises(ValueError, match="shape"):
        n5_moves(s, est[:-1], est)
