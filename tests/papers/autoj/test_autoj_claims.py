"""Smoke runs of the autoj claims, each with its null arms (measured in the same run) put in
the method's place, and the rules fed hand-made numbers (holds / fails / control false)."""

import pytest

from iclr24.claims import Estimate, Scale
from iclr24.papers.autoj.claims import best_of_n, judge_agreement, smollm2_judge


def _diff(a, b):
    return Estimate.difference(a, b, paired=True)


@pytest.mark.usefixtures("one_torch_thread")
def test_judge_agreement_smoke_and_null_arms_in_the_judges_place(check_smoke_claim):
    m = check_smoke_claim(judge_agreement, [
        "agreement_gain", "consistency_gain", "agreement_over_heuristic", "sft_agreement",
        "sft_consistency", "untuned_agreement", "reward_model_agreement",
        "sft_no_swap_consistency", "swap_consistency_gain", "heuristic_agreement",
        "length_agreement", "constant_tie_agreement", "random_agreement",
        "random_agreement_gain", "random_consistency_gain", "random_over_heuristic",
        "length_agreement_gain", "length_over_heuristic", "constant_tie_over_heuristic"])
    for key in ("sft_agreement", "reward_model_agreement", "untuned_parse_rate"):
        assert 0 <= m.metrics[key] <= 1
    assert {r["system"] for r in m.tables["per_scenario"]} == {
        "untuned", "reward_model", "sft_no_swap", "sft", "length", "constant_tie", "random"}
    assert m.metrics["length_consistency"] == m.metrics["constant_tie_consistency"] == 1.0
    # each null arm of this run as the judge: the rule with its control does not hold
    for arm in ("random", "length", "constant_tie"):
        null = {**m.metrics, "agreement_gain": m.metrics[f"{arm}_agreement_gain"],
                "consistency_gain": m.metrics[f"{arm}_consistency_gain"],
                "agreement_over_heuristic": m.metrics[f"{arm}_over_heuristic"]}
        for scale in (Scale.SMOKE, Scale.SMALL):
            assert judge_agreement.verdict(null, scale) != "holds", arm
    # the control reads the random judge of this run: it must not pass the rule itself
    assert not (m.metrics["random_over_heuristic"] > 0)


def test_judge_agreement_rule_and_control():
    base = [0.02, 0.0, 0.05]
    control_ok = {"random_agreement_gain": _diff([0.1, 0.12, 0.09], base),
                  "random_consistency_gain": _diff([0.33, 0.3, 0.36], base),
                  "random_over_heuristic": _diff([0.1, 0.12, 0.09], [0.4, 0.42, 0.38])}
    good = {**control_ok, "agreement_gain": _diff([0.6, 0.62, 0.58], base),
            "consistency_gain": _diff([0.85, 0.9, 0.88], base),
            "agreement_over_heuristic": _diff([0.6, 0.62, 0.58], [0.4, 0.42, 0.38])}
    assert judge_agreement.verdict(good, Scale.SMALL) == "holds"
    # the paper-sized gains over a straw base, but no better than longer-wins: fails
    shallow = {**good, "agreement_over_heuristic": _diff([0.4, 0.41, 0.37],
                                                        [0.4, 0.42, 0.38])}
    assert judge_agreement.verdict(shallow, Scale.SMALL) != "holds"
    worse = {**good, "agreement_over_heuristic": _diff([0.3, 0.31, 0.29], [0.4, 0.42, 0.38])}
    assert judge_agreement.verdict(worse, Scale.SMALL) == "fails"
    # agreement gained but consistency did not: fails
    same = [0.05, 0.1, 0.0]
    half = {**good, "consistency_gain": _diff(same, same)}
    assert judge_agreement.verdict(half, Scale.SMALL) == "fails"
    # a random judge that passes the rule (a test bed that cannot tell): inconclusive
    broken = {**good, "random_agreement_gain": good["agreement_gain"],
              "random_consistency_gain": good["consistency_gain"],
              "random_over_heuristic": good["agreement_over_heuristic"]}
    assert judge_agreement.verdict(broken, Scale.SMALL) == "inconclusive"


