"""Smoke runs of both claims with their null arm (the unprocessed mixture as the estimate,
measured in the same run) put in the method's place, and the rules and controls fed hand-made
numbers (holds / fails / the test bed cannot tell)."""

import pytest

from iclr24.claims import FAILS, HOLDS, INCONCLUSIVE, Estimate, Scale
from iclr24.papers.bimodal_separation.claims import near_supervised_sdr, weak_vs_mix_and_separate


@pytest.fixture
def fresh_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path))


def test_smoke_claims_run_and_their_null_arm_does_not_hold(fresh_cache, check_smoke_claim):
    m = check_smoke_claim(weak_vs_mix_and_separate, [
        "sdr_gain_w_u", "rel_gain_w_u", "sdr_w", "sdr_u", "si_sdr_gain_w_u", "sdr_mixture",
        "sdr_gain_mix_u", "rel_gain_mix_u", "sdr_gain_u_mix", "clap_accuracy"])
    assert m.figure is not None and len(m.tables["per_seed"]) == 2
    assert 0 <= m.metrics["clap_accuracy"] <= 1
    # the do-nothing null (the mixture as W's estimate) in W's place: never holds
    null = {**m.metrics, "sdr_gain_w_u": m.metrics["sdr_gain_mix_u"],
            "rel_gain_w_u": m.metrics["rel_gain_mix_u"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert weak_vs_mix_and_separate.verdict(null, scale) != HOLDS

    m2 = check_smoke_claim(near_supervised_sdr, [
        "sdr_ratio_w_s", "sdr_w", "sdr_s", "sdr_mixture", "sdr_gain_s_mix", "sdr_ratio_mix_s"])
    # the W arm is trained once and shared (cached) between the two claims
    assert m2.metrics["sdr_w"] == m.metrics["sdr_w"]
    assert m2.metrics["sdr_mixture"] == m.metrics["sdr_mixture"]
    null2 = {**m2.metrics, "sdr_ratio_w_s": m2.metrics["sdr_ratio_mix_s"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert near_supervised_sdr.verdict(null2, scale) != HOLDS


def _seeds(*xs):
    return Estimate.mean_of(xs)


def _weak(gain, rel, gain_mix=(-2.0, -2.1, -1.9), rel_mix=(-0.5, -0.6, -0.4),
          acc=(0.95, 0.97, 0.96)):
    return {"sdr_gain_w_u": _seeds(*gain), "rel_gain_w_u": _seeds(*rel),
            "sdr_gain_mix_u": _seeds(*gain_mix), "rel_gain_mix_u": _seeds(*rel_mix),
            "clap_accuracy": _seeds(*acc)}


def test_weak_rule_and_control():
    judge = lambda metrics: weak_vs_mix_and_separate.verdict(metrics, Scale.SMALL)
    # the baseline passed off as the method: no gain
    assert judge(_weak((0.0, 0.01, -0.01), (0.0, 0.002, -0.002))) == FAILS
    # a gain of 1.5 dB that is only 10% relative (a strong baseline) does not hold either
    assert judge(_weak((1.4, 1.5, 1.6), (0.09, 0.1, 0.11))) == FAILS
    assert judge(_weak((-1.0, 3.0, 2.0), (-0.2, 0.9, 0.5))) == INCONCLUSIVE
    assert judge(_weak((2.0, 2.2, 2.4), (0.6, 0.7, 0.8))) == HOLDS
    # a straw baseline: doing nothing beats U by the rule's margins -> cannot tell
    straw = _weak((2.0, 2.2, 2.4), (0.6, 0.7, 0.8), gain_mix=(1.8, 2.0, 2.2),
                  rel_mix=(0.5, 0.6, 0.7))
    assert judge(straw) == INCONCLUSIVE
    # a CLAP that cannot tell the classes apart: no bi-modal signal -> cannot tell
    assert judge(_weak((0.0, 0.01, -0.01), (0.0, 0.002, -0.002), acc=(0.2, 0.25, 0.3))) \
        == INCONCLUSIVE


def _near(ratio, gain_s_mix=(8.0, 8.5, 9.0), sdr_s=(9.0, 9.5, 10.0), ratio_mix=(0.05, 0.06,
                                                                                   0.07)):
    return {"sdr_ratio_w_s": _seeds(*ratio), "sdr_gain_s_mix": _seeds(*gain_s_mix),
            "sdr_s": _seeds(*sdr_s), "sdr_ratio_mix_s": _seeds(*ratio_mix)}


def test_supervised_rule_and_learning_floor():
    judge = lambda metrics: near_supervised_sdr.verdict(metrics, Scale.SMALL)
    assert judge(_near((0.2, 0.3, 0.25))) == FAILS  # mix-and-separate as the method
    assert judge(_near((0.9, 0.95, 1.0))) == HOLDS
    # the audit's smoke case: neither arm learned (S at the mixture's level) -> cannot tell
    nothing = _near((1.05, 1.1, 1.08), gain_s_mix=(0.05, 0.0, 0.1), sdr_s=(0.6, 0.63, 0.65),
                    ratio_mix=(0.92, 0.95, 0.9))
    assert judge(nothing) == INCONCLUSIVE
    # S below 0 dB: the ratio is meaningless
    assert judge(_near((0.9, 0.95, 1.0), gain_s_mix=(4, 4.5, 5), sdr_s=(-1.0, -0.8, -0.9),
                       ratio_mix=(5, 6, 7))) == INCONCLUSIVE
    one_seed = {"sdr_ratio_w_s": 0.4, "sdr_gain_s_mix": 6.0, "sdr_s": 7.0,
                "sdr_ratio_mix_s": 0.1}
    assert near_supervised_sdr.verdict(one_seed, Scale.SMOKE) == FAILS
