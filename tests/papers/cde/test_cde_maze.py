"""PointUMaze: gymnasium's check_env, walls, the batched rollout against the kit's evaluation
loop, expert and random references."""

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from iclr24.kits.reinforcement import evaluate_policy
from iclr24.papers.cde import PointUMaze, expert_action, rollout_returns
from iclr24.papers.cde.maze import LAYOUT


def test_passes_gymnasium_check_env():
    check_env(PointUMaze(), skip_render_check=True)


def test_walls_are_never_entered_and_arms_are_separated():
    env = PointUMaze()
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(600):
        obs, *_ = env.step(rng.uniform(-1, 1, 2).astype(np.float32))
        r, c = int(obs[1]), int(obs[0])
        assert LAYOUT[r][c] != "#"
    # pushing right from the start arm stops at the wall (radius 0.1) and never reaches the goal
    obs, _ = env.reset(seed=0)
    total = 0.0
    for _ in range(100):
        obs, reward, *_ = env.step(np.array([1.0, 0.0], np.float32))
        total += reward
    assert abs(obs[0] - 1.9) < 1e-6 and obs[2] == 0 and total == 0


def test_batched_rollout_matches_the_kit_evaluation_loop():
    policies = [expert_action, lambda o: np.tile([[0.3, 0.8]], (len(np.atleast_2d(o)), 1))]
    for pol in policies:
        batched = rollout_returns(pol, 3, seed=5)
        looped = evaluate_policy(lambda o, pol=pol: np.asarray(pol(o[None]))[0], PointUMaze, episodes=3,
                                 seed=5)
        assert np.allclose(batched, looped)


def test_expert_reaches_the_goal_and_random_does_not():
    expert = rollout_returns(expert_action, 5, seed=0)
    assert (expert > 200).all()  # arrives within ~70 of 300 steps and stays
    rng = np.random.default_rng(0)
    rand = rollout_returns(lambda o: rng.uniform(-1, 1, (len(o), 2)), 5, seed=0)
    assert (rand == 0).all()


def test_bad_inputs():
    with pytest.raises(ValueError, match="max_episode_steps"):
        PointUMaze(max_episode_steps=0)
    with pytest.raises(ValueError, match="position"):
        PointUMaze().reset(options={"position": (2.5, 1.5)})  # inside the middle wall
    with pytest.raises(ValueError, match="episodes"):
        rollout_returns(expert_action, 0, 0)
