"""Smoke runs of the EMO claims: finite metrics, everything the rule names, a verdict."""

import ast
import math

import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.emo.claims import bound_exact, reverse_kl


def _rule_names(rule_text: str) -> set[str]:
    return {n.id for n in ast.walk(ast.parse(rule_text, mode="eval")) if isinstance(n, ast.Name)}


@pytest.fixture(scope="module")
def smoke_runs():
    return {c.name: c(Scale.SMOKE, 0) for c in (bound_exact, reverse_kl)}


@pytest.mark.parametrize("claim_obj", [bound_exact, reverse_kl], ids=lambda c: c.name)
def test_smoke_claim(claim_obj, smoke_runs):
    m = smoke_runs[claim_obj.name]
    assert isinstance(m, Measurement)
    assert all(math.isfinite(v) for v in m.metrics.values())
    for scale in ("smoke", "small"):
        assert _rule_names(claim_obj.rule_text(scale)) <= set(m.metrics)
    assert isinstance(claim_obj.verdict(m.metrics, Scale.SMOKE), bool)
    assert m.notes


def test_reverse_kl_smoke_reports_every_method(smoke_runs):
    m = smoke_runs["reverse_kl"]
    for method in ("mle", "emo", "mixce", "tailr", "emo_oracle"):
        for key in ("reverse_kl", "forward_kl", "wrong_mass"):
            assert f"{method}_{key}" in m.metrics
    assert m.metrics["n_seeds"] == 1
    assert m.metrics["delta_reverse_kl_ci_low"] <= m.metrics["delta_reverse_kl_ci_high"]
    assert m.figure is not None and len(m.tables["per_seed"]) == 5
