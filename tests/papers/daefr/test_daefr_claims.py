"""Smoke runs of both DAEFR claims (from an empty stand-in cache) and their negative controls."""

import pytest

from iclr24.claims import Scale, seed_difference
from iclr24.papers.daefr.claims import association_alignment, dual_vs_single_encoder

ARMS = ("codeformer", "no_association", "daefr")


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path / "cache"))


@pytest.mark.usefixtures("empty_cache")
def test_smoke_claims_run_and_share_the_stand_ins(check_smoke_claim, tmp_path):
    keys = ["code_acc_gain", "psnr_gain", "identity_gain", "code_acc_gain_vs_no_association",
            "psnr_lq_input", "psnr_prior_reconstruction"]
    keys += [f"{m}_{arm}" for arm in ARMS for m in ("code_acc", "psnr", "identity")]
    m = check_smoke_claim(dual_vs_single_encoder, keys)
    assert all(0 <= m.metrics[f"code_acc_{arm}"] <= 1 for arm in ARMS)
    assert m.metrics["code_acc_gain"] == pytest.approx(
        m.metrics["code_acc_daefr"] - m.metrics["code_acc_codeformer"])
    assert m.figure is not None and len(m.tables["per_replicate"]) == 3
    r = check_smoke_claim(association_alignment, ["retrieval_before", "retrieval_after",
                                                  "retrieval_gain", "retrieval_chance",
                                                  "hq_code_agreement_after"])
    assert 0 <= r.metrics["retrieval_before"] <= 1 and 0 <= r.metrics["retrieval_after"] <= 1
    stored = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert stored == ["daefr-stage1-hq", "daefr-stage1-lq", "daefr-stage2"]  # one copy each
    assert association_alignment.verdict(r.metrics, Scale.SMALL) in ("holds", "fails",
                                                                     "inconclusive")


def test_dual_rule_rejects_the_baseline_passed_as_the_method():
    """Negative control: DAEFR replaced by the CodeFormer-style arm (zero paired gains) or by a
    method that matches it within seed noise does not give holds."""
    acc, psnr = [0.41, 0.43, 0.40], [17.1, 17.3, 17.0]
    null = {"code_acc_gain": seed_difference(acc, acc), "psnr_gain": seed_difference(psnr, psnr)}
    assert dual_vs_single_encoder.verdict(null, Scale.SMALL) != "holds"
    noisy = {"code_acc_gain": seed_difference([0.42, 0.41, 0.44], acc),
             "psnr_gain": seed_difference([17.0, 17.4, 17.1], psnr)}
    assert dual_vs_single_encoder.verdict(noisy, Scale.SMALL) == "inconclusive"
    # better code accuracy alone is not enough: restoration quality must rise too
    half = {"code_acc_gain": seed_difference([0.51, 0.53, 0.50], acc),
            "psnr_gain": seed_difference([16.1, 16.3, 16.0], psnr)}
    assert dual_vs_single_encoder.verdict(half, Scale.SMALL) == "fails"
    assert dual_vs_single_encoder.verdict({"code_acc_gain": 0.0, "psnr_gain": 0.0},
                                          Scale.SMOKE) == "fails"


def test_association_rule_rejects_unaligned_encoders():
    """Negative control: stage 2 without its loss leaves retrieval where it was (see also
    test_fit_association_aligns_and_weight_zero_does_not, which measures it)."""
    same = seed_difference([0.02, 0.03, 0.02], [0.02, 0.02, 0.03])
    assert association_alignment.verdict({"retrieval_gain": same}, Scale.SMALL) == "fails"
    small_gain = seed_difference([0.15, 0.16, 0.14], [0.02, 0.03, 0.02])
    assert association_alignment.verdict({"retrieval_gain": small_gain}, Scale.SMALL) != "holds"
