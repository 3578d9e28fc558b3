"""Smoke runs of the llemma claims and their negative controls."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.llemma.claims import (
    majority_voting,
    majority_voting_smollm2,
    minerva_checker,
    mixture_pretraining,
)


def test_minerva_checker_smoke(check_smoke_claim):
    m = check_smoke_claim(minerva_checker, ["recall_gain", "precision_minerva", "recall_raw",
                                            "precision_math_verify", "recall_math_verify"])
    assert m.metrics["n_pairs"] >= 20
    assert m.metrics["recall_minerva"] >= m.metrics["recall_normalised"] >= m.metrics["recall_raw"]
    assert len(m.tables["pairs"]) == m.metrics["n_pairs"]


def test_minerva_checker_negative_control():
    """The baseline passed as the method: string matching as 'the checker' gains nothing."""
    null = {"recall_gain": 0.0, "precision_minerva": 1.0}
    assert minerva_checker.verdict(null, Scale.SMALL) == "fails"
    sloppy = {"recall_gain": 0.6, "precision_minerva": 0.9}  # says yes to everything
    assert minerva_checker.verdict(sloppy, Scale.SMALL) == "fails"


@pytest.mark.usefixtures("one_torch_thread")
def test_majority_voting_smoke(check_smoke_claim):
    m = check_smoke_claim(majority_voting, ["maj_minus_greedy", "greedy_acc", "pass1",
                                            "maj_at_4", "maj_at_1"])
    assert 0 <= m.metrics["greedy_acc"] <= 1 and 0 <= m.metrics["pass1"] <= 1


def test_majority_voting_negative_control():
    """maj@k that is no better than greedy (voting removed: the greedy answer k times)."""
    same = [0.40, 0.35, 0.45]
    null = {"maj_minus_greedy": Estimate.difference(same, same, paired=True)}
    assert majority_voting.verdict(null, Scale.SMALL) == "fails"
    noisy = {"maj_minus_greedy": Estimate.difference([0.5, 0.3, 0.45], [0.4, 0.35, 0.44],
                                                     paired=True)}
    assert majority_voting.verdict(noisy, Scale.SMALL) != "holds"
    assert majority_voting.verdict({"maj_minus_greedy": 0.0}, Scale.SMOKE) == "fails"


def test_majority_voting_smollm2_smoke(check_smoke_claim):
    m = check_smoke_claim(majority_voting_smollm2, ["maj_minus_greedy", "greedy_acc",
                                                    "sample_parse_rate", "greedy_parse_rate"])
    assert "untrained" in m.notes


def test_majority_voting_smollm2_negative_control():
    same = [0.2, 0.1, 0.3]
    null = {"maj_minus_greedy": Estimate.difference(same, same, paired=True)}
    assert majority_voting_smollm2.verdict(null, Scale.SMALL) == "fails"


@pytest.mark.usefixtures("one_torch_thread")
def test_mixture_pretraining_smoke(check_smoke_claim):
    m = check_smoke_claim(mixture_pretraining, ["acc_gain_mixture", "acc_general", "acc_mixture",
                                                "general_bpb_mixture", "general_bpb_math_only"])
    assert {r["arm"] for r in m.tables["per_seed_arm"]} == {"general", "mixture", "math_only"}


def test_mixture_pretraining_negative_control():
    """The general-only arm passed as the mixture: zero paired gain does not hold."""
    acc = [0.1, 0.0, 0.05]
    null = {"acc_gain_mixture": Estimate.difference(acc, acc, paired=True)}
    assert mixture_pretraining.verdict(null, Scale.SMALL) == "fails"
