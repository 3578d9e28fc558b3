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
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    for scale in ("smoke", "small"):
        assert _rule_names(claim_obj.rule_text(scale)) <= set(m.metrics)
    assert claim_obj.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert m.notes


def test_reverse_kl_smoke_reports_every_method(smoke_runs):
    m = smoke_runs["reverse_kl"]
    for method in ("mle", "emo", "mixce", "tailr", "emo_oracle"):
        for key in ("reverse_kl", "forward_kl", "wrong_mass"):
            assert f"{method}_{key}" in m.metrics
    assert m.metrics["n_seeds"] == 1
    assert isinstance(m.metrics["delta_reverse_kl"], float)  # one seed: a plain number
    assert m.figure is not None and len(m.tables["per_seed"]) == 5


def test_reverse_kl_rule_reads_the_interval_and_rejects_mle_as_emo():
    """Negative control: MLE passed as EMO gives a zero paired difference (fails); a mean
    gain whose interval straddles 0 is inconclusive, not a win."""
    from iclr24.claims import seed_difference

    mle = [1.16, 1.18, 1.15, 1.20, 1.17]
    assert reverse_kl.verdict({"delta_reverse_kl": seed_difference(mle, mle)},
                              Scale.SMALL) == "fails"
    straddle = seed_difference([1.10, 1.25, 1.12, 1.22, 1.14], mle)
    assert straddle.value < 0 < straddle.high
    assert reverse_kl.verdict({"delta_reverse_kl": straddle}, Scale.SMALL) == "inconclusive"
