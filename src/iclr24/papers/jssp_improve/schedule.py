"""Complete schedules as disjunctive graphs, the N5 neighbourhood and its swap (L2S, Sec. 3-4).

A :class:`Schedule` is the processing order of the jobs on every machine, ``orders`` (m, n):
``orders[i]`` lists job ids in the order machine i processes them. Its disjunctive graph has the
n*m operation nodes plus source S = 0 and sink T = n*m + 1, *job arcs* O_{j,k} -> O_{j,k+1}
(with S -> O_{j,1} and O_{j,m} -> T) and *machine arcs* between consecutive operations of each
machine's order. Start times and makespan come from :func:`batched_times`.

N5 (Nowicki & Smutnicki 1996, as used by L2S): trace one critical path from T back to S
(deterministically: at each node take the machine predecessor if it is tight, else the job
predecessor; at T the lowest job id), cut it into critical blocks (maximal runs of consecutive
path operations on one machine), and for every block of length >= 2 swap its first two operations
(not in the first block) and its last two (not in the last block). A swap of (u, v), u directly
before v on their machine, reverses that arc and reconnects u's machine predecessor to v and u to
v's machine successor; N5 swaps keep the graph acyclic. A critical path that is a single block
has no N5 move.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from .evaluator import batched_times
from .instance import JSSPInstance

__all__ = [
    "DURATION_SCALE",
    "TIME_SCALE",
    "Schedule",
    "apply_swap",
    "critical_path",
    "n5_moves",
    "schedule_batch",
]

DURATION_SCALE = 99.0  # official features: p / high (the generator's upper bound) ...
TIME_SCALE = 1000.0  # ... and est / 1000, lst / 1000: global constants, never per instance


@dataclass(frozen=True, eq=False)
class Schedule:
    """Machine processing orders of an instance. orders: (m, n) ints, row i a permutation of the
    job ids (the order on machine i). Feasibility (acyclicity) is checked by the evaluator."""

    instance: JSSPInstance
    orders: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.instance, JSSPInstance):
            raise TypeError(f"instance must be a JSSPInstance, got {type(self.instance).__name__}")
        orders = np.asarray(self.orders)
        n, m = self.instance.n_jobs, self.instance.n_machines
        if orders.shape != (m, n) or orders.dtype.kind not in "iu":
            raise ValueError(f"orders must be an integer array of shape (n_machines, n_jobs) = "
                             f"({m}, {n}), got shape {orders.shape} dtype {orders.dtype}")
        target = np.arange(n)
        for i in range(m):
            if not np.array_equal(np.sort(orders[i]), target):
                raise ValueError(f"orders[{i}] must be a permutation of the job ids 0..{n - 1}, "
                                 f"got {orders[i].tolist()}")
        orders = orders.astype(np.int64)
        orders.setflags(write=False)
        object.__setattr__(self, "orders", orders)

    @classmethod
    def from_start_times(cls, instance: JSSPInstance, starts) -> Schedule:
        """Machine orders of start times ``starts`` (n, m) (operation (j, k) starts at
        starts[j, k]); ties broken by job id."""
        starts = np.asarray(starts, dtype=np.float64)
        if starts.shape != instance.durations.shape:
            raise ValueError(f"starts must have shape {instance.durations.shape}, got "
                             f"{starts.shape}")
        n, m = starts.shape
        orders = np.empty((m, n), dtype=np.int64)
        for i in range(m):
            t = starts[np.arange(n), instance.op_index[:, i]]
            orders[i] = np.lexsort((np.arange(n), t))
        return cls(instance, orders)

    def machine_nodes(self) -> np.ndarray:
        """(m, n) graph node of the r-th operation processed on machine i."""
        inst = self.instance
        m = inst.n_machines
        machine = np.arange(m)[:, None]
        return 1 + self.orders * m + inst.op_index[self.orders, machine]

    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """(2, n*(m+1)) job arcs and (2, m*(n-1)) machine arcs of the disjunctive graph."""
        return _job_arcs(self.instance), _machine_arcs(self.machine_nodes())

    def to_pyg(self):
        """The schedule as a ``torch_geometric.data.Data``: ``edge_index_job``, ``edge_index_mch``,
        ``edge_index`` (both), ``dur`` (N,), and features ``x`` (N, 3) =
        [p / 99, est / 1000, lst / 1000] (the official constants)."""
        data = schedule_batch([self])
        est, lst, _ = batched_times(data)
        data.x = node_features(data.dur, est, lst)
        return data

    def times(self) -> tuple[np.ndarray, np.ndarray, float]:
        """est (N,), lst (N,) and the makespan, by the batched evaluator on this one graph."""
        est, lst, c = batched_times(schedule_batch([self]))
        return est.numpy(), lst.numpy(), float(c[0])

    def makespan(self) -> float:
        return self.times()[2]

    def swapped(self, u: int, v: int) -> Schedule:
        """The schedule with adjacent operations u -> v (same machine) exchanged, unchecked."""
        inst = self.instance
        m = inst.n_machines
        machine = int(inst.machines.reshape(-1)[u - 1])
        ju, jv = (u - 1) // m, (v - 1) // m
        orders = self.orders.copy()
        row = orders[machine]
        r = int(np.flatnonzero(row == ju)[0])
        row[r], row[r + 1] = jv, ju
        return Schedule._unchecked(inst, orders)

    @classmethod
    def _unchecked(cls, instance: JSSPInstance, orders: np.ndarray) -> Schedule:
        obj = object.__new__(cls)
        orders.setflags(write=False)
        object.__setattr__(obj, "instance", instance)
        object.__setattr__(obj, "orders", orders)
        return obj


def _job_arcs(inst: JSSPInstance) -> np.ndarray:
    n, m = inst.n_jobs, inst.n_machines
    ops = 1 + np.arange(n * m).reshape(n, m)
    sink = n * m + 1
    src = np.concatenate([np.zeros(n, dtype=np.int64), ops[:, :-1].reshape(-1), ops[:, -1]])
    dst = np.concatenate([ops[:, 0], ops[:, 1:].reshape(-1), np.full(n, sink)])
    return np.stack([src, dst])


def _machine_arcs(nodes: np.ndarray) -> np.ndarray:
    return np.stack([nodes[:, :-1].reshape(-1), nodes[:, 1:].reshape(-1)])


def node_features(dur: torch.Tensor, est: torch.Tensor, lst: torch.Tensor) -> torch.Tensor:
    """(N, 3) float32 features [p / 99, est / 1000, lst / 1000]."""
    return torch.stack([dur.to(torch.float64) / DURATION_SCALE, est / TIME_SCALE,
                        lst / TIME_SCALE], dim=1).to(torch.float32)


def schedule_batch(schedules: Sequence[Schedule]):
    """Disjoint union of schedule graphs as one ``torch_geometric.data.Data`` with ``dur`` (N,),
    ``edge_index_job``, ``edge_index_mch``, ``edge_index`` (all arcs), ``batch`` (N,) and ``ptr``
    (G+1,); node ids of graph g are offset by ``ptr[g]`` (graph g's S is ``ptr[g]``, its T
    ``ptr[g+1] - 1``). Instances may differ in size."""
    from torch_geometric.data import Data

    if isinstance(schedules, Schedule) or not len(schedules):
        raise ValueError("schedules must be a non-empty sequence of Schedule")
    job, mch, dur, sizes = [], [], [], []
    offset = 0
    for s in schedules:
        if not isinstance(s, Schedule):
            raise TypeError(f"schedules must hold Schedule objects, got {type(s).__name__}")
        ej, em = s.edges()
        job.append(ej + offset)
        mch.append(em + offset)
        dur.append(s.instance.node_durations())
        sizes.append(s.instance.n_nodes)
        offset += s.instance.n_nodes
    ej = torch.from_numpy(np.concatenate(job, axis=1))
    em = torch.from_numpy(np.concatenate(mch, axis=1))
    sizes_t = torch.tensor(sizes)
    ptr = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(sizes_t, 0)])
    return Data(edge_index_job=ej, edge_index_mch=em, edge_index=torch.cat([ej, em], dim=1),
                dur=torch.from_numpy(np.concatenate(dur)),
                batch=torch.repeat_interleave(torch.arange(len(sizes)), sizes_t), ptr=ptr,
                num_nodes=offset)


def _check_times(schedule: Schedule, est, lst) -> tuple[np.ndarray, np.ndarray]:
    n_nodes = schedule.instance.n_nodes
    out = []
    for name, t in (("est", est), ("lst", lst)):
        arr = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
        if arr.shape != (n_nodes,):
            raise ValueError(f"{name} must have shape ({n_nodes},) (one value per node of this "
                             f"schedule's graph), got {arr.shape}")
        out.append(arr.astype(np.float64))
    return out[0], out[1]


def critical_path(schedule: Schedule, est, lst) -> list[int]:
    """One critical path (operation nodes from the first to the last, S and T excluded), traced
    from T back to S with the deterministic tie-break of the module docstring. est, lst: (N,)
    times of this schedule (from :func:`batched_times`)."""
    est, lst = _check_times(schedule, est, lst)
    inst = schedule.instance
    n, m = inst.n_jobs, inst.n_machines
    p = inst.node_durations().astype(np.float64)
    c = est[-1]
    mpred = np.zeros(inst.n_nodes, dtype=np.int64)  # 0 = no machine predecessor
    nodes = schedule.machine_nodes()
    mpred[nodes[:, 1:]] = nodes[:, :-1]
    last = 1 + np.arange(n) * m + (m - 1)
    tight = np.flatnonzero(est[last] + p[last] == c)
    if tight.size == 0:
        raise ValueError("est is not consistent with this schedule (no job ends at the makespan)")
    v = int(last[tight[0]])
    path = []
    while v != 0:
        if est[v] != lst[v]:
            raise ValueError("est/lst are not consistent with this schedule (a node on the "
                             "tight path is not critical)")
        path.append(v)
        k = (v - 1) % m
        cands = [int(mpred[v])] if mpred[v] else []
        cands.append(v - 1 if k > 0 else 0)
        for u in cands:
            if est[u] + p[u] == est[v]:
                v = u
                break
        else:
            raise ValueError("est is not consistent with this schedule (no tight predecessor)")
    return path[::-1]


def n5_moves(schedule: Schedule, est, lst) -> list[tuple[int, int]]:
    """The N5 moves of ``schedule`` as ordered node pairs (u, v), u directly before v on their
    machine. est, lst: (N,) start times of this schedule (``batched_times`` on its graph)."""
    path = critical_path(schedule, est, lst)
    mch = schedule.instance.node_machines()[path]
    blocks, start = [], 0
    for i in range(1, len(path) + 1):
        if i == len(path) or mch[i] != mch[i - 1]:
            blocks.append(path[start:i])
            start = i
    moves: list[tuple[int, int]] = []
    last = len(blocks) - 1
    for b, block in enumerate(blocks):
        if len(block) < 2:
            continue
        if b > 0:
            moves.append((block[0], block[1]))
        if b < last and (len(block) > 2 or b == 0):
            moves.append((block[-2], block[-1]))
    return moves


def apply_swap(schedule: Schedule, u: int, v: int) -> Schedule:
    """Swap the adjacent operations u -> v; raises ``ValueError`` unless (u, v) is an N5 move of
    ``schedule`` (which keeps it feasible)."""
    for name, x in (("u", u), ("v", v)):
        if not isinstance(x, (int, np.integer)) or isinstance(x, bool):
            raise TypeError(f"{name} must be an int node id, got {type(x).__name__}")
    est, lst, _ = schedule.times()
    moves = n5_moves(schedule, est, lst)
    if (int(u), int(v)) not in moves:
        raise ValueError(f"(u, v) = ({u}, {v}) is not an N5 move of the current schedule; its N5 "
                         f"moves are {moves}")
    return schedule.swapped(int(u), int(v))
