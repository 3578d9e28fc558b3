"""CP-SAT, random and greedy N5 baselines."""

import pytest

from iclr24.papers.jssp_improve import (
    cp_sat_solve,
    dispatch,
    greedy_n5_search,
    n5_moves,
    random_instance,
    random_n5_search,
)


def test_cp_sat_optimum_bounds_the_heuristics():
    insts = [random_instance(5, 4, seed=s) for s in range(3)]
    for x in insts:
        sched, obj, optimal = cp_sat_solve(x, time_limit=10.0)
        assert optimal and sched.makespan() == obj
        assert obj <= dispatch(x).makespan()
        assert obj >= x.durations.sum(axis=1).max()
    with pytest.raises(ValueError, match="time_limit"):
        cp_sat_solve(insts[0], time_limit=0)


def test_random_n5_is_seeded_and_never_worse_than_the_start():
    insts = [random_instance(6, 5, seed=s) for s in range(3)]
    a = random_n5_search(insts, 30, seed=1)
    b = random_n5_search(insts, 30, seed=1)
    assert [c for _, c in a] == [c for _, c in b]
    for x, (s, c) in zip(insts, a):
        assert c <= dispatch(x).makespan() and s.makespan() == c
    with pytest.raises(ValueError, match="steps"):
        random_n5_search(insts, -2)


def test_greedy_stops_at_a_local_optimum():
    insts = [random_instance(6, 5, seed=s) for s in range(3)]
    for x, (s, c, k) in zip(insts, greedy_n5_search(insts, 200)):
        assert s.makespan() == c <= dispatch(x).makespan()
        assert k < 200
        est, lst, _ = s.times()
        for u, v in n5_moves(s, est, lst):  # no N5 move improves the final schedule
            assert s.swapped(u, v).makespan() >= c
    with pytest.raises(TypeError, match="instances"):
        greedy_n5_search([], 3)
