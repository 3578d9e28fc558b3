"""UP-MPC on hand-built models: the sign decides between low- and high-uncertainty candidates,
the score is the discounted closed form, batching over states, bad input."""

import pytest
import torch

from iclr24.papers.coplanner import up_mpc_action, up_mpc_scores

ACTIONS = torch.tensor([[-1.0], [-0.5], [0.0], [0.5], [1.0]])


def cycling_policy(obs, generator):
    """Candidate c of every state gets ACTIONS[c] (rows are ordered candidate-major)."""
    reps = obs.shape[0] // len(ACTIONS) if obs.shape[0] % len(ACTIONS) == 0 else None
    if reps is None:
        raise AssertionError("the planner should query the policy on N_c · n rows")
    return ACTIONS.repeat_interleave(reps, dim=0)


class HandModel:
    """Next state = state (frozen); reward r(a) and uncertainty u(a) fixed functions of a."""

    def __init__(self, reward, uncertainty):
        self.reward, self.uncertainty = reward, uncertainty

    def sample(self, obs, act, generator=None):
        a = act[:, 0]
        return obs.clone(), self.reward(a), self.uncertainty(a)


def test_sign_minus_picks_low_uncertainty_plus_picks_high():
    model = HandModel(lambda a: torch.zeros_like(a), lambda a: a.abs())
    obs = torch.zeros(3, 2)
    low = up_mpc_action(obs, cycling_policy, model, sign=-1, rate=2.0)
    high = up_mpc_action(obs, cycling_policy, model, sign=+1, rate=1.0)
    assert torch.all(low == 0.0)
    assert torch.all(high.abs() == 1.0)


def test_rate_trades_reward_against_uncertainty():
    # reward favours a = 1, uncertainty also grows with a: a small rate follows the reward,
    # a large conservative rate backs off to a = -1 (the least uncertain)
    model = HandModel(lambda a: a, lambda a: a + 1.0)
    obs = torch.zeros(1, 1)
    assert up_mpc_action(obs, cycling_policy, model, sign=-1, rate=0.0).item() == 1.0
    assert up_mpc_action(obs, cycling_policy, model, sign=-1, rate=0.5).item() == 1.0
    assert up_mpc_action(obs, cycling_policy, model, sign=-1, rate=2.0).item() == -1.0


def test_score_is_the_discounted_closed_form():
    model = HandModel(lambda a: 2 * a, lambda a: a**2)
    h, gr, gu, rate = 4, 0.9, 0.5, 1.5
    first, score, ret, unc = up_mpc_scores(torch.zeros(2, 1), cycling_policy, model,
                                           horizon=h, gamma_r=gr, gamma_u=gu, rate=rate, sign=-1)
    a = ACTIONS[:, 0]
    want_ret = 2 * a * sum(gr**i for i in range(h))
    want_unc = a**2 * sum(gu**i for i in range(h))
    for j in range(2):
        torch.testing.assert_close(ret[:, j], want_ret)
        torch.testing.assert_close(unc[:, j], want_unc)
        torch.testing.assert_close(score[:, j], want_ret - rate * want_unc)
        torch.testing.assert_close(first[:, j], ACTIONS)


def test_state_dependent_choice_is_per_row():
    # uncertainty |a - s_0|: the conservative choice tracks each row's own state
    model = HandModel.__new__(HandModel)
    model.sample = lambda obs, act, g=None: (obs.clone(), torch.zeros(len(obs)),
                                             (act[:, 0] - obs[:, 0]).abs())
    obs = torch.tensor([[-1.0], [0.5], [0.0]])
    out = up_mpc_action(obs, cycling_policy, model, sign=-1)
    torch.testing.assert_close(out, obs)


def test_bad_inputs():
    model = HandModel(lambda a: a, lambda a: a)
    obs = torch.zeros(1, 1)
    with pytest.raises(ValueError, match="horizon must be an int >= 1"):
        up_mpc_action(obs, cycling_policy, model, horizon=0)
    with pytest.raises(ValueError, match="n_candidates must be an int >= 1"):
        up_mpc_action(obs, cycling_policy, model, n_candidates=0)
    with pytest.raises(ValueError, match="sign"):
        up_mpc_action(obs, cycling_policy, model, sign=0)
    with pytest.raises(ValueError, match="rate"):
        up_mpc_action(obs, cycling_policy, model, rate=-1.0)
    with pytest.raises(ValueError, match="gamma_r"):
        up_mpc_action(obs, cycling_policy, model, gamma_r=1.5)
    with pytest.raises(ValueError, match="obs must be"):
        up_mpc_action(torch.zeros(3), cycling_policy, model)


def test_non_finite_obs_or_scores_are_refused():
    """Before: a NaN state gave NaN scores and argmax silently returned candidate 0's action."""
    model = HandModel(lambda a: torch.zeros_like(a), lambda a: a.abs())
    with pytest.raises(ValueError, match="obs must be finite"):
        up_mpc_action(torch.full((5, 2), float("nan")), cycling_policy, model)
    with pytest.raises(ValueError, match="obs must be finite"):
        up_mpc_scores(torch.tensor([[0.0, float("inf")]]), cycling_policy, model)
    nan_model = HandModel(lambda a: torch.full_like(a, float("nan")), lambda a: a.abs())
    with pytest.raises(ValueError, match="non-finite rewards or uncertainties"):
        up_mpc_action(torch.zeros(5, 2), cycling_policy, nan_model)
