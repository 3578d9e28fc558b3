"""Every VertiBench claim runs at smoke scale and yields what its rule needs; determinism."""

import math

import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.vertibench.claims import (
    algorithm_sensitivity,
    alpha_controls_importance,
    beta_controls_correlation,
)


@pytest.mark.parametrize("claim_obj", [alpha_controls_importance, beta_controls_correlation,
                                       algorithm_sensitivity], ids=lambda c: c.name)
def test_smoke_claim_runs(claim_obj):
    m = claim_obj(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    assert m.tables and m.figure is not None
    claim_obj.verdict(m.metrics, Scale.SMOKE)  # evaluates without error (value not asserted)


def test_same_seed_same_numbers():
    a = alpha_controls_importance(Scale.SMOKE, 3)
    b = alpha_controls_importance(Scale.SMOKE, 3)
    assert a.metrics == b.metrics
    assert a.tables == b.tables


def test_algorithm_sensitivity_rule_reads_intervals():
    """Negative control: the same algorithm on both sides of a gap (no sensitivity at all)
    gives gaps that do not move with alpha or beta, and the rule does not hold."""
    from iclr24.claims import Estimate

    gaps = [0.004, -0.002, 0.010, 0.001, -0.006]
    null = {"gap_alpha_diff": Estimate.difference(gaps, gaps[::-1]),
            "gap_beta_diff": Estimate.difference(gaps, gaps[1:] + gaps[:1]),
            "splitnn_acc_range": 0.004}
    assert algorithm_sensitivity.verdict(null, Scale.SMALL) == "inconclusive"
    flat = dict(null, gap_alpha_diff=Estimate.difference([0.0, 0.0, 0.0], [0.01, 0.01, 0.01]))
    assert algorithm_sensitivity.verdict(flat, Scale.SMALL) == "fails"
