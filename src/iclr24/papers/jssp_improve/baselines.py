"""Baselines of L2S (Sec. 5): OR-Tools CP-SAT (the exact reference and the strongest baseline) and
the hand-made N5 improvement heuristics run with the same step budget as the learned policy.

- :func:`cp_sat_solve`: the official ``MinimalJobshopSat`` model (interval variables, one
  no-overlap constraint per machine, job precedences, makespan = max of job ends), with a time
  limit, a worker count and a fixed seed; returns the schedule, its objective and whether CP-SAT
  proved it optimal.
- :func:`cpm_times`: the per-schedule critical path method the paper compares its batched evaluator
  with (official ``CPM_batch_G``: a networkx topological order, then a forward and a backward
  pass in Python), one schedule at a time.
- :func:`random_n5_search`: each step applies a uniformly random N5 move (minus the tabu move,
  as in the environment), keeping the incumbent (best-so-far) schedule.
- :func:`greedy_n5_search`: each step evaluates *all* N5 moves of the current schedule in one
  batched evaluator call and applies the best; it stops at a local optimum (no move improves the
  current makespan), which is why it stalls long before a 200-step horizon. (The official
  baselines add a tabu list and long-term memory restarts; those are not reproduced.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .environment import ImprovementEnv
from .evaluator import batched_times
from .instance import JSSPInstance
from .schedule import Schedule, n5_moves, schedule_batch

__all__ = ["cp_sat_solve", "cpm_times", "greedy_n5_search", "random_n5_search"]


def cp_sat_solve(instance: JSSPInstance, time_limit: float = 10.0, *, workers: int = 1,
                 seed: int = 0) -> tuple[Schedule, int, bool]:
    """Solve ``instance`` with CP-SAT. Returns (schedule, makespan objective, proven optimal)."""
    from ortools.sat.python import cp_model

    if not isinstance(instance, JSSPInstance):
        raise TypeError(f"instance must be a JSSPInstance, got {type(instance).__name__}")
    if not (isinstance(time_limit, (int, float)) and time_limit > 0):
        raise ValueError(f"time_limit must be a positive number of seconds, got {time_limit!r}")
    if not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive int, got {workers!r}")
    dur, mch = instance.durations, instance.machines
    n, m = dur.shape
    horizon = int(dur.sum())
    model = cp_model.CpModel()
    start = [[model.new_int_var(0, horizon, f"s{j}_{k}") for k in range(m)] for j in range(n)]
    per_machine: list[list] = [[] for _ in range(m)]
    for j in range(n):
        for k in range(m):
            iv = model.new_fixed_size_interval_var(start[j][k], int(dur[j, k]), f"i{j}_{k}")
            per_machine[int(mch[j, k])].append(iv)
            if k:
                model.add(start[j][k] >= start[j][k - 1] + int(dur[j, k - 1]))
    for ivs in per_machine:
        model.add_no_overlap(ivs)
    cmax = model.new_int_var(0, horizon, "makespan")
    model.add_max_equality(cmax, [start[j][m - 1] + int(dur[j, m - 1]) for j in range(n)])
    model.minimize(cmax)
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = float(time_limit)
    solver.parameters.num_workers = workers
    solver.parameters.random_seed = seed
    status = solver.solve(model)
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        raise RuntimeError(f"CP-SAT found no schedule within time_limit={time_limit} s")
    starts = np.array([[solver.value(start[j][k]) for k in range(m)] for j in range(n)])
    return (Schedule.from_start_times(instance, starts), int(solver.objective_value),
            status == cp_model.OPTIMAL)


def _as_list(instances) -> tuple[list[JSSPInstance], bool]:
    if isinstance(instances, JSSPInstance):
        return [instances], True
    if not isinstance(instances, Sequence) or not instances or not all(
            isinstance(x, JSSPInstance) for x in instances):
        raise TypeError("instances must be a JSSPInstance or a non-empty sequence of them")
    return list(instances), False


def _check_steps(steps) -> None:
    if not isinstance(steps, (int, np.integer)) or isinstance(steps, bool) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")


def random_n5_search(instances: JSSPInstance | Sequence[JSSPInstance], steps: int = 200, *,
                     init_rule: str = "fdd_mwkr", seed: int = 0, tabu_size: int = 1):
    """Random N5 local search with the incumbent kept. Returns (best_schedule, best_makespan), or
    a list of them for a sequence of instances (searched as one batch)."""
    insts, single = _as_list(instances)
    _check_steps(steps)
    rng = np.random.default_rng(seed)
    env = ImprovementEnv(insts, init_rule=init_rule, horizon=steps, tabu_size=tabu_size)
    env.reset()
    while not env.finished:
        env.step([ms[int(rng.integers(len(ms)))] if ms else None for ms in env.moves])
    out = list(zip(env.best_schedules, env.incumbent.tolist()))
    return out[0] if single else out


def greedy_n5_search(instances: JSSPInstance | Sequence[JSSPInstance], steps: int = 200, *,
                     init_rule: str = "fdd_mwkr"):
    """Best-improvement N5 descent: evaluate every N5 move (batched), apply the best one if it
    lowers the makespan, stop at a local optimum or after ``steps`` moves. Returns
    (best_schedule, best_makespan, n_moves_made) or a list of them."""
    from .dispatch import dispatch

    insts, single = _as_list(instances)
    _check_steps(steps)
    current = [dispatch(x, init_rule) for x in insts]
    est, lst, c = batched_times(schedule_batch(current))
    ptr = np.cumsum([0] + [x.n_nodes for x in insts])
    cost = c.numpy().copy()
    active = list(range(len(insts)))
    moves_made = [0] * len(insts)
    e_np, l_np = est.numpy(), lst.numpy()
    times = {g: (e_np[ptr[g]:ptr[g + 1]], l_np[ptr[g]:ptr[g + 1]]) for g in active}
    for _ in range(steps):
        cands, owner = [], []
        for g in active:
            for u, v in n5_moves(current[g], *times[g]):
                cands.append(current[g].swapped(u, v))
                owner.append(g)
        if not cands:
            break
        est, lst, c = batched_times(schedule_batch(cands))
        cptr = np.cumsum([0] + [s.instance.n_nodes for s in cands])
        c = c.numpy()
        still = []
        for g in active:
            idx = [i for i, o in enumerate(owner) if o == g]
            if not idx:
                continue
            best = min(idx, key=lambda i: c[i])
            if c[best] < cost[g]:
                current[g], cost[g] = cands[best], c[best]
                times[g] = (est.numpy()[cptr[best]:cptr[best + 1]],
                            lst.numpy()[cptr[best]:cptr[best + 1]])
                moves_made[g] += 1
                still.append(g)
        active = still
        if not active:
            break
    out = [(current[g], float(cost[g]), moves_made[g]) for g in range(len(insts))]
    return out[0] if single else out


def cpm_times(schedule: Schedule) -> tuple[np.ndarray, np.ndarray, float]:
    """est (N,), lst (N,) and makespan of one schedule by the critical path method: a networkx
    topological order of its disjunctive graph, then est(v) = max_u est(u) + p(u) forwards and
    lst(v) = min_w lst(w) - p(v) backwards, in Python."""
    import networkx as nx

    if not isinstance(schedule, Schedule):
        raise TypeError(f"schedule must be a Schedule, got {type(schedule).__name__}")
    ej, em = schedule.edges()
    p = schedule.instance.node_durations().tolist()
    g = nx.DiGraph()
    g.add_nodes_from(range(len(p)))
    g.add_edges_from(zip(np.concatenate([ej[0], em[0]]).tolist(),
                         np.concatenate([ej[1], em[1]]).tolist()))
    order = list(nx.topological_sort(g))
    est = [0.0] * len(p)
    for u in order:
        for w in g.successors(u):
            est[w] = max(est[w], est[u] + p[u])
    c = est[-1]
    lst = [c] * len(p)
    for w in reversed(order):
        for u in g.predecessors(w):
            lst[u] = min(lst[u], lst[w] - p[u])
    return np.array(est), np.array(lst), float(c)
