"""Every lm_compression claim runs at smoke scale and yields finite metrics its rule can read."""

from __future__ import annotations

import math

import pytest

from iclr24.claims import Measurement, Scale
from iclr24.papers.lm_compression import claims as C

FAST = ["beats_gzip", "adjusted_rate_reversal", "off_domain"]


def _check(claim_obj, m):
    assert isinstance(m, Measurement)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values()), m.metrics
    claim_obj.verdict(m.metrics, Scale.SMOKE)  # every metric the rule names exists


@pytest.mark.parametrize("name", FAST)
def test_smoke_claim_runs(name):
    claim_obj = getattr(C, name)
    m = claim_obj(Scale.SMOKE, 0)
    _check(claim_obj, m)
    assert m.tables


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_smoke_pretrained_lm_claim_runs():
    m = C.pretrained_lm_beats_gzip(Scale.SMOKE, 0)
    _check(C.pretrained_lm_beats_gzip, m)
    assert m.metrics["roundtrip_ok"] == 1.0
    assert m.metrics["smollm2_adjusted_rate_gguf"] > 1.0
