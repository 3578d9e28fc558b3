"""Smoke runs of the SAL claims and negative controls of their rules."""

import pytest

from iclr24.claims import seed_difference
from iclr24.papers.sal.claims import detection_fpr95, filter_quality


@pytest.mark.parametrize("claim_obj,keys", [
    (filter_quality, {"sal_f1", "gradnorm_f1", "random_f1", "f1_gain_vs_gradnorm",
                      "f1_gain_vs_random", "sal_auroc", "gradnorm_auroc",
                      "direction_cos_to_mean"}),
    (detection_fpr95, {"sal_fpr95", "msp_fpr95", "energy_fpr95", "naive_fpr95",
                       "oracle_fpr95", "sal_auroc", "fpr95_gain_vs_msp",
                       "fpr95_gain_vs_energy", "fpr95_gain_vs_naive"}),
], ids=lambda c: getattr(c, "name", ""))
def test_smoke_claim_runs(claim_obj, keys, check_smoke_claim):
    check_smoke_claim(claim_obj, keys)


# per-seed F1s / FPR95s of the kind the small runs measure (5 of the 10 seeds)
GRADNORM_F1 = [0.607, 0.590, 0.524, 0.659, 0.658]
RANDOM_F1 = [0.167, 0.133, 0.167, 0.133, 0.067]
OTHER_RANDOM_F1 = [0.100, 0.167, 0.133, 0.200, 0.100]


def _filter_metrics(method_f1, null_f1=RANDOM_F1):
    return {"f1_gain_vs_gradnorm": seed_difference(method_f1, GRADNORM_F1),
            "f1_gain_vs_random": seed_difference(method_f1, RANDOM_F1),
            "randdir_f1_gain_vs_gradnorm": seed_difference(null_f1, GRADNORM_F1),
            "randdir_f1_gain_vs_random": seed_difference(null_f1, RANDOM_F1)}


def test_negative_control_random_or_gradnorm_filter_as_sal():
    assert filter_quality.verdict(_filter_metrics(OTHER_RANDOM_F1), "small") == "fails"
    assert filter_quality.verdict(_filter_metrics(GRADNORM_F1), "small") == "fails"
    # a filter that beats both on every seed holds
    better = [f + 0.1 for f in GRADNORM_F1]
    assert filter_quality.verdict(_filter_metrics(better), "small") == "holds"
    # a single-seed smoke run reads plain numbers the same way
    assert filter_quality.verdict({"f1_gain_vs_gradnorm": 0.0, "f1_gain_vs_random": 0.4,
                                   "randdir_f1_gain_vs_gradnorm": 0.0,
                                   "randdir_f1_gain_vs_random": 0.4}, "smoke") == "fails"


def test_negative_control_random_direction_null_that_passes_makes_it_inconclusive():
    better = [f + 0.1 for f in GRADNORM_F1]
    # the singular vectors replaced by random directions do as well: the test bed cannot tell
    j = filter_quality.judge(_filter_metrics(better, null_f1=better), "small")
    assert j.verdict == "inconclusive" and "control" in j.reason


MSP = [0.210, 0.416, 0.213, 0.332, 0.255]
ENERGY = [0.024, 0.238, 0.311, 0.157, 0.045]
NAIVE = [0.234, 0.455, 0.332, 0.311, 0.462]


def _detection_metrics(method_fpr, null_fpr=NAIVE):
    out = {}
    for n, b in (("msp", MSP), ("energy", ENERGY), ("naive", NAIVE)):
        out[f"fpr95_gain_vs_{n}"] = seed_difference(b, method_fpr)
        out[f"randcand_fpr95_gain_vs_{n}"] = seed_difference(b, null_fpr)
    return out


def test_negative_control_baselines_as_sal():
    for base in (MSP, ENERGY, NAIVE):
        assert detection_fpr95.verdict(_detection_metrics(base), "small") != "holds"
    assert detection_fpr95.verdict(_detection_metrics(MSP), "small") == "fails"
    # the learning step with the filter removed (all wild data as outliers) is the naive one
    assert detection_fpr95.verdict(_detection_metrics(NAIVE), "small") == "fails"
    good = [min(m, e, n) - 0.05 for m, e, n in zip(MSP, ENERGY, NAIVE)]
    assert detection_fpr95.verdict(_detection_metrics(good), "small") == "holds"

    # learning from random wild points (the filter switched off) that also passes: inconclusive
    j = detection_fpr95.judge(_detection_metrics(good, null_fpr=good), "small")
    assert j.verdict == "inconclusive" and "control" in j.reason


def test_smoke_runs_measure_the_null_arms(check_smoke_claim):
    m = check_smoke_claim(detection_fpr95, {"randcand_fpr95", "randcand_fpr95_gain_vs_msp"})
    assert detection_fpr95.judge(m.metrics, "smoke").verdict in ("holds", "fails",
                                                                  "inconclusive")
    m = check_smoke_claim(filter_quality, {"randdir_f1", "randdir_f1_gain_vs_gradnorm"})
