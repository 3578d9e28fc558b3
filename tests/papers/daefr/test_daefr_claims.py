"""Smoke runs of both DAEFR claims (from an empty stand-in cache), their null arms measured at
smoke (untrained stage-3 arms; stage 2 without the association term), and their rules and
controls fed hand-made numbers (holds / fails / the test bed cannot tell)."""

import dataclasses

import pytest
import torch

from iclr24.claims import Scale, seed_difference
from iclr24.papers.daefr import PredictorConfig
from iclr24.papers.daefr import claims as daefr_claims
from iclr24.papers.daefr.claims import association_alignment, dual_vs_single_encoder
from iclr24.papers.daefr.experiment import (
    DigitsExperiment,
    associated_pair,
    majority_code_accuracy,
    stage1_codebooks,
    stage1_codes,
)

ARMS = ("codeformer", "no_association", "daefr")


@pytest.fixture
def empty_cache(monkeypatch, tmp_path):
    monkeypatch.setenv("ICLR24_CACHE", str(tmp_path / "cache"))


@pytest.mark.usefixtures("empty_cache", "one_torch_thread")
def test_smoke_claims_run_share_the_stand_ins_and_null_arms_do_not_hold(
        check_smoke_claim, tmp_path, monkeypatch):
    keys = ["code_acc_gain", "psnr_gain", "identity_gain", "code_acc_gain_vs_no_association",
            "psnr_lq_input", "psnr_prior_reconstruction", "code_acc_floor",
            "learned_codeformer", "learned_daefr"]
    keys += [f"{m}_{arm}" for arm in ARMS for m in ("code_acc", "psnr", "identity")]
    m = check_smoke_claim(dual_vs_single_encoder, keys)
    assert all(0 <= m.metrics[f"code_acc_{arm}"] <= 1 for arm in ARMS)
    assert m.metrics["code_acc_gain"] == pytest.approx(
        m.metrics["code_acc_daefr"] - m.metrics["code_acc_codeformer"])
    assert m.metrics["learned_daefr"] == pytest.approx(
        m.metrics["code_acc_daefr"] - m.metrics["code_acc_floor"])
    assert 0 < m.metrics["code_acc_floor"] < 1
    assert m.figure is not None and len(m.tables["per_replicate"]) == 3

    r = check_smoke_claim(association_alignment, [
        "retrieval_before", "retrieval_after", "retrieval_after_null", "retrieval_gain",
        "retrieval_gain_vs_null", "retrieval_gain_null", "retrieval_chance",
        "hq_code_agreement_after", "hq_code_agreement_null"])
    for key in ("retrieval_before", "retrieval_after", "retrieval_after_null",
                "hq_code_agreement_after", "hq_code_agreement_null"):
        assert 0 <= r.metrics[key] <= 1
    assert r.metrics["retrieval_gain_vs_null"] == pytest.approx(
        r.metrics["retrieval_after"] - r.metrics["retrieval_after_null"])
    stored = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert stored == ["daefr-stage1-hq", "daefr-stage1-lq", "daefr-stage2",
                      "daefr-stage2-recon-only"]  # one copy each
    # null arm of the association claim, measured: stage 2 without its loss, scored as the
    # method against the stage-1 pair, does not pass the rule
    null = {**r.metrics, "retrieval_gain_vs_null": r.metrics["retrieval_gain_null"],
            "hq_code_agreement_after": r.metrics["hq_code_agreement_null"]}
    assert association_alignment.verdict(null, Scale.SMOKE) != "holds"

    # null arm of the dual claim, measured: every stage-3 arm trained for one step (the
    # stage-1/2 stand-ins come from the cache): the learning control is false, inconclusive
    smoke = DigitsExperiment.smoke()
    untrained = dataclasses.replace(smoke, predictor=PredictorConfig(steps=1, batch_size=16))
    monkeypatch.setattr(daefr_claims, "_experiment", lambda scale: (untrained, 1))
    u = dual_vs_single_encoder(Scale.SMOKE, 0)
    assert u.metrics["learned_codeformer"] <= 0 and u.metrics["learned_daefr"] <= 0
    judgement = dual_vs_single_encoder.judge(u.metrics, Scale.SMOKE)
    assert judgement.verdict == "inconclusive" and "test bed cannot tell" in judgement.reason


def _learnt(**metrics):
    ok = seed_difference([0.45, 0.47, 0.44], [0.2, 0.2, 0.2])
    return {"learned_codeformer": ok, "learned_daefr": ok, **metrics}


