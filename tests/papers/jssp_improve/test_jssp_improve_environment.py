"""The improvement MDP: rewards relative to the incumbent, incumbent bookkeeping, tabu, errors."""

import numpy as np
import pytest

from iclr24.papers.jssp_improve import ImprovementEnv, random_instance


def test_rewards_are_relative_to_the_incumbent():
    insts = [random_instance(6, 6, seed=s) for s in range(4)]
    env = ImprovementEnv(insts, "fdd_mwkr", horizon=40)
    env.reset()
    c0 = env.makespan.copy()
    rng = np.random.default_rng(0)
    total = np.zeros(4)
    saw_worse = False
    while not env.finished:
        inc_before = env.incumbent.copy()
        prev = env.makespan.copy()
        acts = [ms[int(rng.integers(len(ms)))] if ms else None for ms in env.moves]
        r, done = env.step(acts)
        np.testing.assert_array_equal(r, np.maximum(inc_before - env.makespan, 0))
        assert (r >= 0).all()
        saw_worse |= bool(((env.makespan < prev) & (env.makespan >= inc_before)).any())
        total += r
        np.testing.assert_array_equal(env.incumbent, np.minimum(inc_before, env.makespan))
        np.testing.assert_array_equal(done, [not ms for ms in env.moves])
    np.testing.assert_array_equal(total, c0 - env.incumbent)  # return = C(s0) - C*_T
    assert [s.makespan() for s in env.best_schedules] == env.incumbent.tolist()
    assert saw_worse  # an improvement over the previous state that is not a new incumbent: r = 0


def test_tabu_forbids_undoing_the_last_move():
    env = ImprovementEnv([random_instance(8, 6, seed=3)], horizon=30)
    env.reset()
    for _ in range(30):
        if not env.moves[0]:
            break
        u, v = env.moves[0][0]
        env.step([(u, v)])
        assert (v, u) not in env.moves[0]


def test_env_errors():
    env = ImprovementEnv([random_instance(5, 4, seed=1)], horizon=3)
    with pytest.raises(RuntimeError, match="reset"):
        env.step([None])
    env.reset()
    with pytest.raises(ValueError, match="one move per instance"):
        env.step([])
    with pytest.raises(ValueError, match="not an allowed N5 move"):
        env.step([(1, 2)])
    with pytest.raises(ValueError, match="horizon"):
        ImprovementEnv([random_instance(2, 2)], horizon=-1)
    with pytest.raises(TypeError, match="JSSPInstance"):
        ImprovementEnv([], horizon=1)
