"""The MBPO loop with COPlanner's plug-ins: stored rewards are never penalised, the rollout
schedule, exploration uses UP-MPC(+), determinism, config validation."""

import numpy as np
import pytest
import torch

from iclr24.kits.reinforcement import SACConfig
from iclr24.papers.coplanner import (
    MBPO,
    COPlannerConfig,
    PendulumEnv,
    pendulum_step,
    pendulum_termination,
    rollout_length,
)


def tiny(**kw):
    base = {"n_members": 2, "model_hidden": 8, "model_layers": 1, "model_batch_size": 32,
            "max_model_epochs": 2, "initial_steps": 20, "freq_train_model": 20,
            "rollouts_per_step": 2, "rollout_schedule": (2, 3, 1, 2), "epoch_length": 20,
            "sac_updates_per_step": 1, "n_candidates": 3, "planning_horizon": 2,
            "sac": SACConfig(hidden=(8,), batch_size=16, learning_starts=0)}
    base.update(kw)
    return COPlannerConfig(**base)


def test_stored_rewards_are_never_penalised(one_torch_thread):
    """The SAC buffer receives exactly the model's rewards, whatever the uncertainty."""
    agent = MBPO(PendulumEnv(), tiny(), seed=0, termination_fn=pendulum_termination)
    fit = agent.model.fit

    def sample(obs, act, generator=None):
        # reward 1 everywhere, a large action-dependent uncertainty
        return obs + 0.01, torch.ones(len(obs)), 10.0 * act[:, 0].abs()

    agent.model.sample = sample
    agent.model.fit = lambda *a, **k: (fit(*a, **k), {"val_mse": 0.0})[1]
    agent.train(41)
    rewards = agent.sac_buffer.all().rewards
    assert len(agent.sac_buffer) > 0
    assert torch.all(rewards == 1.0)
    # with sign −1 the chosen actions are the candidates' least uncertain ones: smaller |a|
    # than plain policy samples from the same states
    starts = agent.real_buffer.all().obs[:200].numpy()
    cons = agent.generate_rollouts(starts, 1, conservative=True)
    plain = agent.generate_rollouts(starts, 1, conservative=False)
    assert np.abs(cons.actions).mean() < np.abs(plain.actions).mean()
    assert np.all(cons.rewards == 1.0)


def test_explore_action_is_optimistic(one_torch_thread):
    agent = MBPO(PendulumEnv(), tiny(), seed=0, termination_fn=pendulum_termination)
    agent.model.fitted = True
    agent.model.sample = lambda obs, act, g=None: (obs, torch.zeros(len(obs)), act[:, 0].abs())
    obs = np.zeros(3, np.float32)
    picked = [abs(float(agent.explore_action(obs)[0])) for _ in range(30)]
    agent_plain = MBPO(PendulumEnv(), tiny(use_optimistic=False), seed=0,
                       termination_fn=pendulum_termination)
    agent_plain.model.fitted = True
    plain = [abs(float(agent_plain.explore_action(obs)[0])) for _ in range(30)]
    assert np.mean(picked) > np.mean(plain)


def test_rollout_schedule():
    sched = (20, 150, 1, 4)
    assert [rollout_length(sched, e) for e in (1, 20, 21, 85, 150, 400)] == [1, 1, 1, 2, 4, 4]
    assert [rollout_length((1, 4, 1, 3), e) for e in (1, 2, 3, 4, 9)] == [1, 1, 2, 3, 3]


def test_train_is_deterministic_and_records(one_torch_thread):
    def run():
        agent = MBPO(PendulumEnv(), tiny(), seed=3, termination_fn=pendulum_termination)
        return agent.train(60, make_eval_env=lambda: PendulumEnv(max_episode_steps=20),
                           eval_every=30, eval_episodes=1, true_dynamics=pendulum_step)

    a, b = run(), run()
    assert a.eval_returns == b.eval_returns and a.rollout_error == b.rollout_error
    assert a.eval_steps == [30, 60] and a.refit_steps == [20, 40]
    assert a.rollout_lengths == [1, 2]
    assert all(np.isfinite(a.rollout_error)) and all(u > 0 for u in a.rollout_uncertainty)


def test_bad_config():
    with pytest.raises(ValueError, match="planning_horizon must be an int >= 1"):
        COPlannerConfig(planning_horizon=0)
    with pytest.raises(ValueError, match="n_candidates must be an int >= 1"):
        COPlannerConfig(n_candidates=0)
    with pytest.raises(ValueError, match="conservative_rate"):
        COPlannerConfig(conservative_rate=-1.0)
    with pytest.raises(ValueError, match="initial_steps"):
        COPlannerConfig(initial_steps=1)
    with pytest.raises(ValueError, match="rollout_schedule"):
        COPlannerConfig(rollout_schedule=(5, 5, 1, 2))
    with pytest.raises(TypeError, match="config"):
        MBPO(PendulumEnv(), {"n_candidates": 5}, seed=0, termination_fn=pendulum_termination)
    agent = MBPO(PendulumEnv(), tiny(), seed=0, termination_fn=pendulum_termination)
    with pytest.raises(ValueError, match="total_steps"):
        agent.train(0)
    with pytest.raises(RuntimeError, match="not fitted"):
        agent.generate_rollouts(np.zeros((2, 3)), 1)


def test_non_finite_observations_are_refused(one_torch_thread):
    agent = MBPO(PendulumEnv(), tiny(), seed=0, termination_fn=pendulum_termination)
    agent.train(25)
    with pytest.raises(ValueError, match="obs must be finite"):
        agent.explore_action(np.array([np.nan, 0.0, 0.0]))
    with pytest.raises(ValueError, match="obs must have 3 entries"):
        agent.explore_action(np.zeros(2))
    with pytest.raises(ValueError, match="start_obs must be finite"):
        agent.generate_rollouts(np.array([[0.0, np.nan, 0.0]]), 1)
