"""Smoke runs of both SelfHDR claims and their negative controls (the baseline or an untrained
network in the method's slot must not give ``holds``)."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.selfhdr.claims import (
    _gap_metrics,
    _ghost_metrics,
    _runners,
    close_to_supervised,
    structure_removes_ghosts,
)

ARMS = ("color_merge", "color_only", "selfhdr", "supervised", "untrained", "reference_only")


@pytest.fixture(scope="module")
def smoke_runners():
    return _runners(Scale.SMOKE, 0, ARMS, None)[1]


def test_smoke_claims_run(check_smoke_claim, smoke_runners):
    m = check_smoke_claim(structure_removes_ghosts,
                          ["gain_psnr_mu", "gain_psnr_mu_motion", "psnr_mu_selfhdr",
                           "psnr_mu_color_only", "psnr_mu_color_merge", "psnr_mu_motion_selfhdr"])
    assert {r["arm"] for r in m.tables["arms"]} >= {"color_merge", "color_only", "selfhdr"}
    m2 = check_smoke_claim(close_to_supervised,
                           ["gap_psnr_mu", "psnr_mu_supervised", "psnr_mu_selfhdr", "gap_psnr_l"])
    assert m2.metrics["gap_psnr_mu"] == pytest.approx(
        m2.metrics["psnr_mu_supervised"] - m2.metrics["psnr_mu_selfhdr"])


@pytest.mark.parametrize("method", ["color_only", "untrained"])
def test_ghost_claim_negative_controls(smoke_runners, method):
    metrics = _ghost_metrics(smoke_runners, method=method)
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert structure_removes_ghosts.verdict(metrics, scale) != "holds"


def test_supervised_claim_negative_control(smoke_runners):
    metrics = _gap_metrics(smoke_runners, method="untrained")
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert close_to_supervised.verdict(metrics, scale) != "holds"


def test_rules_can_hold_and_read_intervals():
    assert structure_removes_ghosts.verdict(
        {"gain_psnr_mu": 1.0, "gain_psnr_mu_motion": 2.0}, Scale.SMALL) == "holds"
    wide = Estimate(1.0, -0.5, 2.5, 3, 0.95, "paired-t")
    assert structure_removes_ghosts.verdict(
        {"gain_psnr_mu": wide, "gain_psnr_mu_motion": 2.0}, Scale.SMALL) == "inconclusive"
    assert close_to_supervised.verdict(
        {"gap_psnr_mu": Estimate(2.0, 1.0, 3.5, 3, 0.95, "t"), "gain_psnr_mu_vs_merge": 1.0},
        Scale.SMALL) == "inconclusive"
    assert close_to_supervised.verdict({"gap_psnr_mu": 4.0, "gain_psnr_mu_vs_merge": 1.0},
                                       Scale.SMALL) == "fails"
    assert close_to_supervised.verdict({"gap_psnr_mu": 1.0, "gain_psnr_mu_vs_merge": -1.0},
                                       Scale.SMALL) == "fails"
