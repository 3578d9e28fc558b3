"""Every ULTRA claim runs at smoke scale and yields the metrics its rule names."""

from __future__ import annotations

import math

import pytest

from iclr24.claims import Claim, Measurement, Scale
from iclr24.papers.ultra import claims as ultra_claims


@pytest.fixture(autouse=True)
def _pystow(monkeypatch, tmp_path):
    monkeypatch.setenv("PYSTOW_HOME", str(tmp_path / "pystow"))


@pytest.mark.parametrize("name", ["zero_shot_synthetic", "zero_shot_real"])
def test_claim_smoke(name):
    c = getattr(ultra_claims, name)
    assert isinstance(c, Claim)
    m = c(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    for key in ("mrr_zero_shot", "mrr_random_init", "mrr_distmult", "mrr_scratch",
                "mrr_finetuned"):
        assert key in m.metrics
    assert c.verdict(m.metrics, Scale.SMOKE) in ("holds", "fails", "inconclusive")
    assert m.figure is not None and m.tables
    if name == "zero_shot_real":
        assert [row["target"] for row in m.tables["leave_one_out"]] == [
            "nations", "kinships", "umls"]
