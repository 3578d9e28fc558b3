"""Dispatching rules: hand-checked choices, left shifts, feasibility, errors."""

import numpy as np
import pytest

from iclr24.papers.jssp_improve import JSSPInstance, dispatch, random_instance

# job 0: M0 (5) -> M1 (1); job 1: M0 (2) -> M1 (6)
INST = JSSPInstance(np.array([[5, 1], [2, 6]]), np.array([[0, 1], [0, 1]]))


def test_spt_and_mwkr_choices():
    spt = dispatch(INST, "spt")  # job 1 first on M0 (2 < 5)
    assert spt.orders[0].tolist() == [1, 0]
    # O10 [0,2] M0, O00 [2,7] M0, then O01 (1) before O11 (6) on M1: [7,8], O11 does not fit
    # the gap [2,7] -> [8,14]
    assert spt.orders[1].tolist() == [0, 1] and spt.makespan() == 14
    mwkr = dispatch(INST, "mwkr")  # remaining work: job 0 = 6, job 1 = 8 -> job 1 first
    # O10 [0,2]; tie 6 vs 6 -> job 0: O00 [2,7]; O11 (6 left) [2,8] on M1; O01 [8,9]
    assert mwkr.orders.tolist() == [[1, 0], [1, 0]] and mwkr.makespan() == 9


def test_fdd_mwkr_priority():
    # fdd/wkr at the start: job 0: 5/6, job 1: 2/8 -> job 1 first
    s = dispatch(INST, "fdd_mwkr")
    assert s.orders[0].tolist() == [1, 0]


def test_left_shift_fills_a_gap():
    # job 0: M0 (4) -> M1 (1); job 1: M1 (4) -> M0 (1). SPT: O00 (tie, lowest job) [0,4] on M0,
    # then O01 (1) [4,5] on M1, then O10 (4, ready 0) fits the idle gap [0,4] of M1, then O11
    # [4,5] on M0: makespan 5 (appending O10 after O01 would give 10).
    inst = JSSPInstance(np.array([[4, 1], [4, 1]]), np.array([[0, 1], [1, 0]]))
    s = dispatch(inst, "spt")
    assert s.orders[1].tolist() == [1, 0]
    assert s.makespan() == 5


@pytest.mark.parametrize("rule", ["fdd_mwkr", "mwkr", "spt", "random"])
def test_rules_give_feasible_semi_active_schedules(rule):
    inst = random_instance(6, 5, seed=2)
    s = dispatch(inst, rule, seed=0)
    _est, _lst, c = s.times()
    assert c >= inst.durations.sum(axis=1).max()  # at least the longest job
    assert c >= max(inst.durations[inst.machines == i].sum() for i in range(5))
    assert c <= inst.durations.sum()


def test_random_rule_is_seeded():
    inst = random_instance(6, 5, seed=2)
    a, b = dispatch(inst, "random", seed=4), dispatch(inst, "random", seed=4)
    np.testing.assert_array_equal(a.orders, b.orders)


def test_dispatch_errors():
    with pytest.raises(ValueError, match="rule must be one of"):
        dispatch(INST, "lpt")
    with pytest.raises(ValueError, match="needs a seed"):
        dispatch(INST, "random")
    with pytest.raises(TypeError, match="JSSPInstance"):
        dispatch("ft06")
