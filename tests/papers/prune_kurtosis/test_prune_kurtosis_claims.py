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


@pytest.mark.parametrize("claim_obj,keys", [
    (l1_maximises_cosine, {"max_violation", "min_interior_margin"}),
    (kurtosis_prunability, {"frac_uniform", "frac_gaussian", "frac_laplace", "frac_t3",
                            "max_dev_from_spec"}),
], ids=lambda c: getattr(c, "name", ""))
def test_smoke_claim_runs(claim_obj, keys):
    m = claim_obj(Scale.SMOKE, 0)
    assert keys <= set(m.metrics)
    assert all(math.isfinite(v) for v in m.metrics.values())
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in VERDICTS


def test_recipe_smoke_runs(recipe_smoke):
    m = recipe_smoke.metrics
    assert {"drop_at_safe", "spearman_cs_acc", "drop_at_safe_random", "drop_at_safe_init"} <= set(m)
    assert trained_mlp_recipe.verdict(m, Scale.SMOKE) in VERDICTS
    assert recipe_smoke.figure is not None


def test_negative_control_recipe_with_random_pruning(recipe_smoke):
    # the key step (magnitude selection) removed: random pruning at the same p_safe
    m = dict(recipe_smoke.metrics)
    m["drop_at_safe"] = m["drop_at_safe_random"]
    assert trained_mlp_recipe.verdict(m, Scale.SMOKE) != "holds"
    m = dict(recipe_smoke.metrics)
    m["drop_at_safe"] = m["drop_at_safe_init"]  # pruning the untrained network
    assert trained_mlp_recipe.verdict(m, Scale.SMOKE) != "holds"
    est = {"drop_at_safe": Estimate.mean_of([0.01, 0.03, 0.05]),
           "spearman_cs_acc": Estimate.mean_of([0.9, 0.95, 0.97])}
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


def test_negative_control_kurtosis_with_random_pruning():
    # with random pruning every distribution loses mass in proportion: no ordering
    rng = np.random.default_rng(1)
    fr = {}
    for name, v in {"uniform": rng.uniform(-1, 1, 50_000), "gaussian": rng.normal(size=50_000),
                    "laplace": rng.laplace(size=50_000), "t3": rng.standard_t(3, 50_000)}.items():
        perm = rng.permutation(v)  # "sorted" by a random key instead of magnitude
        cum = np.cumsum(perm**2) / np.sum(perm**2)
        fr[name] = int(np.searchsorted(cum, 1 - 0.95**2)) / v.size
    m = {f"frac_{k}": v for k, v in fr.items()}
    m["max_dev_from_spec"] = max(abs(fr[k] - v) for k, v in SPEC_FRACTIONS.items())
    assert kurtosis_prunability.verdict(m, "small") == "fails"
    assert prunable_fraction(rng.laplace(size=50_000)) > max(fr.values())
