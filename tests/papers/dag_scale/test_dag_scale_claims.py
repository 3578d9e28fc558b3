import numpy as np
import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Estimate
from iclr24.kits.replications import replicate
from iclr24.papers.dag_scale import run_learner, simulate_linear_sem
from iclr24.papers.dag_scale.claims import learners_under_rescaling, population_scale_attack
from iclr24.papers.dag_scale.experiments import learners_replication, population_replication

VERDICTS = {HOLDS, FAILS, INCONCLUSIVE}


def test_population_claim_smoke():
    m = population_scale_attack("smoke", 0)
    assert {"target_wins", "consistent_after", "ll_shift_spread"} <= set(m.metrics)
    assert population_scale_attack.verdict(m.metrics, "smoke") in VERDICTS


def test_learners_claim_smoke():
    m = learners_under_rescaling("smoke", 0)
    assert {"shd_increase_ls", "pc_change", "shd_increase_golem_nv",
            "shd_increase_golem_ev"} <= set(m.metrics)
    assert learners_under_rescaling.verdict(m.metrics, "smoke") in VERDICTS


def test_negative_control_population_without_attack():
    reps = replicate(population_replication, 10, 0, 5, attack=False)
    metrics = {k: float(np.mean([r[k] for r in reps]))
               for k in ("consistent_before", "consistent_after", "target_wins")}
    metrics["ll_shift_spread"] = max(r["ll_shift_spread"] for r in reps)
    assert metrics["target_wins"] < 0.5
    assert population_scale_attack.verdict(metrics, "small") != HOLDS


def test_negative_control_learners_without_attack():
    reps = replicate(learners_replication, 3, 0, 4, 200, attack=False,
                     dagma_iter=(2000, 4000))
    raw = np.array([r["shd_dagma_ls_raw"] for r in reps], float)
    att = np.array([r["shd_dagma_ls_attacked"] for r in reps], float)
    metrics = {"shd_increase_ls": Estimate.difference(att, raw, paired=True),
               "pc_change": Estimate.mean_of([r["pc_change"] for r in reps])}
    assert learners_under_rescaling.verdict(metrics, "small") != HOLDS


def test_pc_is_scale_invariant_and_learner_errors():
    X, _, _ = simulate_linear_sem(5, 2, "ER", 500, 1.0, np.random.default_rng(2))
    s = np.array([0.1, 10.0, 1.0, 3.0, 0.3])
    np.testing.assert_array_equal(run_learner("pc", X), run_learner("pc", X * s))
    with pytest.raises(ValueError, match="name"):
        run_learner("notears", X)
    with pytest.raises(ValueError, match="X must"):
        run_learner("pc", X[:2])
