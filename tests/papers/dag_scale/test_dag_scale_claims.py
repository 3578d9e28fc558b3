import numpy as np
import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Estimate
from iclr24.papers.dag_scale import run_learner, simulate_linear_sem
from iclr24.papers.dag_scale.claims import learners_under_rescaling, population_scale_attack

VERDICTS = {HOLDS, FAILS, INCONCLUSIVE}


def test_population_claim_smoke_and_null_arms(check_smoke_claim):
    m = check_smoke_claim(population_scale_attack, [
        "target_wins", "consistent_after", "consistent_before", "ll_shift_spread",
        "target_wins_unattacked", "consistent_after_unattacked", "target_wins_random_rescale",
        "consistent_after_random_rescale", "varsortability_before", "varsortability_after"])
    # the attack makes its target win; the null arms (this run) do not
    assert m.metrics["target_wins"] == 1.0
    assert m.metrics["target_wins_unattacked"] == 0.0        # equal variances: truth wins
    assert m.metrics["consistent_after_unattacked"] == 1.0
    assert m.metrics["target_wins_random_rescale"] < 0.5
    assert population_scale_attack.verdict(m.metrics, "smoke") == HOLDS
    # each null arm in the attack's place: the rule with its control must not hold
    for arm in ("_unattacked", "_random_rescale"):
        null = {**m.metrics, "target_wins": m.metrics[f"target_wins{arm}"],
                "consistent_after": m.metrics[f"consistent_after{arm}"]}
        for scale in ("smoke", "small"):
            assert population_scale_attack.verdict(null, scale) != HOLDS


def test_population_control_blocks_a_passing_null():
    good = {"consistent_before": 1.0, "target_wins": 1.0, "consistent_after": 0.0,
            "ll_shift_spread": 0.0, "target_wins_unattacked": 0.0,
            "target_wins_random_rescale": 0.0}
    assert population_scale_attack.verdict(good, "small") == HOLDS
    assert population_scale_attack.verdict({**good, "target_wins": 0.5}, "small") == FAILS
    for bad in ({"target_wins_random_rescale": 1.0}, {"target_wins_unattacked": 1.0},
                {"consistent_before": 0.5}):
        j = population_scale_attack.judge({**good, **bad}, "small")
        assert j.verdict == INCONCLUSIVE and "test bed cannot tell" in j.reason


def test_learners_claim_smoke_and_resample_null(check_smoke_claim):
    m = check_smoke_claim(learners_under_rescaling, [
        "shd_increase_ls", "pc_change", "shd_increase_golem_nv", "shd_increase_golem_ev",
        "shd_increase_ls_resample"])
    assert {r["shd_dagma_ls_resample"] >= 0 for r in m.tables["seeds"]} == {True}
    # the resample null (this run) in the attack's place: not holds at either scale
    null = {**m.metrics, "shd_increase_ls": m.metrics["shd_increase_ls_resample"]}
    for scale in ("smoke", "small"):
        assert learners_under_rescaling.verdict(null, scale) != HOLDS


def test_learners_rule_and_control():
    def est(values):
        return Estimate.mean_of(values)
    good = {"shd_increase_ls": est([10, 12, 11, 9, 13]), "pc_change": est([0, 0, 0, 0, 0]),
            "shd_increase_ls_resample": est([0, 1, 0, -1, 0])}
    assert learners_under_rescaling.verdict(good, "small") == HOLDS
    assert learners_under_rescaling.verdict(
        {**good, "shd_increase_ls": est([0, 1, -1, 0, 0])}, "small") == FAILS
    j = learners_under_rescaling.judge(
        {**good, "shd_increase_ls_resample": est([10, 12, 11, 9, 13])}, "small")
    assert j.verdict == INCONCLUSIVE and "test bed cannot tell" in j.reason


def test_pc_is_scale_invariant_and_learner_errors():
    X, _, _ = simulate_linear_sem(5, 2, "ER", 500, 1.0, np.random.default_rng(2))
    s = np.array([0.1, 10.0, 1.0, 3.0, 0.3])
    np.testing.assert_array_equal(run_learner("pc", X), run_learner("pc", X * s))
    with pytest.raises(ValueError, match="name"):
        run_learner("notears", X)
    with pytest.raises(ValueError, match="X must"):
        run_learner("pc", X[:2])
