"""Dispatching rules that build the initial complete schedule (L2S, Sec. 5: FDD/MWKR by default;
official ``env/environment._rules_solver`` with ``permissible_LS``).

Operations are dispatched one at a time from the job fronts; the chosen operation is placed by a
*permissible left shift*: into the earliest idle gap of its machine that starts after the job is
ready and is long enough, else after the machine's last operation. Priorities (lower wins):

- ``"spt"``: processing time of the candidate;
- ``"mwkr"``: minus the job's remaining work (most work remaining first);
- ``"fdd_mwkr"``: flow due date / remaining work, fdd = sum of the job's times up to and including
  the candidate, wkr = sum of its unscheduled times (the paper's initial solutions);
- ``"random"``: a uniformly random candidate (random priority dispatching; needs ``seed``).

Ties go to the lowest job id (the official code breaks them at random).
"""

from __future__ import annotations

import bisect

import numpy as np

from .instance import JSSPInstance
from .schedule import Schedule

__all__ = ["RULES", "dispatch"]

RULES = ("fdd_mwkr", "mwkr", "spt", "random")


def dispatch(instance: JSSPInstance, rule: str = "fdd_mwkr", *,
             seed: int | np.random.Generator | None = None) -> Schedule:
    """Build a complete (active) schedule of ``instance`` with a dispatching ``rule``."""
    if not isinstance(instance, JSSPInstance):
        raise TypeError(f"instance must be a JSSPInstance, got {type(instance).__name__}")
    if rule not in RULES:
        raise ValueError(f"rule must be one of {RULES}, got {rule!r}")
    rng = None
    if rule == "random":
        if seed is None:
            raise ValueError("rule='random' needs a seed")
        rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    dur, mch = instance.durations, instance.machines
    n, m = dur.shape
    cum = np.cumsum(dur, axis=1)
    remaining = dur.sum(axis=1).astype(np.float64)
    front = np.zeros(n, dtype=np.int64)  # next operation index per job
    job_ready = np.zeros(n, dtype=np.int64)
    starts = np.zeros((n, m), dtype=np.int64)
    busy = [[] for _ in range(m)]  # per machine: sorted (start, end)
    for _ in range(n * m):
        jobs = np.flatnonzero(front < m)
        k = front[jobs]
        if rule == "spt":
            prio = dur[jobs, k].astype(np.float64)
        elif rule == "mwkr":
            prio = -remaining[jobs]
        elif rule == "fdd_mwkr":
            prio = cum[jobs, k] / remaining[jobs]
        else:
            prio = rng.random(jobs.size)
        j = int(jobs[int(np.argmin(prio))])
        kj = int(front[j])
        p, i = int(dur[j, kj]), int(mch[j, kj])
        t = _left_shift(busy[i], int(job_ready[j]), p)
        bisect.insort(busy[i], (t, t + p))
        starts[j, kj] = t
        job_ready[j] = t + p
        remaining[j] -= p
        front[j] += 1
    return Schedule.from_start_times(instance, starts)


def _left_shift(slots: list[tuple[int, int]], ready: int, p: int) -> int:
    """Earliest start >= ready of an idle gap of length >= p between the machine's ``slots``."""
    prev_end = 0
    for s, e in slots:
        if s > ready and max(ready, prev_end) + p <= s:
            return max(ready, prev_end)
        prev_end = e
    return max(ready, prev_end)