@pytest.mark.usefixtures("one_torch_thread")
def test_best_of_n_smoke_and_null_arms_in_the_judges_place(check_smoke_claim):
    m = check_smoke_claim(best_of_n, [
        "quality_gain", "gap_closed", "quality_over_length", "quality_at_1", "quality_at_8",
        "oracle_quality", "rating_parse_rate", "length_quality_at_8", "random_quality_at_8",
        "length_quality_gain", "length_gap_closed", "random_quality_gain",
        "random_gap_closed", "random_over_length"])
    assert m.metrics["quality_at_8"] <= m.metrics["oracle_quality"] + 1e-12
    assert m.metrics["length_over_length"] == 0.0
    for arm in ("random", "length"):
        null = {**m.metrics, "quality_gain": m.metrics[f"{arm}_quality_gain"],
                "gap_closed": m.metrics[f"{arm}_gap_closed"],
                "quality_over_length": m.metrics[f"{arm}_over_length"]}
        for scale in (Scale.SMOKE, Scale.SMALL):
            assert best_of_n.verdict(null, scale) != "holds", arm


def test_best_of_n_rule_and_control():
    q1 = [0.40, 0.42, 0.38]
    control_ok = {"random_quality_gain": _diff([0.41, 0.4, 0.39], q1),
                  "random_gap_closed": Estimate.mean_of([0.02, -0.03, 0.01]),
                  "random_over_length": _diff([0.41, 0.4, 0.39], [0.6, 0.62, 0.61])}
    good = {**control_ok, "quality_gain": _diff([0.8, 0.82, 0.79], q1),
            "gap_closed": Estimate.mean_of([0.7, 0.75, 0.72]),
            "quality_over_length": _diff([0.8, 0.82, 0.79], [0.6, 0.62, 0.61])}
    assert best_of_n.verdict(good, Scale.SMALL) == "holds"
    null = {**good, "quality_gain": _diff(q1, q1),
            "gap_closed": Estimate.mean_of([0.0, 0.01, -0.01])}
    assert best_of_n.verdict(null, Scale.SMALL) == "fails"
    weak = {**good, "gap_closed": Estimate.mean_of([0.15, 0.2, 0.18])}
    assert best_of_n.verdict(weak, Scale.SMALL) == "fails"
    # closes half the gap, but a length count does better: fails
    shallow = {**good, "quality_over_length": _diff([0.55, 0.56, 0.57], [0.6, 0.62, 0.61])}
    assert best_of_n.verdict(shallow, Scale.SMALL) == "fails"
    broken = {**good, "random_quality_gain": good["quality_gain"],
              "random_gap_closed": good["gap_closed"],
              "random_over_length": good["quality_over_length"]}
    assert best_of_n.verdict(broken, Scale.SMALL) == "inconclusive"


@pytest.mark.usefixtures("one_torch_thread")
def test_smollm2_judge_smoke_and_chance_in_the_models_place(check_smoke_claim):
    m = check_smoke_claim(smollm2_judge, ["agreement_over_chance", "chance_agreement",
                                          "free_parse_rate", "primed_parse_rate",
                                          "random_agreement", "constant_tie_agreement",
                                          "random_over_chance", "agreement_gain"])
    assert "stand-in" in m.notes and "llama2" in m.notes and m.tables["replies"]
    # the random judge of this run as the model: never above chance
    null = {**m.metrics, "agreement_over_chance": m.metrics["random_over_chance"]}
    assert m.metrics["random_over_chance"] <= 0
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert smollm2_judge.verdict(null, scale) != "holds"


def test_smollm2_judge_rule_and_control():
    readable = {"primed_parse_rate": Estimate.mean_of([0.9, 1.0, 0.95])}
    above = {**readable, "agreement_over_chance": _diff([0.5, 0.5, 0.5], [0.17, 0.17, 0.0])}
    assert smollm2_judge.verdict(above, Scale.SMALL) == "holds"
    r = [0.17, 0.0, 0.33]
    assert smollm2_judge.verdict({**readable, "agreement_over_chance": _diff(r, r)},
                                 Scale.SMALL) == "fails"
    # verdicts mostly unreadable: the harness, not the model, would decide
    unreadable = {**above, "primed_parse_rate": Estimate.mean_of([0.1, 0.0, 0.2])}
    assert smollm2_judge.verdict(unreadable, Scale.SMALL) == "inconclusive"
