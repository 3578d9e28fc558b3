"""Smoke runs of the prune_kurtosis claims and negative controls of their rules."""

import math

import numpy as np
import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.prune_kurtosis import cosine_prune_curve, prunable_fraction
from iclr24.papers.prune_kurtosis.claims import (
    SPEC_FRACTIONS,
    kurtosis_prunability,
    l1_maximises_cosine,
    trained_mlp_recipe,
)

VERDICTS = ("holds", "fails", "inconclusive")


@pytest.fixture(scope="module")
def recipe_smoke():
    return trained_mlp_recipe(Scale.SMOKE, 0)


@pytest.fixture(scope="module")
def kurtosis_smoke():
    return kurtosis_prunability(Scale.SMOKE, 0)


def test_l1_claim_smoke_runs():
    m = l1_maximises_cosine(Scale.SMOKE, 0)
    assert {"max_violation", "min_interior_margin"} <= set(m.metrics)
    assert all(math.isfinite(v) for v in m.metrics.values())
    assert l1_maximises_cosine.verdict(m.metrics, Scale.SMOKE) in VERDICTS


def test_kurtosis_smoke_runs_and_reports_synthetic(kurtosis_smoke):
    m = kurtosis_smoke.metrics
    assert {"rho_kurtosis_tolerated", "rho_null", "tolerated_spread",
            "most_kurtotic_tolerates_most", "max_dev_from_spec"} <= set(m)
    # the synthetic draws still reproduce the spec's numbers (reported, not judged)
    assert m["max_dev_from_spec"] <= 0.02
    assert m["frac_uniform"] < m["frac_gaussian"] < m["frac_laplace"] < m["frac_t3"]
    for name in ("plain", "weight_decay", "l1"):
        assert 0 <= m[f"tolerated_{name}"] <= 1
    # an L1 penalty raises the parameter kurtosis (what the test bed relies on)
    assert m["kurtosis_l1"] > m["kurtosis_plain"]
    assert kurtosis_prunability.verdict(m, Scale.SMOKE) in VERDICTS


def test_negative_control_kurtosis_null_arm(kurtosis_smoke):
    m = dict(kurtosis_smoke.metrics)
    # the null arm (kurtosis paired with another variant's tolerance) put in the rule's place
    est = {**m, "rho_kurtosis_tolerated": Estimate.mean_of([-0.5, 0.5, 0.0]),
           "rho_null": Estimate.mean_of([-0.5, 0.5, 0.0]), "tolerated_spread": 0.2}
    assert kurtosis_prunability.verdict(est, Scale.SMALL) != "holds"
    # a null that passes the rule makes the verdict inconclusive, whatever the rule says
    passing = {**est, "rho_kurtosis_tolerated": Estimate.mean_of([0.8, 0.9, 1.0]),
               "rho_null": Estimate.mean_of([0.8, 0.9, 1.0])}
    assert kurtosis_prunability.judge(passing, Scale.SMALL).verdict == "inconclusive"
    # variants that all tolerate the same amount: nothing to rank, the test bed cannot tell
    flat = {**passing, "rho_null": Estimate.mean_of([-0.5, 0.5, 0.0]), "tolerated_spread": 0.0}
    assert kurtosis_prunability.judge(flat, Scale.SMALL).verdict == "inconclusive"
    good = {**flat, "tolerated_spread": 0.2}
    assert kurtosis_prunability.verdict(good, Scale.SMALL) == "holds"


def test_recipe_smoke_runs(recipe_smoke):
    m = recipe_smoke.metrics
    assert {"drop_at_safe", "shortfall", "spearman_cs_acc", "drop_at_safe_random",
            "drop_at_safe_init", "shortfall_init", "drop_at_safe_zero",
            "shortfall_zero"} <= set(m)
    assert trained_mlp_recipe.verdict(m, Scale.SMOKE) in VERDICTS
    assert recipe_smoke.figure is not None
    row = recipe_smoke.tables["models"][0]
    assert 0 <= row["p_safe"] <= row["p_star"] <= 1
    # the null that prunes nothing falls short by the whole allowed amount
    assert m["shortfall_zero"] == pytest.approx(row["allowed_at_2pt"])


def test_negative_control_recipe_nulls(recipe_smoke):
    m = dict(recipe_smoke.metrics)
    # the over-cautious null (p = 0) read by the rule: it must not pass
    zero = {**m, "drop_at_safe": m["drop_at_safe_zero"], "shortfall": m["shortfall_zero"]}
    assert trained_mlp_recipe.verdict(zero, Scale.SMOKE) != "holds"
    # random pruning at p_safe (the key step, magnitude selection, removed)
    rand = {**m, "drop_at_safe": m["drop_at_safe_random"]}
    assert trained_mlp_recipe.verdict(rand, Scale.SMOKE) != "holds"
    # a null arm that passes the rule makes the verdict inconclusive
    good = {"drop_at_safe": 0.0, "shortfall": 0.05, "spearman_cs_acc": 0.9,
            "drop_at_safe_init": 0.5, "shortfall_init": 0.3, "drop_at_safe_zero": 0.0,
            "shortfall_zero": 0.9}
    assert trained_mlp_recipe.verdict(good, Scale.SMOKE) == "holds"
    init_passes = {**good, "drop_at_safe_init": 0.01, "shortfall_init": 0.0}
    assert trained_mlp_recipe.judge(init_passes, Scale.SMOKE).verdict == "inconclusive"
    zero_passes = {**good, "shortfall_zero": 0.05}  # the curve allows (almost) nothing
    assert trained_mlp_recipe.judge(zero_passes, Scale.SMOKE).verdict == "inconclusive"
    est = {**good, "drop_at_safe": Estimate.mean_of([0.01, 0.03, 0.05])}
    assert trained_mlp_recipe.verdict(est, Scale.SMALL) != "holds"


def test_negative_control_random_pruning_as_l1():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=2000)
    # "L1" curve replaced by one random prune: it violates against another random prune
    from iclr24.papers.prune_kurtosis.claims import _random_cs

    a = _random_cs(theta, np.linspace(0, 1, 101), rng)
    b = _random_cs(theta, np.linspace(0, 1, 101), rng)
    m = {"max_violation": float((b - a).max()),
         "min_interior_margin": float((a - b)[1:-1].min())}
    assert l1_maximises_cosine.verdict(m, "small") == "fails"
    assert cosine_prune_curve(theta, [0.5])[0] > a[50]


def test_random_pruning_loses_the_kurtosis_ordering():
    # with random pruning every distribution loses mass in proportion: no ordering by kurtosis
    rng = np.random.default_rng(1)
    fr = {}
    for name, v in {"uniform": rng.uniform(-1, 1, 50_000), "gaussian": rng.normal(size=50_000),
                    "laplace": rng.laplace(size=50_000), "t3": rng.standard_t(3, 50_000)}.items():
        perm = rng.permutation(v)  # "sorted" by a random key instead of magnitude
        cum = np.cumsum(perm**2) / np.sum(perm**2)
        fr[name] = int(np.searchsorted(cum, 1 - 0.95**2)) / v.size
    assert max(fr.values()) < 0.2 < min(SPEC_FRACTIONS.values())
    assert prunable_fraction(rng.laplace(size=50_000)) > max(fr.values())
