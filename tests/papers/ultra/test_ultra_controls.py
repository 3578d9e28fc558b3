"""Unseen entities/relations are counted and flagged; negative controls for both claims."""

from __future__ import annotations

import pytest
import torch

from iclr24.claims import Estimate, Scale
from iclr24.papers.ultra import KnowledgeGraph, Ultra, evaluate, make_rule_kg, unseen_facts
from iclr24.papers.ultra.claims import zero_shot_real, zero_shot_synthetic


def _graph_with_unseen() -> KnowledgeGraph:
    # entity "e" and relation "s" occur only in the test split
    train = torch.tensor([[0, 0, 1], [1, 0, 2], [2, 1, 3], [3, 1, 0]])
    test = torch.tensor([[0, 0, 2], [4, 0, 1], [1, 2, 3]])
    return KnowledgeGraph(("a", "b", "c", "d", "e"), ("r", "q", "s"), train, test=test)


def test_unseen_facts_mask():
    kg = _graph_with_unseen()
    assert unseen_facts(kg, kg.test).tolist() == [False, True, True]


def test_evaluate_counts_and_warns_about_unseen_facts(one_torch_thread):
    kg = _graph_with_unseen()
    torch.manual_seed(0)
    model = Ultra(8, 2)
    with pytest.warns(UserWarning, match="2 of 3 evaluated facts .* absent from its training"):
        out = evaluate(model, kg)
    assert out["n_unseen"] == 2.0
    with pytest.raises(ValueError, match="strict=True"):
        evaluate(model, kg, strict=True)
    with pytest.raises(TypeError, match="strict must be a bool"):
        evaluate(model, kg, strict="yes")
    seen_only = evaluate(model, kg, triples=kg.test[:1], strict=True)  # no warning, no error
    assert seen_only["n_unseen"] == 0.0


def _est(values):
    return Estimate.mean_of(values)


def test_synthetic_rule_does_not_hold_for_an_untrained_model(one_torch_thread):
    """Negative control: a randomly initialised ULTRA passed as the 'pre-trained' model."""
    kg = make_rule_kg(60, 3, 3, seed=7)
    torch.manual_seed(0)
    random_init = Ultra(8, 2)
    zs = evaluate(random_init, kg)["mrr"]
    metrics = {"zero_shot_minus_random": zs - zs, "zero_shot_over_distmult": zs / 0.6,
               "random_over_distmult": zs / 0.6, "second_init_over_distmult": zs / 0.6}
    assert zero_shot_synthetic.verdict(metrics, Scale.SMALL) != "holds"


def test_synthetic_rule_and_control_read_intervals_over_seeds():
    null = {"random_over_distmult": _est([0.3, 0.35, 0.32]),
            "second_init_over_distmult": _est([0.1, 0.2, 0.15])}
    good = {**null, "zero_shot_minus_random": _est([0.3, 0.35, 0.32]),
            "zero_shot_over_distmult": _est([0.95, 1.0, 0.9])}
    assert zero_shot_synthetic.verdict(good, Scale.SMALL) == "holds"
    # the random init as the method: the paired difference is exactly 0
    zero = Estimate(0.0, 0.0, 0.0, 3, 0.95, "paired-t")
    assert zero_shot_synthetic.verdict({**good, "zero_shot_minus_random": zero},
                                       Scale.SMALL) == "fails"
    # far below DistMult on every seed: fails
    assert zero_shot_synthetic.verdict(
        {**good, "zero_shot_over_distmult": _est([0.4, 0.45, 0.5])}, Scale.SMALL) == "fails"
    # an interval straddling a threshold: not decided
    assert zero_shot_synthetic.verdict(
        {**good, "zero_shot_minus_random": _est([0.05, 0.4, 0.3])}, Scale.SMALL) == "inconclusive"
    # an untrained network that already reaches 0.8 x DistMult: the test bed cannot tell
    broken = {**good, "random_over_distmult": _est([0.9, 0.95, 0.92])}
    assert zero_shot_synthetic.verdict(broken, Scale.SMALL) == "inconclusive"
    broken = {**good, "second_init_over_distmult": _est([0.9, 0.95, 0.92])}
    assert zero_shot_synthetic.verdict(broken, Scale.SMALL) == "inconclusive"


def _real(fold_diffs, null_passing=0, distmult_gap=(0.2, 0.25, 0.3)):
    metrics = {f"{g}_zero_shot_minus_random": _est(d) for g, d in fold_diffs.items()}
    metrics["finetuned_minus_midpoint"] = _est([0.05, 0.07, 0.06])
    metrics["null_folds_passing"] = null_passing
    metrics["distmult_minus_random"] = _est(distmult_gap)
    return metrics


def test_real_rule_needs_every_fold_over_its_whole_interval():
    """Negative controls: the random-init model as the zero-shot method (differences are seed
    noise around 0), and one fold that wins on average but not on every seed."""
    noise = [0.004, -0.006, 0.003]
    null = _real({g: noise for g in ("nations", "kinships", "umls")})
    assert zero_shot_real.verdict(null, Scale.SMALL) == "inconclusive"
    one_lost = _real({"nations": [0.1, 0.12, 0.11], "umls": [0.03, 0.05, 0.04],
                      "kinships": [-0.02, -0.014, -0.03]})
    assert zero_shot_real.verdict(one_lost, Scale.SMALL) == "fails"
    wins = _real({"nations": [0.1, 0.12, 0.11], "umls": [0.03, 0.05, 0.04],
                  "kinships": [0.1, 0.11, 0.12]})
    assert zero_shot_real.verdict(wins, Scale.SMALL) == "holds"
    # the null arm (a second untrained network) passes in all three folds: cannot tell
    assert zero_shot_real.verdict({**wins, "null_folds_passing": 3}, Scale.SMALL) == "inconclusive"
    # positive control: DistMult trained on the targets does not beat the untrained network
    assert zero_shot_real.verdict({**wins, "distmult_minus_random": _est([-0.1, 0.05, 0.02])},
                                  Scale.SMALL) == "inconclusive"
