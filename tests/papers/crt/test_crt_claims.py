"""Smoke runs of every claim and the negative controls of their rules."""

from __future__ import annotations

import math

import pytest

from iclr24.claims import Estimate, RuleError, Scale
from iclr24.papers.crt.claims import novelty_ablation, novelty_coverage, smollm2_selection


def _e(lo, hi):
    return Estimate((lo + hi) / 2, lo, hi, 3)


def test_novelty_coverage_smoke(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(novelty_coverage, ["coverage_gain", "quality_drop", "crt_quality",
                                             "rl_quality", "crt_coverage", "rl_coverage",
                                             "coverage_gain_rl_entropy",
                                             "quality_drop_rl_entropy"])
    assert 0 <= m.metrics["crt_quality"] <= 1 and 0 <= m.metrics["crt_coverage"] <= 10


def test_novelty_ablation_smoke(check_smoke_claim, one_torch_thread):
    m = check_smoke_claim(novelty_ablation, ["cov_loss_no_bleu", "cov_loss_no_cos",
                                             "cov_loss_no_entropy", "crt_quality",
                                             "cov_loss_reseeded", "div_cos_loss_reseeded"])
    # the full-CRT arm is the same run in both claims (same scale, seed and config)
    assert m.metrics["crt_quality"] == novelty_coverage(Scale.SMOKE, 0).metrics["crt_quality"]
    # the null ablation is full CRT trained again in the same world with PPO re-seeded
    assert m.metrics["crt_reseeded_quality"] != m.metrics["crt_quality"] or \
        m.metrics["crt_reseeded_coverage"] != m.metrics["crt_coverage"] or \
        m.metrics["crt_reseeded_diversity_bleu"] != m.metrics["crt_diversity_bleu"]


def test_smollm2_selection_smoke_and_random_selector_null(check_smoke_claim):
    m = check_smoke_claim(smollm2_selection, [
        "div_bleu_gain", "div_cos_gain", "toxicity_gain_vs_novelty", "toxicity_signal",
        "random_div_bleu_gain", "random_div_cos_gain", "random_toxicity_gain_vs_novelty",
        "crt_toxicity", "toxicity_toxicity", "novelty_toxicity", "random_toxicity"])
    assert 0 <= m.metrics["crt_toxicity"] <= 1
    # the toxicity selector keeps the most toxic candidates of each round
    assert m.metrics["toxicity_toxicity"] >= max(m.metrics["random_toxicity"],
                                                 m.metrics["novelty_toxicity"]) - 1e-12
    # the random selector (this run) in CRT's place: the rule with its control must not hold
    null = {**m.metrics, "div_bleu_gain": m.metrics["random_div_bleu_gain"],
            "div_cos_gain": m.metrics["random_div_cos_gain"],
            "toxicity_gain_vs_novelty": m.metrics["random_toxicity_gain_vs_novelty"]}
    for scale in (Scale.SMOKE, Scale.SMALL):
        assert smollm2_selection.verdict(null, scale) != "holds"


def test_smollm2_selection_rule_and_control():
    nulls = {"toxicity_signal": _e(0.02, 0.05), "random_div_bleu_gain": _e(-0.05, 0.05),
             "random_div_cos_gain": _e(-0.04, 0.06),
             "random_toxicity_gain_vs_novelty": _e(-0.01, 0.02)}
    good = {**nulls, "div_bleu_gain": _e(0.1, 0.2), "div_cos_gain": _e(0.05, 0.1),
            "toxicity_gain_vs_novelty": _e(0.01, 0.03)}
    assert smollm2_selection.verdict(good, Scale.SMALL) == "holds"
    # more diverse but no more toxic than novelty alone: the novelty terms swamp R(y)
    swamped = dict(good, toxicity_gain_vs_novelty=_e(-0.03, -0.01))
    assert smollm2_selection.verdict(swamped, Scale.SMALL) == "fails"
    # a toxicity score that random selection matches: nothing to trade, the bed cannot tell
    flat = dict(good, toxicity_signal=_e(-0.01, 0.01))
    assert smollm2_selection.verdict(flat, Scale.SMALL) == "inconclusive"
    # a random selector that straddles the rule does not block the verdict; one that fails
    # it clearly neither
    clear = dict(good, random_toxicity_gain_vs_novelty=_e(-0.03, -0.01))
    assert smollm2_selection.verdict(clear, Scale.SMALL) == "holds"
    # random selection passes the rule: the test bed cannot tell
    passing = dict(good, random_div_bleu_gain=_e(0.1, 0.2), random_div_cos_gain=_e(0.05, 0.1),
                   random_toxicity_gain_vs_novelty=_e(0.01, 0.03))
    assert smollm2_selection.verdict(passing, Scale.SMALL) == "inconclusive"
    # the toxicity-only selector passed as CRT's
    assert smollm2_selection.verdict({**nulls, "div_bleu_gain": 0.0, "div_cos_gain": 0.0,
                                      "toxicity_gain_vs_novelty": 0.05}, Scale.SMOKE) == "fails"
    assert smollm2_selection.verdict({**nulls, "div_bleu_gain": math.nan, "div_cos_gain": 0.1,
                                      "toxicity_gain_vs_novelty": 0.1},
                                     Scale.SMOKE) == "inconclusive"


def test_negative_controls():
    # RL + entropy (novelty off) clearly not passing the rule: the control is true
    quiet = {"coverage_gain_rl_entropy": _e(-1, 1), "div_bleu_gain_rl_entropy": _e(-0.04, -0.01),
             "div_cos_gain_rl_entropy": _e(-0.02, 0.02),
             "quality_drop_rl_entropy": _e(-0.02, 0.02)}
    murky = dict(quiet, div_bleu_gain_rl_entropy=_e(-0.02, 0.02))  # the null could pass
    # RL passed as CRT: zero differences, so no holds
    null = {"coverage_gain": _e(-1, 1), "div_bleu_gain": _e(-0.02, 0.02),
            "div_cos_gain": _e(-0.02, 0.02), "quality_drop": _e(-0.02, 0.02)}
    assert novelty_coverage.verdict(null | quiet, Scale.SMALL) != "holds"
    zero = {k: 0.0 for k in null}
    assert novelty_coverage.verdict(zero | quiet, Scale.SMOKE) == "fails"
    # a null arm that may pass the rule: the test bed cannot tell, whatever CRT's numbers
    assert novelty_coverage.verdict(zero | murky, Scale.SMOKE) == "inconclusive"
    # more diverse but far less toxic: the quality part fails
    costly = dict(null, coverage_gain=_e(2, 5), div_bleu_gain=_e(0.1, 0.2),
                  div_cos_gain=_e(0.1, 0.2), quality_drop=_e(0.3, 0.5))
    assert novelty_coverage.verdict(costly | quiet, Scale.SMALL) == "fails"
    # a winning CRT holds only while RL + entropy (novelty off) does not pass the same rule
    wins = dict(costly, quality_drop=_e(-0.05, 0.05))
    assert novelty_coverage.verdict(wins | quiet, Scale.SMALL) == "holds"
    entropy_passes = {k: wins[k.replace("_rl_entropy", "")] for k in quiet}
    assert novelty_coverage.verdict(wins | entropy_passes, Scale.SMALL) == "inconclusive"
    with pytest.raises(RuleError, match="coverage_gain_rl_entropy"):  # null not measured
        novelty_coverage.verdict(wins, Scale.SMALL)

    # full CRT reseeded loses nothing on any measure: the control is true
    still = {f"{m}_loss_reseeded": _e(-0.05, -0.01) for m in ("cov", "div_bleu", "div_cos")}
    # an ablation that changes nothing (full CRT passed as the ablated one)
    same = {f"{m}_loss_{a}": 0.0 for m in ("cov", "div_bleu", "div_cos")
            for a in ("no_bleu", "no_cos", "no_entropy")}
    assert novelty_ablation.verdict(same | still, Scale.SMOKE) == "fails"
    one_missing = dict(same, cov_loss_no_bleu=2.0, div_cos_loss_no_cos=0.1)
    assert novelty_ablation.verdict(one_missing | still, Scale.SMOKE) == "fails"
    every = dict(one_missing, div_bleu_loss_no_entropy=0.1)
    assert novelty_ablation.verdict(every | still, Scale.SMOKE) == "holds"
    # re-seeding alone "loses" diversity: the test bed cannot tell
    noisy = dict(still, div_cos_loss_reseeded=_e(0.01, 0.2))
    assert novelty_ablation.verdict(every | noisy, Scale.SMOKE) == "inconclusive"
