"""Smoke runs of both OmniControl claims and negative controls of their rules."""

import math

import pytest

from iclr24.claims import Measurement, Scale, seed_difference, seed_metric
from iclr24.papers.omnicontrol.claims import guidances_complementary, spatial_guidance_error

RULE_METRICS = {
    "spatial_guidance_error": {"ratio_sparse", "ratio_dense", "avg_error_sparse_unguided",
                               "avg_error_sparse_guided", "avg_error_dense_guided"},
    "guidances_complementary": {"err_ratio_both_spatial", "bone_gain", "fd_gain",
                                "err_gap_realism_both", "avg_error_realism", "bone_both"},
}


@pytest.fixture(scope="module")
def shared_cache(tmp_path_factory):
    return str(tmp_path_factory.mktemp("omnicontrol-cache"))


@pytest.mark.parametrize("claim_obj", [spatial_guidance_error, guidances_complementary],
                         ids=lambda c: c.name)
def test_smoke_claim_runs(claim_obj, shared_cache, monkeypatch):
    monkeypatch.setenv("ICLR24_CACHE", shared_cache)   # the base trains once for both claims
    m = claim_obj(Scale.SMOKE, 0)
    assert isinstance(m, Measurement)
    assert RULE_METRICS[claim_obj.name] <= set(m.metrics)
    assert all(math.isfinite(getattr(v, "value", v)) for v in m.metrics.values())
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert claim_obj.verdict(m.metrics, scale) in ("holds", "fails", "inconclusive")
    assert m.figure is not None and m.tables["arms"]


def test_spatial_rule_rejects_unguided_as_the_method():
    """Negative control: the unguided sampler passed as the method gives ratio 1 -> fails; a
    ratio interval straddling the threshold is not `holds`."""
    null = {"ratio_sparse": seed_metric([1.0, 1.0, 1.0]),
            "ratio_dense": seed_metric([1.0, 0.98, 1.02])}
    assert spatial_guidance_error.verdict(null, Scale.SMALL) == "fails"
    assert spatial_guidance_error.verdict({"ratio_sparse": 1.0, "ratio_dense": 1.0},
                                          Scale.SMOKE) == "fails"
    straddle = {"ratio_sparse": seed_metric([0.1, 0.5, 0.2]),
                "ratio_dense": seed_metric([0.05, 0.06, 0.07])}
    assert spatial_guidance_error.verdict(straddle, Scale.SMALL) != "holds"


def test_complementary_rule_rejects_a_removed_branch():
    """Negative control: realism branch removed (the 'both' arm is spatial guidance alone and
    'realism only' is the unguided base): zero realism gains -> not holds."""
    err_s, bone_s, fd_s = [0.02, 0.03, 0.025], [0.10, 0.12, 0.11], [30.0, 35.0, 32.0]
    null = {"err_ratio_both_spatial": seed_metric([1.0, 1.0, 1.0]),
            "bone_gain": seed_difference(bone_s, bone_s),
            "fd_gain": seed_difference(fd_s, fd_s),
            "err_gap_realism_both": seed_difference([0.7, 0.8, 0.75], err_s)}
    assert guidances_complementary.verdict(null, Scale.SMALL) == "fails"
    no_spatial = dict(null, err_gap_realism_both=seed_difference(err_s, err_s))
    assert guidances_complementary.verdict(no_spatial, Scale.SMALL) == "fails"
