"""Smoke runs of the dscnn_dog claims, their null arms in the method's place (must not hold at
small), and the rules / controls on hand-made numbers (holds / fails / control false)."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.dscnn_dog.claims import cluster_structure, dog_coverage, layerwise


def _est(values):
    return Estimate.mean_of(values)


def _diff(a, b):
    return Estimate.difference(a, b, paired=True)


def _small_like(metrics):
    """A one-seed smoke measurement read by the small rule: the standard-CNN arm is not run
    at smoke, so it is filled with the null's own values (permuted vs standard = the null's
    gap, the standard CNN taken to learn) - the most favourable reading for the null."""
    return {"gap_standard": metrics.get("null_gap_standard", 0.0),
            "acc_gain_standard": 0.1, **metrics}


def test_smoke_claims_run_and_their_null_arms_do_not_hold(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(dog_coverage, [
        "ratio_init", "ratio_permuted", "null_ratio_init", "null_ratio_permuted",
        "coverage_trained", "coverage_init", "coverage_permuted", "coverage_permuted2",
        "coverage_random", "coverage_trained_fullbank", "acc_gain", "lowpass_best_cos"])
    assert m.metrics["lowpass_best_cos"] < 0.6  # the bank no longer matches flat kernels
    # the permuted kernels (measured in this run) as the method
    null = {**m.metrics, "ratio_init": m.metrics["null_ratio_init"],
            "ratio_permuted": m.metrics["null_ratio_permuted"]}
    # even granting that the network learned, the null may not hold
    for metrics in (null, {**null, "acc_gain": 0.1}):
        assert dog_coverage.verdict(_small_like(metrics), Scale.SMALL) != "holds"
        assert dog_coverage.verdict(metrics, Scale.SMOKE) != "holds"

    m = check_smoke_claim(cluster_structure, [
        "n_matched_trained", "n_matched_init", "n_matched_permuted", "matched_gap_init",
        "matched_gap_permuted", "null_matched_gap_init", "share_matched_trained",
        "share_matched_permuted", "acc_gain", "lowpass_best_cos"])
    # permuted kernels as the method: their gap to themselves is 0, to init the measured one
    null = {**m.metrics, "n_matched_trained": m.metrics["n_matched_permuted"],
            "matched_gap_permuted": 0.0,
            "matched_gap_init": m.metrics["null_matched_gap_init"]}
    for metrics in (null, {**null, "acc_gain": 0.1}):
        assert cluster_structure.verdict(metrics, Scale.SMALL) != "holds"

    m = check_smoke_claim(layerwise, [
        "min_stage_gap_permuted", "min_stage_gap_init", "null_min_stage_gap_permuted",
        "null_min_stage_gap_init", "coverage_stage1_trained", "coverage_stage3_permuted",
        "acc_gain", "lowpass_best_cos"])
    null = {**m.metrics, "min_stage_gap_permuted": m.metrics["null_min_stage_gap_permuted"],
            "min_stage_gap_init": m.metrics["null_min_stage_gap_init"]}
    for metrics in (null, {**null, "acc_gain": 0.1}):
        assert layerwise.verdict(metrics, Scale.SMALL) != "holds"


def test_smoke_claims_are_deterministic(one_torch_thread):
    a, b = layerwise(Scale.SMOKE, 3), layerwise(Scale.SMOKE, 3)
    assert a.metrics == b.metrics


GOOD_COVERAGE = {"ratio_init": _est([5.0, 6.0, 7.0]), "ratio_permuted": _est([4.8, 5.0, 5.2]),
                 "gap_standard": _est([0.1, 0.12, 0.11]), "acc_gain": _est([0.1, 0.12, 0.14]),
                 "acc_gain_standard": _est([0.08, 0.1, 0.09]), "lowpass_best_cos": 0.48}


def test_dog_coverage_rule_and_control():
    assert dog_coverage.verdict(GOOD_COVERAGE, Scale.SMALL) == "holds"
    # init or permuted kernels as the method: ratio ~1 to themselves
    for bad in ({"ratio_init": _est([0.9, 1.0, 1.1])}, {"ratio_permuted": _est([1.1, 1.2, 1.3])},
                {"gap_standard": _est([-0.05, -0.04, -0.06])}):
        assert dog_coverage.verdict({**GOOD_COVERAGE, **bad}, Scale.SMALL) == "fails"
    # the test bed cannot tell: a network at chance, a straw standard CNN, a bank matching flats
    for broken in ({"acc_gain": _est([-0.01, 0.0, 0.02])},
                   {"acc_gain_standard": _est([-0.01, 0.0, 0.01])},
                   {"lowpass_best_cos": 0.85}):
        assert dog_coverage.verdict({**GOOD_COVERAGE, **broken}, Scale.SMALL) == "inconclusive"
    assert dog_coverage.verdict({"ratio_init": 1.0, "ratio_permuted": 1.0, "acc_gain": 0.1,
                                 "lowpass_best_cos": 0.48}, Scale.SMOKE) == "fails"
    assert dog_coverage.verdict({**GOOD_COVERAGE, "ratio_init": float("nan")},
                                Scale.SMALL) == "inconclusive"


def test_cluster_structure_rule_and_control():
    good = {"n_matched_trained": _est([5, 6, 5]), "matched_gap_init": _diff([5, 6, 5], [0, 0, 0]),
            "matched_gap_permuted": _diff([5, 6, 5], [1, 2, 1]), "acc_gain": _est([0.1, 0.12, 0.14]),
            "lowpass_best_cos": 0.48}
    assert cluster_structure.verdict(good, Scale.SMALL) == "holds"
    # the audit's case: permuted kernels give as many matched clusters as trained ones
    audit = {**good, "matched_gap_permuted": _diff([5, 5, 5], [7, 7, 8])}
    assert cluster_structure.verdict(audit, Scale.SMALL) == "fails"
    assert cluster_structure.verdict({**good, "n_matched_trained": _est([1, 2, 1])},
                                     Scale.SMALL) == "fails"
    for broken in ({"acc_gain": _est([-0.02, 0.0, 0.01])}, {"lowpass_best_cos": 0.85}):
        assert cluster_structure.verdict({**good, **broken}, Scale.SMALL) == "inconclusive"


def test_layerwise_rule_and_control():
    good = {"min_stage_gap_permuted": _est([0.1, 0.12, 0.08]),
            "min_stage_gap_init": _est([0.15, 0.2, 0.1]), "acc_gain": _est([0.1, 0.12, 0.14]),
            "lowpass_best_cos": 0.48}
    assert layerwise.verdict(good, Scale.SMALL) == "holds"
    for bad in ({"min_stage_gap_permuted": _est([-0.02, -0.025, -0.03])},
                {"min_stage_gap_init": _est([-0.1, -0.12, -0.14])}):
        assert layerwise.verdict({**good, **bad}, Scale.SMALL) == "fails"
    assert layerwise.verdict({**good, "min_stage_gap_permuted": _est([0.0, 0.01, -0.01])},
                             Scale.SMALL) == "inconclusive"
    for broken in ({"acc_gain": _est([-0.02, 0.0, 0.01])}, {"lowpass_best_cos": 0.7}):
        assert layerwise.verdict({**good, **broken}, Scale.SMALL) == "inconclusive"


def test_claims_reject_a_non_int_seed():
    from iclr24.papers.dscnn_dog.claims import _seeds

    with pytest.raises(TypeError, match="seed must be an int"):
        _seeds(Scale.SMOKE, "0")
    assert _seeds(Scale.SMALL, 2) == [2, 1002, 2002]