def test_dual_rule_rejects_the_baseline_passed_as_the_method():
    """Negative control: DAEFR replaced by the CodeFormer-style arm (zero paired gains) or by a
    method that matches it within seed noise does not give holds."""
    acc, psnr = [0.41, 0.43, 0.40], [17.1, 17.3, 17.0]
    null = _learnt(code_acc_gain=seed_difference(acc, acc), psnr_gain=seed_difference(psnr, psnr))
    assert dual_vs_single_encoder.verdict(null, Scale.SMALL) != "holds"
    noisy = _learnt(code_acc_gain=seed_difference([0.42, 0.41, 0.44], acc),
                    psnr_gain=seed_difference([17.0, 17.4, 17.1], psnr))
    assert dual_vs_single_encoder.verdict(noisy, Scale.SMALL) == "inconclusive"
    # better code accuracy alone is not enough: restoration quality must rise too
    half = _learnt(code_acc_gain=seed_difference([0.51, 0.53, 0.50], acc),
                   psnr_gain=seed_difference([16.1, 16.3, 16.0], psnr))
    assert dual_vs_single_encoder.verdict(half, Scale.SMALL) == "fails"
    assert dual_vs_single_encoder.verdict(_learnt(code_acc_gain=0.0, psnr_gain=0.0),
                                          Scale.SMOKE) == "fails"
    good = _learnt(code_acc_gain=seed_difference([0.51, 0.53, 0.50], acc),
                   psnr_gain=seed_difference([17.6, 17.9, 17.5], psnr))
    assert dual_vs_single_encoder.verdict(good, Scale.SMALL) == "holds"


def test_dual_learning_control_decides_before_the_rule():
    """A 'win' between arms that have not beaten the input-ignoring predictor is inconclusive."""
    acc = [0.15, 0.16, 0.15]
    win = {"code_acc_gain": seed_difference([0.25, 0.26, 0.24], acc),
           "psnr_gain": seed_difference([15.5, 15.6, 15.4], [15.0, 15.1, 15.0])}
    below = seed_difference(acc, [0.2, 0.2, 0.2])
    above = seed_difference([0.25, 0.26, 0.24], [0.2, 0.2, 0.2])
    straw = {**win, "learned_codeformer": below, "learned_daefr": above}
    judgement = dual_vs_single_encoder.judge(straw, Scale.SMALL)
    assert judgement.verdict == "inconclusive" and "test bed cannot tell" in judgement.reason
    assert dual_vs_single_encoder.verdict({**win, "learned_codeformer": above,
                                           "learned_daefr": above}, Scale.SMALL) == "holds"


def test_association_rule_and_control():
    gain = seed_difference([0.55, 0.6, 0.58], [0.05, 0.06, 0.05])
    kept = seed_difference([0.8, 0.82, 0.79], [0.0, 0.0, 0.0])
    ok = {"retrieval_gain_vs_null": gain, "hq_code_agreement_after": kept,
          "hq_code_agreement_null": kept}
    assert association_alignment.verdict(ok, Scale.SMALL) == "holds"
    # the null arm in place of the method: no gain over itself
    same = seed_difference([0.05, 0.06, 0.05], [0.05, 0.06, 0.05])
    assert association_alignment.verdict({**ok, "retrieval_gain_vs_null": same},
                                         Scale.SMALL) == "fails"
    small_gain = seed_difference([0.15, 0.16, 0.14], [0.02, 0.03, 0.02])
    assert association_alignment.verdict({**ok, "retrieval_gain_vs_null": small_gain},
                                         Scale.SMALL) != "holds"
    # aligned by moving the HQ encoder off its stage-1 codebook: fails
    drift = seed_difference([0.15, 0.2, 0.1], [0.0, 0.0, 0.0])
    assert association_alignment.verdict({**ok, "hq_code_agreement_after": drift},
                                         Scale.SMALL) == "fails"
    # the fine-tuning itself drifts: the test bed cannot tell
    judgement = association_alignment.judge({**ok, "hq_code_agreement_null": drift},
                                            Scale.SMALL)
    assert judgement.verdict == "inconclusive" and "test bed cannot tell" in judgement.reason


def test_majority_code_accuracy_known_answer():
    train = torch.tensor([[[1, 2]], [[1, 3]], [[0, 3]]])  # (3, 1, 2): modes 1 and 3
    test = torch.tensor([[[1, 3]], [[0, 3]], [[1, 2]], [[2, 2]]])
    assert majority_code_accuracy(train, test) == pytest.approx(4 / 8)
    tie = torch.tensor([[[4]], [[2]]])  # tie between 2 and 4: the lower code
    assert majority_code_accuracy(tie, torch.tensor([[[2]]])) == 1.0
    with pytest.raises(ValueError, match="share"):
        majority_code_accuracy(train, torch.zeros(2, 2, 2, dtype=torch.long))
    with pytest.raises(ValueError, match="train_codes must be"):
        majority_code_accuracy(train.float(), test)
    with pytest.raises(ValueError, match="test_codes must be"):
        majority_code_accuracy(train, -test)


@pytest.mark.usefixtures("empty_cache", "one_torch_thread")
def test_stage1_codes_and_association_loss_switch():
    exp = dataclasses.replace(DigitsExperiment.smoke(), n_train=64, n_test=16)
    hq, lq = stage1_codebooks(exp, 0)
    from iclr24.papers.daefr.experiment import digits_data

    x = digits_data(exp, 0).x_test
    with torch.no_grad():
        want = hq.quantizer.nearest(hq.encode(x))
        other = hq.quantizer.nearest(lq.encode(x))
    assert torch.equal(stage1_codes(hq, x), want)
    assert torch.equal(stage1_codes(hq, x, lq), other)
    with pytest.raises(TypeError, match="association_loss must be a bool"):
        associated_pair(exp, 0, 0, association_loss="no")
