import numpy as np
import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Estimate
from iclr24.kits.replications import replicate
from iclr24.papers.dag_scale import is_dag, run_learner, simulate_anm
from iclr24.papers.dag_scale.claims import nonlinear_rescaling
from iclr24.papers.dag_scale.experiments import nonlinear_replication

VERDICTS = {HOLDS, FAILS, INCONCLUSIVE}
TINY = {"dagma_iter": (30, 90), "lr": 2e-3}         # d = 3, n = 100: 180 Adam steps per fit


def _metrics(reps):                                  # as nonlinear_rescaling builds them
    col = {k: np.array([r[k] for r in reps], dtype=float) for k in reps[0]}
    return {"shd_increase_mlp": Estimate.difference(col["shd_mlp_rescaled"],
                                                    col["shd_mlp_raw"], paired=True),
            "pc_change": Estimate.mean_of(col["pc_change"]),
            "shd_change_mlp_reseed": Estimate.difference(col["shd_mlp_reseed"],
                                                         col["shd_mlp_raw"], paired=True)}


def test_nonlinear_pipeline_tiny():
    reps = replicate(nonlinear_replication, 2, 0, 3, 100, **TINY)
    for r in reps:
        assert 0 <= r["shd_mlp_raw"] <= 6 and 0 <= r["shd_mlp_rescaled"] <= 6
        assert r["pc_change"] == 0                   # PC with Fisher-z ignores the scale
    assert nonlinear_rescaling.verdict(_metrics(reps), "small") in VERDICTS


def test_reseed_null_in_the_methods_place_is_not_holds():
    # the null arm measured in the pipeline (raw data, another torch seed) as the method
    reps = replicate(nonlinear_replication, 2, 2, 3, 100, **TINY)
    m = _metrics(reps)
    assert all(0 <= r["shd_mlp_reseed"] <= 6 for r in reps)
    null = {**m, "shd_increase_mlp": m["shd_change_mlp_reseed"]}
    assert nonlinear_rescaling.verdict(null, "small") != HOLDS


def test_nonlinear_rule_and_control():
    def est(values):
        return Estimate.mean_of(values)
    good = {"shd_increase_mlp": est([3, 4, 5]), "pc_change": est([0, 0, 0]),
            "shd_change_mlp_reseed": est([1, -1, 0])}
    assert nonlinear_rescaling.verdict(good, "small") == HOLDS
    assert nonlinear_rescaling.verdict({**good, "shd_increase_mlp": est([-3, -4, -5])},
                                       "small") == FAILS
    j = nonlinear_rescaling.judge({**good, "shd_change_mlp_reseed": est([3, 4, 5])}, "small")
    assert j.verdict == INCONCLUSIVE and "test bed cannot tell" in j.reason
    j = nonlinear_rescaling.judge({**good, "shd_change_mlp_reseed": float("nan")}, "small")
    assert j.verdict == INCONCLUSIVE


def test_negative_control_identity_rescaling():
    reps = replicate(nonlinear_replication, 2, 1, 3, 100, rescale="identity", **TINY)
    assert all(r["shd_mlp_raw"] == r["shd_mlp_rescaled"] for r in reps)  # same seed, same data
    assert nonlinear_rescaling.verdict(_metrics(reps), "small") != HOLDS


def test_nonlinear_claim_skips_smoke_and_bad_rescale():
    assert nonlinear_rescaling.scales == ("small", "full")
    assert not nonlinear_rescaling.runs_at("smoke")
    with pytest.raises(ValueError, match="smoke"):
        nonlinear_rescaling("smoke", 0)
    with pytest.raises(ValueError, match="rescale"):
        nonlinear_replication(np.random.default_rng(0), 3, 100, rescale="standardize")


def test_dagma_mlp_output_is_a_dag():            # seeding: see the identity control above
    X, _ = simulate_anm(3, 2, "ER", 100, np.random.default_rng(3))
    a = run_learner("dagma_mlp", X, warm_iter=30, max_iter=90, lr=2e-3, seed=7)
    assert a.shape == (3, 3) and set(np.unique(a)) <= {0, 1} and not np.diag(a).any()
    assert is_dag(a)
