import gymnasium as gym
import numpy as np
import pytest
import torch
from gymnasium.utils.env_checker import check_env

from iclr24.kits.reinforcement import (
    SAC,
    SACConfig,
    TanhGaussianActor,
    TransitionBuffer,
    evaluate_policy,
    normalized_score,
    train_sac,
)


class TargetBandit(gym.Env):
    """One-step continuous bandit: reward −(a − 0.5)², so the optimal action is 0.5."""

    def __init__(self):
        self.observation_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
        self.action_space = gym.spaces.Box(-1.0, 1.0, (1,), np.float32)

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return np.zeros(1, np.float32), {}

    def step(self, action):
        reward = -float((np.asarray(action).reshape(-1)[0] - 0.5) ** 2)
        return np.zeros(1, np.float32), reward, True, False, {}


def test_the_test_environment_passes_check_env():
    check_env(TargetBandit(), skip_render_check=True)


def test_tanh_gaussian_log_prob_is_the_change_of_variables():
    torch.manual_seed(0)
    actor = TanhGaussianActor(3, 1, (16,), action_low=-2.0, action_high=4.0)
    obs = torch.randn(200, 3)
    a, logp, det = actor.sample(obs, torch.Generator().manual_seed(0))
    mean, log_std = actor.distribution_params(obs)
    u = torch.atanh(((a - 1.0) / 3.0).clamp(-1 + 1e-7, 1 - 1e-7))
    # p_a(a) = N(u; μ, σ) / |da/du|, da/du = 3 (1 − tanh(u)²)
    ref = torch.distributions.Normal(mean, log_std.exp()).log_prob(u) \
        - torch.log(3.0 * (1 - torch.tanh(u) ** 2))
    assert torch.allclose(logp, ref.squeeze(-1), atol=1e-3)
    assert bool(((a > -2) & (a < 4)).all())
    assert torch.allclose(det, actor(obs)) and bool((log_std >= -5).all() & (log_std <= 2).all())
    with pytest.raises(ValueError, match="action bounds"):
        TanhGaussianActor(3, 1, (16,), action_low=1.0, action_high=1.0)


def test_target_update_is_polyak_and_alpha_is_tuned():
    torch.manual_seed(0)
    agent = SAC(2, 1, SACConfig(hidden=(16,), tau=1.0, batch_size=8, policy_frequency=1))
    buf = TransitionBuffer(2, 1, 32, seed=0)
    buf.add(np.random.default_rng(0).normal(size=(32, 2)), np.zeros((32, 1)), np.ones(32),
            np.zeros((32, 2)), np.zeros(32))
    alpha0 = agent.alpha
    agent.update(buf.sample(8))
    for p, tp in zip(agent.q1.parameters(), agent.q1_target.parameters()):
        assert torch.equal(p, tp)            # τ = 1 copies the online critic
    assert agent.alpha != alpha0
    fixed = SAC(2, 1, SACConfig(hidden=(16,), autotune=False))
    fixed.update(buf.sample(8))
    assert fixed.alpha == pytest.approx(0.2)


def test_sac_learns_the_bandit(one_torch_thread):
    cfg = SACConfig(hidden=(32, 32), batch_size=64, learning_starts=64, actor_lr=3e-3,
                    critic_lr=3e-3)
    agent, run = train_sac(TargetBandit(), 600, seed=0, config=cfg)
    action = float(agent.act(np.zeros(1, np.float32), deterministic=True)[0])
    assert abs(action - 0.5) < 0.15
    assert np.mean(run.episode_returns[-100:]) > np.mean(run.episode_returns[:64])
    again, _ = train_sac(TargetBandit(), 100, seed=0, config=cfg)
    again2, _ = train_sac(TargetBandit(), 100, seed=0, config=cfg)
    x = torch.zeros(4, 1)
    assert torch.equal(again.actor(x), again2.actor(x))   # seeded: same numbers


def test_evaluation_uses_a_fresh_env_and_seeds():
    made = []

    def make_env():
        made.append(TargetBandit())
        return made[-1]

    returns = evaluate_policy(lambda obs: np.array([0.0], np.float32), make_env, episodes=3,
                              seed=5)
    assert returns == [-0.25, -0.25, -0.25] and len(made) == 1
    assert normalized_score([-0.25, 0.0], -0.25, 0.0).tolist() == [0.0, 100.0]
    with pytest.raises(ValueError, match="differ"):
        normalized_score([1.0], 1.0, 1.0)
    with pytest.raises(ValueError, match="episodes"):
        evaluate_policy(lambda o: o, make_env, episodes=0, seed=0)


def test_config_and_loop_errors():
    with pytest.raises(ValueError, match="tau"):
        SACConfig(tau=0.0)
    with pytest.raises(ValueError, match="batch_size"):
        SACConfig(batch_size=0)
    with pytest.raises(TypeError, match="Box action space"):
        train_sac(gym.make("CartPole-v1"), 10, seed=0)
