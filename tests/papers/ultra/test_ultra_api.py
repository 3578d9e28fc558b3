"""The user-facing UltraLinkPredictor: load by labels, score, evaluate, fine-tune, save/load."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from iclr24.papers.ultra import KnowledgeGraph, TrainConfig, UltraLinkPredictor, make_rule_kg

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def family_kg():
    train = pd.DataFrame(
        [("ann", "parent_of", "bob"), ("bob", "parent_of", "cid"), ("ann", "parent_of", "dan"),
         ("bob", "child_of", "ann"), ("cid", "child_of", "bob"), ("eve", "parent_of", "fay"),
         ("fay", "child_of", "eve"), ("dan", "parent_of", "gus")],
        columns=["head", "relation", "tail"])
    test = pd.DataFrame([("dan", "child_of", "ann"), ("gus", "child_of", "dan")],
                        columns=["head", "relation", "tail"])
    return KnowledgeGraph.from_dataframe(train, test=test, name="family")


def test_predict_evaluate_finetune_save_load(family_kg, tmp_path):
    cfg = TrainConfig(steps=5, batch_size=4, num_negatives=4)
    ultra = UltraLinkPredictor.pretrain([make_rule_kg(30, 2, 2, seed=1)], cfg, dim=8,
                                        num_layers=2, seed=0)
    assert len(ultra.history) == 5
    top = ultra.predict_tails(family_kg, "dan", "child_of", top_k=3)
    assert list(top.columns) == ["entity", "score"] and len(top) == 3
    assert top["score"].is_monotonic_decreasing
    full = ultra.predict_tails(family_kg, "dan", "child_of", filtered=False)
    assert sorted(full["entity"]) == sorted(family_kg.entities)
    # filtered (default): the known answer ann of (dan, child_of, ?) is dropped
    assert "ann" not in ultra.predict_tails(family_kg, "dan", "child_of")["entity"].tolist()
    heads = ultra.predict_heads(family_kg, "child_of", "ann", filtered=False)
    ids = ultra.score_ids(family_kg, torch.tensor([family_kg.entity_id("ann")]),
                          torch.tensor([family_kg.relation_id("child_of")
                                        + family_kg.num_relations]))[0]
    assert heads["score"].iloc[0] == pytest.approx(float(ids.max()))
    metrics = ultra.evaluate(family_kg)
    assert 0 < metrics["mrr"] <= 1
    tuned = ultra.fine_tune(family_kg, cfg)
    assert len(tuned.history) == 5 and tuned.model is not ultra.model
    path = ultra.save(tmp_path / "u.pt")
    again = UltraLinkPredictor.load(path)
    pd.testing.assert_frame_equal(
        again.predict_tails(family_kg, "dan", "child_of", filtered=False), full)


def test_unknown_labels_and_bad_arguments(family_kg):
    ultra = UltraLinkPredictor(dim=8, num_layers=1)
    with pytest.raises(ValueError, match="unknown entity 'zed'"):
        ultra.predict_tails(family_kg, "zed", "child_of")
    with pytest.raises(ValueError, match="unknown relation 'sibling_of'"):
        ultra.predict_tails(family_kg, "ann", "sibling_of")
    with pytest.raises(ValueError, match="top_k"):
        ultra.predict_tails(family_kg, "ann", "child_of", top_k=0)
    with pytest.raises(TypeError, match="KnowledgeGraph"):
        ultra.evaluate("family")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Ultra"):
        UltraLinkPredictor(torch.nn.Linear(2, 2))  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError):
        UltraLinkPredictor.load("/nonexistent/dir/u.pt")
