"""Smoke runs of the two claims with their null arms (measured in the same run) put in the
method's place, and the rules and controls fed hand-made numbers."""

import numpy as np

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Estimate, Scale
from iclr24.papers.indirect_experiments.claims import adaptive_vs_uniform, gradient_variance


def _est(values):
    return Estimate.mean_of(values)


def test_adaptive_vs_uniform_smoke_and_random_policy_null(check_smoke_claim):
    m = check_smoke_claim(adaptive_vs_uniform, [
        "mse_ratio", "optimal_ratio", "random_ratio", "official_fixed_ratio", "dia_vs_optimal",
        "mse_uniform", "mse_optimal", "mse_random", "mse_dia", "mse_official_fixed"])
    assert m.figure is not None and len(m.tables["seeds"]) == 2
    # the random-policy null (this run) in DIA's place: not holds at either scale
    null = {**m.metrics, "mse_ratio": m.metrics["random_ratio"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert adaptive_vs_uniform.verdict(null, scale) != HOLDS
    # uniform in DIA's place: the ratio is exactly 1
    same = {**m.metrics, "mse_ratio": Estimate(1.0, 1.0, 1.0, 2)}
    assert adaptive_vs_uniform.verdict(same, Scale.SMALL) != HOLDS


def test_adaptive_vs_uniform_rule_and_control():
    ok = {"optimal_ratio": _est([0.3, 0.28, 0.32]), "random_ratio": _est([1.1, 0.9, 1.2])}
    assert adaptive_vs_uniform.verdict({**ok, "mse_ratio": _est([0.5, 0.55, 0.45])},
                                       Scale.SMALL) == HOLDS
    assert adaptive_vs_uniform.verdict({**ok, "mse_ratio": _est([1.5, 1.6, 1.4])},
                                       Scale.SMALL) == FAILS
    # a random policy that also beats uniform: the gain says only that uniform is poor
    passing_null = {**ok, "random_ratio": _est([0.6, 0.65, 0.55])}
    assert adaptive_vs_uniform.verdict({**passing_null, "mse_ratio": _est([0.5, 0.55, 0.45])},
                                       Scale.SMALL) == INCONCLUSIVE
    # the optimum cannot beat uniform at this size: no gain is visible, cannot tell
    blind = {**ok, "optimal_ratio": _est([1.0, 1.05, 0.97])}
    assert adaptive_vs_uniform.verdict({**blind, "mse_ratio": _est([0.5, 0.55, 0.45])},
                                       Scale.SMALL) == INCONCLUSIVE
    assert adaptive_vs_uniform.verdict({**ok, "mse_ratio": float("nan")},
                                       Scale.SMALL) == INCONCLUSIVE


def test_gradient_variance_smoke_and_shuffled_influence_null(check_smoke_claim):
    m = check_smoke_claim(gradient_variance, [
        "noise_ratio", "null_noise_ratio", "noise_ratio_loo", "trace_ratio", "cosine_influence",
        "cosine_influence_loo", "cosine_reinforce", "cosine_shuffled"])
    # the shuffled-influence null (this run) in the influence estimator's place: not holds
    null = {**m.metrics, "noise_ratio": m.metrics["null_noise_ratio"],
            "cosine_influence": m.metrics["cosine_shuffled"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert gradient_variance.verdict(null, scale) != HOLDS
    # REINFORCE against itself: the noise ratio is exactly 1
    assert gradient_variance.verdict({**m.metrics, "noise_ratio": 1.0}, Scale.SMOKE) != HOLDS


def test_gradient_variance_rule_and_control():
    ok = {"cosine_influence": _est([0.8, 0.85, 0.75]), "null_noise_ratio": _est([0.3, 0.5, 0.2])}
    assert gradient_variance.verdict({**ok, "noise_ratio": _est([60, 70, 80])},
                                     Scale.SMALL) == HOLDS
    assert gradient_variance.verdict({**ok, "noise_ratio": _est([1.0, 1.2, 0.9])},
                                     Scale.SMALL) == FAILS
    # low noise but pointing elsewhere: the test bed cannot tell
    wrong = {**ok, "cosine_influence": _est([0.1, -0.1, 0.0])}
    assert gradient_variance.verdict({**wrong, "noise_ratio": _est([60, 70, 80])},
                                     Scale.SMALL) == INCONCLUSIVE
    # a direction-free null that also passes: low relative noise is not the influences' doing
    passing = {**ok, "null_noise_ratio": _est([40, 50, 45])}
    assert gradient_variance.verdict({**passing, "noise_ratio": _est([60, 70, 80])},
                                     Scale.SMALL) == INCONCLUSIVE
    assert gradient_variance.verdict({**ok, "noise_ratio": np.nan}, Scale.SMALL) == INCONCLUSIVE
