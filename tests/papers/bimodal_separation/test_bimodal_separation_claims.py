"""Smoke runs of both claims, and their rules on null methods (negative controls)."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.bimodal_separation.claims import near_supervised_sdr, weak_vs_mix_and_separate


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path))


def test_smoke_claims_run(fresh_cache, check_smoke_claim):
    m = check_smoke_claim(weak_vs_mix_and_separate,
                          ["sdr_gain_w_u", "rel_gain_w_u", "sdr_w", "sdr_u", "si_sdr_gain_w_u"])
    assert m.figure is not None and len(m.tables["per_seed"]) == 2
    m2 = check_smoke_claim(near_supervised_sdr, ["sdr_ratio_w_s", "sdr_w", "sdr_s"])
    # the W arm is trained once and shared (cached) between the two claims
    assert m2.metrics["sdr_w"] == m.metrics["sdr_w"]


def _seeds(*xs):
    return Estimate.mean_of(xs)


def test_weak_rule_rejects_the_baseline_passed_as_the_method():
    u = [2.1, 2.6, 1.8]
    null = {"sdr_gain_w_u": Estimate.difference(u, u, paired=True), "rel_gain_w_u": _seeds(0, 0, 0)}
    assert weak_vs_mix_and_separate.verdict(null, Scale.SMALL) == "fails"
    # a gain of 1.5 dB that is only 10% relative (a strong baseline) does not hold either
    small_rel = {"sdr_gain_w_u": _seeds(1.4, 1.5, 1.6), "rel_gain_w_u": _seeds(0.09, 0.1, 0.11)}
    assert weak_vs_mix_and_separate.verdict(small_rel, Scale.SMALL) == "fails"
    noisy = {"sdr_gain_w_u": _seeds(-1.0, 3.0, 2.0), "rel_gain_w_u": _seeds(-0.2, 0.9, 0.5)}
    assert weak_vs_mix_and_separate.verdict(noisy, Scale.SMALL) == "inconclusive"
    good = {"sdr_gain_w_u": _seeds(2.0, 2.2, 2.4), "rel_gain_w_u": _seeds(0.6, 0.7, 0.8)}
    assert weak_vs_mix_and_separate.verdict(good, Scale.SMALL) == "holds"


def test_supervised_rule_rejects_mix_and_separate_as_the_method():
    """The key step removed (U in place of W): far below the supervised SDR."""
    null = {"sdr_ratio_w_s": _seeds(0.2, 0.3, 0.25)}
    assert near_supervised_sdr.verdict(null, Scale.SMALL) == "fails"
    assert near_supervised_sdr.verdict({"sdr_ratio_w_s": 0.4}, Scale.SMOKE) == "fails"
    assert near_supervised_sdr.verdict({"sdr_ratio_w_s": _seeds(0.9, 0.95, 1.0)},
                                       Scale.SMALL) == "holds"
