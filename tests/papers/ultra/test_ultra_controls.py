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


def test_synthetic_rule_does_not_hold_for_an_untrained_model(one_torch_thread):
    """Negative control: a randomly initialised ULTRA passed as the 'pre-trained' model."""
    kg = make_rule_kg(60, 3, 3, seed=7)
    torch.manual_seed(0)
    random_init = Ultra(8, 2)
    zs = evaluate(random_init, kg)["mrr"]
    metrics = {"zero_shot_minus_random": zs - zs, "zero_shot_over_distmult": zs / 0.6}
    assert zero_shot_synthetic.verdict(metrics, Scale.SMALL) == "fails"


def test_real_rule_needs_every_fold_over_its_whole_interval():
    """Negative controls: the random-init model as the zero-shot method (differences are seed
    noise around 0), and one fold that wins on average but not on every seed."""
    noise = [0.004, -0.006, 0.003]
    null = {f"{g}_zero_shot_minus_random": Estimate.mean_of(noise)
            for g in ("nations", "kinships", "umls")}
    null["finetuned_minus_midpoint"] = Estimate.mean_of([0.05, 0.07, 0.06])
    assert zero_shot_real.verdict(null, Scale.SMALL) == "inconclusive"
    one_lost = dict(null, nations_zero_shot_minus_random=Estimate.mean_of([0.1, 0.12, 0.11]),
                    umls_zero_shot_minus_random=Estimate.mean_of([0.03, 0.05, 0.04]),
                    kinships_zero_shot_minus_random=Estimate.mean_of([-0.02, -0.014, -0.03]))
    assert zero_shot_real.verdict(one_lost, Scale.SMALL) == "fails"
    wins = dict(one_lost, kinships_zero_shot_minus_random=Estimate.mean_of([0.1, 0.11, 0.12]))
    assert zero_shot_real.verdict(wins, Scale.SMALL) == "holds"
