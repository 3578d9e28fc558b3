"""The improvement MDP of L2S (Sec. 4.1; official ``env/environment.JsspN5``), batched.

State: the disjunctive graph of the current complete schedule with node features
[p / 99, est / 1000, lst / 1000]. Action: one N5 move (u, v) of the current schedule. Transition:
the swap, then the batched evaluator recomputes all start times. Reward, relative to the
incumbent (best makespan so far) C*_t, never to the previous state:

    r_t = max(C*_t - C(s_{t+1}), 0)                                      (paper Eq. 1)

so the undiscounted return is C(s_0) - C*_T >= 0. As in the official environment a tabu list of
size 1 forbids undoing the previous move, and a state without N5 moves is "done" for that step
(the policy plays no move and the schedule stays). The horizon T is the number of steps.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .dispatch import dispatch
from .evaluator import batched_times
from .instance import JSSPInstance
from .schedule import Schedule, n5_moves, node_features, schedule_batch

__all__ = ["ImprovementEnv"]


class ImprovementEnv:
    """Batched N5 improvement environment over ``instances``.

    After :meth:`reset` (and each :meth:`step`): ``batch`` is the PyG batch of the current
    schedules (``x`` (N, 3), ``edge_index_job``, ``edge_index_mch``, ``edge_index``, ``batch``,
    ``ptr``), ``moves[g]`` the allowed N5 moves of instance g (node ids local to its graph),
    ``makespan`` (B,) current, ``incumbent`` (B,) best so far, ``best_schedules`` their schedules.
    """

    def __init__(self, instances: Sequence[JSSPInstance], init_rule: str = "fdd_mwkr",
                 horizon: int = 500, tabu_size: int = 1) -> None:
        if isinstance(instances, JSSPInstance):
            instances = [instances]
        if not isinstance(instances, Sequence) or not instances or not all(
                isinstance(x, JSSPInstance) for x in instances):
            raise TypeError("instances must be a non-empty sequence of JSSPInstance")
        if not isinstance(horizon, (int, np.integer)) or isinstance(horizon, bool) or horizon < 0:
            raise ValueError(f"horizon must be a non-negative int, got {horizon!r}")
        if not isinstance(tabu_size, int) or tabu_size < 0:
            raise ValueError(f"tabu_size must be a non-negative int, got {tabu_size!r}")
        self.instances = list(instances)
        self.init_rule = init_rule
        self.horizon = int(horizon)
        self.tabu_size = tabu_size
        self.t = 0
        self.schedules: list[Schedule] = []

    @property
    def finished(self) -> bool:
        return self.t >= self.horizon

    def reset(self, schedules: Sequence[Schedule] | None = None):
        """Start from ``schedules`` (default: the ``init_rule`` dispatch of every instance).
        Returns (batch, moves)."""
        if schedules is None:
            schedules = [dispatch(x, self.init_rule) for x in self.instances]
        elif len(schedules) != len(self.instances) or any(
                s.instance is not x for s, x in zip(schedules, self.instances)):
            raise ValueError("schedules must hold one Schedule per instance, of that instance")
        self.schedules = list(schedules)
        self.tabu: list[list[tuple[int, int]]] = [[] for _ in self.schedules]
        self.t = 0
        self._evaluate()
        self.incumbent = self.makespan.copy()
        self.best_schedules = list(self.schedules)
        return self.batch, self.moves

    def _evaluate(self) -> None:
        batch = schedule_batch(self.schedules)
        est, lst, c = batched_times(batch)
        batch.x = node_features(batch.dur, est, lst)
        ptr = batch.ptr.tolist()
        e, ls = est.numpy(), lst.numpy()
        self.moves = [[mv for mv in n5_moves(s, e[a:b], ls[a:b]) if mv not in tabu]
                      for s, tabu, a, b in zip(self.schedules, self.tabu, ptr[:-1], ptr[1:])]
        self.batch = batch
        self.makespan = c.numpy().copy()

    def step(self, actions: Sequence[tuple[int, int] | None]):
        """Apply one move per instance (``None`` where ``moves[g]`` is empty). Returns
        (rewards (B,), done (B,) bool = no move available in the new state)."""
        if not self.schedules:
            raise RuntimeError("call reset() before step()")
        if len(actions) != len(self.schedules):
            raise ValueError(f"actions must hold one move per instance ({len(self.schedules)}), "
                             f"got {len(actions)}")
        for g, a in enumerate(actions):
            if a is None:
                if self.moves[g]:
                    raise ValueError(f"actions[{g}] is None but instance {g} has N5 moves")
                continue
            a = (int(a[0]), int(a[1]))
            if a not in self.moves[g]:
                raise ValueError(f"actions[{g}] = {a} is not an allowed N5 move of the current "
                                 f"schedule; allowed: {self.moves[g]}")
            self.schedules[g] = self.schedules[g].swapped(*a)
            if self.tabu_size:
                self.tabu[g] = (self.tabu[g] + [(a[1], a[0])])[-self.tabu_size:]
        self._evaluate()
        reward = np.maximum(self.incumbent - self.makespan, 0.0)  # r_t = max(C*_t - C(s_t+1), 0)
        better = self.makespan < self.incumbent
        for g in np.flatnonzero(better):
            self.best_schedules[g] = self.schedules[g]
        self.incumbent = np.minimum(self.incumbent, self.makespan)
        self.t += 1
        done = np.array([not ms for ms in self.moves])
        return reward, done
