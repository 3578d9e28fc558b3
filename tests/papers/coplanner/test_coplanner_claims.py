"""Smoke runs of the three COPlanner claims with their null arms in the method's place (the
verdict at the reproduction scale must not be "holds"), and the rules and controls on
hand-made numbers (holds / fails / the test bed cannot tell)."""

import numpy as np
import pytest

from iclr24.claims import Estimate, Scale, seed_difference
from iclr24.papers.coplanner.claims import (
    PENDULUM_LEVEL,
    _goal_fraction,
    _steps_to_level,
    mountaincar_exploration,
    pendulum_efficiency,
    rollout_model_error,
)


def _est(values):
    return Estimate.mean_of(values)


# -- smoke runs: the null arm measured in the run, put in the method's place --------------

def test_pendulum_smoke_and_mbpo_as_method_does_not_hold(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(pendulum_efficiency, [
        "steps_to_level_diff", "steps_to_level_coplanner", "steps_to_level_mbpo",
        "level_reached_fraction", "untrained_return", "mean_eval_return_diff",
        "final_return_diff", "model_error_coplanner", "model_error_mbpo"])
    assert m.figure is not None
    # the null arm (MBPO, the mechanism switched off, measured in this run) as the method
    mbpo = m.metrics["steps_to_level_mbpo"]
    null = {**m.metrics, "steps_to_level_coplanner": mbpo,
            "steps_to_level_diff": seed_difference([mbpo], [mbpo])}
    assert pendulum_efficiency.verdict(null, Scale.SMALL) != "holds"
    assert pendulum_efficiency.verdict(null, Scale.SMOKE) != "holds"


def test_rollout_error_smoke_rate0_as_method_does_not_hold(check_smoke_claim,
                                                           one_torch_thread):
    keys = ["error_ratio", "error_vs_rate0", "uncertainty_only_vs_rate0", "error_ratio_rate0",
            "error_ratio_rate_scaled", "uncertainty_vs_rate0", "error_policy",
            "error_conservative", "error_rate0"]
    m = check_smoke_claim(rollout_model_error, keys)
    assert m.metrics["n_checkpoints"] >= 2
    # the null arm (UP-MPC with α_c = 0, measured in this run) as the method: its error over
    # the policy's, and over itself (exactly 1)
    null = {**m.metrics, "error_ratio": m.metrics["error_ratio_rate0"], "error_vs_rate0": 1.0}
    assert rollout_model_error.verdict(null, Scale.SMALL) != "holds"
    assert rollout_model_error.verdict(null, Scale.SMOKE) != "holds"
    # determinism: same seed, same numbers
    again = rollout_model_error(Scale.SMOKE, 0)
    assert all(again.metrics[k] == m.metrics[k] for k in keys)


def test_mountaincar_smoke_and_mbpo_as_method_does_not_hold(check_smoke_claim,
                                                            one_torch_thread):
    m = check_smoke_claim(mountaincar_exploration, [
        "final_return_diff", "eval_goal_fraction_coplanner", "eval_goal_fraction_mbpo",
        "reach_fraction_coplanner", "reach_fraction_mbpo", "max_position_diff"])
    null = {**m.metrics, "final_return_diff": 0.0,
            "eval_goal_fraction_coplanner": m.metrics["eval_goal_fraction_mbpo"],
            "final_return_coplanner": m.metrics["final_return_mbpo"]}
    assert mountaincar_exploration.verdict(null, Scale.SMALL) != "holds"
    assert mountaincar_exploration.verdict(null, Scale.SMOKE) != "holds"


# -- the rules on hand-made numbers --------------------------------------------------------

def test_pendulum_rule_holds_fails_and_cannot_tell():
    good = {"steps_to_level_diff": _est([-500.0, -550.0, -450.0]),
            "level_reached_fraction": 1.0, "untrained_return": _est([-1300.0, -1200.0, -1400.0])}
    assert pendulum_efficiency.verdict(good, Scale.SMALL) == "holds"
    worse = {**good, "steps_to_level_diff": _est([500.0, 550.0, 450.0])}
    assert pendulum_efficiency.verdict(worse, Scale.SMALL) == "fails"
    tie = {**good, "steps_to_level_diff": _est([0.0, 0.0, 0.0])}
    assert pendulum_efficiency.verdict(tie, Scale.SMALL) == "fails"
    noisy = {**good, "steps_to_level_diff": _est([-500.0, 250.0, 0.0])}
    assert pendulum_efficiency.verdict(noisy, Scale.SMALL) == "inconclusive"
    # the test bed cannot tell: a seed where neither arm reached the level, or a level the
    # untrained policy (null arm) already reaches
    for broken in ({"level_reached_fraction": 2 / 3},
                   {"untrained_return": _est([-500.0, -550.0, -450.0])}):
        assert pendulum_efficiency.verdict({**good, **broken}, Scale.SMALL) == "inconclusive"
    assert pendulum_efficiency.verdict({**good, "steps_to_level_diff": float("nan")},
                                       Scale.SMALL) == "inconclusive"
    assert pendulum_efficiency.control_text(Scale.SMALL).endswith(f"< {PENDULUM_LEVEL:.0f}")


def test_steps_to_level_and_its_bad_inputs():
    assert _steps_to_level([250, 500, 750], [-1200.0, -600.0, -200.0], -600.0, 1000) == 500
    assert _steps_to_level([250, 500], [-1200.0, -900.0], -600.0, 1000) == 1000
    with pytest.raises(ValueError, match="same length"):
        _steps_to_level([250], [-1.0, -2.0], -600.0, 1000)
    with pytest.raises(ValueError, match="eval_returns must be finite"):
        _steps_to_level([250, 500], [np.nan, -100.0], -600.0, 1000)
    with pytest.raises(ValueError, match="level must be finite"):
        _steps_to_level([250], [-1.0], np.nan, 1000)


def test_rollout_error_rule_needs_the_uncertainty_term():
    good = {"error_ratio": _est([0.8, 0.85, 0.9]), "error_vs_rate0": _est([0.9, 0.92, 0.94]),
            "uncertainty_only_vs_rate0": _est([0.7, 0.75, 0.8])}
    assert rollout_model_error.verdict(good, Scale.SMALL) == "holds"
    # the audit's case: below the policy, but no lower than reward-only planning (α_c = 0)
    audit = {**good, "error_ratio": _est([0.9516, 1.0174, 1.0208, 0.9439, 0.95]),
             "error_vs_rate0": _est([1.002, 1.0005, 1.0007, 0.9986, 1.001])}
    assert rollout_model_error.verdict(audit, Scale.SMALL) != "holds"
    reward_only = {**good, "error_vs_rate0": _est([1.0, 1.0, 1.0])}
    assert rollout_model_error.verdict(reward_only, Scale.SMALL) == "fails"
    worse = {**good, "error_ratio": _est([1.1, 1.12, 1.15]),
             "error_vs_rate0": _est([1.05, 1.06, 1.07])}
    assert rollout_model_error.verdict(worse, Scale.SMALL) == "fails"
    # the test bed cannot tell: ranking by uncertainty alone does not lower the true error
    blind = {**good, "uncertainty_only_vs_rate0": _est([1.0, 1.02, 0.98])}
    assert rollout_model_error.verdict(blind, Scale.SMALL) == "inconclusive"


def test_mountaincar_rule_requires_goal_reaches():
    good = {"final_return_diff": _est([60.0, 80.0, 70.0]),
            "eval_goal_fraction_coplanner": 1.0, "eval_goal_fraction_mbpo": 0.0}
    assert mountaincar_exploration.verdict(good, Scale.SMALL) == "holds"
    worse = {**good, "final_return_diff": _est([-60.0, -80.0, -70.0]),
             "eval_goal_fraction_coplanner": 0.0, "eval_goal_fraction_mbpo": 1.0}
    assert mountaincar_exploration.verdict(worse, Scale.SMALL) == "fails"
    # the audit's case: nobody reaches the flag; the return difference is action cost
    cost_noise = {"final_return_diff": _est([0.29, 0.24, 0.3]),
                  "eval_goal_fraction_coplanner": 0.0, "eval_goal_fraction_mbpo": 0.0}
    assert mountaincar_exploration.verdict(cost_noise, Scale.SMALL) == "inconclusive"
    assert mountaincar_exploration.verdict({**cost_noise, "final_return_diff": 0.29},
                                           Scale.SMOKE) == "inconclusive"


def test_goal_fraction_reads_positive_returns_as_goal_reaches():
    # a goal episode returns 100 − 0.1 Σa² > 0 (at most 999 steps); without the goal, <= 0
    assert _goal_fraction([93.0, -0.5, 0.0, -99.9]) == 0.25
