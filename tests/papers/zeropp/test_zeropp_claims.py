"""Each claim runs at smoke scale and returns finite metrics covering its rule."""

import math

import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.zeropp.claims import block_quantization_error, comm_volume, convergence

RULE_METRICS = {
    "comm_volume": {"max_rel_err_vs_formula", "measured_ratio"},
    "convergence": {"q8_loss_ratio"},
    "block_quantization_error": {"weight_ratio_int8", "grad_ratio_int8"},
}


@pytest.mark.timeout(120)
@pytest.mark.parametrize("claim_obj", [comm_volume, convergence, block_quantization_error],
                         ids=lambda c: c.name)
def test_claim_runs_at_smoke(claim_obj):
    m = claim_obj(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert RULE_METRICS[claim_obj.name] <= set(m.metrics)
    assert all(math.isfinite(v) for v in m.metrics.values())
    assert isinstance(claim_obj.verdict(m.metrics, Scale.SMOKE), bool)
    assert m.figure is not None and m.tables


def test_comm_volume_formula_numbers_are_the_papers():
    # formula-only metrics do not depend on the run: check them without running the claim
    from iclr24.papers.zeropp import cross_node_volume

    assert cross_node_volume(4, 2)["total"] / cross_node_volume(4, 2, 8, True, 4)["total"] == \
        pytest.approx(4.5)
