"""The two environments: gymnasium's check_env, step-for-step agreement with gymnasium's own
Pendulum-v1 / MountainCarContinuous-v0, and the vectorised true dynamics."""

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from iclr24.papers.coplanner import (
    MountainCarEnv,
    PendulumEnv,
    mountaincar_step,
    mountaincar_termination,
    pendulum_step,
    pendulum_termination,
)

PAIRS = [(PendulumEnv, "Pendulum-v1"), (MountainCarEnv, "MountainCarContinuous-v0")]


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("make", [PendulumEnv, MountainCarEnv])
def test_check_env(make):
    check_env(make(), skip_render_check=True)


@pytest.mark.parametrize("make,name", PAIRS)
def test_matches_gymnasium_step_for_step(make, name):
    mine, ref = make(), gym.make(name)
    o1, _ = mine.reset(seed=5)
    o2, _ = ref.reset(seed=5)
    np.testing.assert_allclose(o1, o2, atol=1e-6)
    rng = np.random.default_rng(0)
    high = mine.action_space.high
    for t in range(300):
        # a biased push in MountainCar so that the car also hits the left wall
        a = (rng.uniform(-1, 1, 1) * high).astype(np.float32)
        r1, r2 = mine.step(a), ref.step(a)
        np.testing.assert_allclose(r1[0], r2[0], atol=1e-3)
        assert r1[1] == pytest.approx(r2[1], abs=1e-3)
        assert r1[2:4] == r2[2:4]


def test_mountaincar_goal_terminates_with_bonus():
    obs = np.array([[0.449, 0.06], [0.0, 0.0]])
    nxt, rew = mountaincar_step(obs, np.array([[1.0], [0.5]]))
    assert mountaincar_termination(nxt).tolist() == [True, False]
    assert rew[0] == pytest.approx(100 - 0.1) and rew[1] == pytest.approx(-0.025)
    env = MountainCarEnv()
    env.reset(seed=0)
    env._obs = obs[0].copy()
    _, r, terminated, truncated, _ = env.step(np.array([1.0], np.float32))
    assert terminated and not truncated and r == pytest.approx(99.9)


def test_pendulum_step_closed_form():
    # hanging straight down at rest with zero torque: gravity term sin(pi) = 0, stays put;
    # upright at rest: reward 0, next angular velocity 3 g / (2 l) sin(0) dt = 0
    obs = np.array([[-1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    nxt, rew = pendulum_step(obs, np.zeros((3, 1)))
    np.testing.assert_allclose(nxt[:2], obs[:2], atol=1e-12)
    np.testing.assert_allclose(rew[:2], [-np.pi**2, 0.0], atol=1e-12)
    assert nxt[2, 2] == pytest.approx(15.0 * 0.05)  # θ = π/2: θ̇' = 3g/(2l) dt
    assert not pendulum_termination(nxt).any()


def test_vectorised_step_equals_env_step():
    env = PendulumEnv()
    obs, _ = env.reset(seed=1)
    a = np.array([0.7], np.float32)
    nxt, rew, *_ = env.step(a)
    v_next, v_rew = pendulum_step(obs[None].astype(np.float64), a[None])
    np.testing.assert_allclose(nxt, v_next[0], atol=1e-5)
    assert rew == pytest.approx(v_rew[0], abs=1e-5)


def test_truncation_after_max_steps():
    env = PendulumEnv(max_episode_steps=3)
    env.reset(seed=0)
    flags = [env.step(np.zeros(1, np.float32))[3] for _ in range(3)]
    assert flags == [False, False, True]


def test_bad_inputs():
    with pytest.raises(ValueError, match="max_episode_steps"):
        PendulumEnv(max_episode_steps=0)
    with pytest.raises(ValueError, match="obs must have shape"):
        pendulum_step(np.zeros((2, 2)), np.zeros((2, 1)))
    with pytest.raises(ValueError, match="action must have shape"):
        mountaincar_step(np.zeros((2, 2)), np.zeros((3, 1)))


def test_non_finite_inputs_are_refused():
    """A NaN state or action has no true successor: refused, never propagated silently."""
    with pytest.raises(ValueError, match="obs must be finite"):
        pendulum_step(np.array([[np.nan, 0.0, 0.0]]), np.zeros((1, 1)))
    with pytest.raises(ValueError, match="action must be finite"):
        mountaincar_step(np.zeros((1, 2)), np.array([[np.inf]]))
    for make in (PendulumEnv, MountainCarEnv):
        env = make()
        env.reset(seed=0)
        with pytest.raises(ValueError, match="action must be finite"):
            env.step(np.array([np.nan]))
