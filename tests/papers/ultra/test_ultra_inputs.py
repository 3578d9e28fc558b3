"""Bad inputs: float ids, out-of-range filters, non-finite losses; filtered predictions."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from iclr24.papers.ultra import (
    KnowledgeGraph,
    TrainConfig,
    Ultra,
    UltraLinkPredictor,
    as_id_tensor,
    check_triples,
    evaluate,
    filtered_ranks,
    make_rule_kg,
    prepare_graph,
    train_ultra,
)

pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="module")
def kg() -> KnowledgeGraph:
    train = torch.tensor([[0, 0, 1], [1, 0, 2], [2, 1, 3], [3, 1, 0], [1, 2, 3], [4, 0, 4]])
    test = torch.tensor([[0, 0, 2], [2, 1, 0]])
    return KnowledgeGraph(("a", "b", "c", "d", "e"), ("r", "q", "s"), train, test=test)


def test_as_id_tensor_keeps_integers_and_refuses_floats_and_bools():
    assert as_id_tensor([1, 2], "ids").dtype == torch.long
    assert as_id_tensor(np.array([3], dtype=np.int32), "ids").tolist() == [3]
    for bad in ([1.7, 2.0], torch.tensor([1.0]), np.array([0.5]), torch.tensor([True])):
        with pytest.raises(TypeError, match="ids must hold integer ids"):
            as_id_tensor(bad, "ids")


def test_check_triples_names_the_argument_and_the_range():
    ok = check_triples([[0, 1, 2]], "known_triples", 3, 2)
    assert ok.dtype == torch.long and ok.tolist() == [[0, 1, 2]]
    assert check_triples(torch.empty(0, 3, dtype=torch.long), "t", 3, 2).shape == (0, 3)
    with pytest.raises(ValueError, match=r"known_triples has relation ids outside \[0, 2\)"):
        check_triples([[0, 2, 1]], "known_triples", 3, 2)  # inverse id: not a direct relation
    with pytest.raises(ValueError, match=r"known_triples has entity ids outside \[0, 3\)"):
        check_triples([[0, 1, 3]], "known_triples", 3, 2)
    with pytest.raises(ValueError, match=r"known_triples has entity ids outside"):
        check_triples([[-1, 1, 0]], "known_triples", 3, 2)
    with pytest.raises(ValueError, match=r"triples must have shape \(N, 3\)"):
        check_triples([[0, 1]], "triples", 3, 2)
    with pytest.raises(TypeError, match="known_triples must hold integer ids"):
        check_triples([[0.0, 1.0, 2.0]], "known_triples", 3, 2)


def test_model_and_ranking_refuse_float_ids_and_foreign_filters(kg):
    torch.manual_seed(0)
    model = Ultra(8, 2).eval()
    data = prepare_graph(kg)
    with pytest.raises(TypeError, match="anchors must hold integer ids"):
        model.score_all_tails(data, torch.tensor([1.7]), torch.tensor([0]))
    with pytest.raises(TypeError, match="relations must hold integer ids"):
        model.score_all_tails(data, torch.tensor([1]), [0.0])
    with pytest.raises(TypeError, match="batch must hold integer ids"):
        model(data, torch.zeros(1, 2, 3))
    # integer ids of other dtypes are fine and give the same scores as long ids
    same = model.score_all_tails(data, np.array([1], dtype=np.int32), [0])
    assert torch.equal(same, model.score_all_tails(data, torch.tensor([1]), torch.tensor([0])))
    with pytest.raises(TypeError, match="anchors must hold integer ids"):
        UltraLinkPredictor(model).score_ids(kg, torch.tensor([0.5]), torch.tensor([0]))
    known = kg.all_triples()
    ranks = filtered_ranks(model, data, kg.test, known)
    assert ranks.shape == (4,) and int(ranks.min()) >= 1
    with pytest.raises(ValueError, match="known_triples has relation ids outside"):
        filtered_ranks(model, data, kg.test, torch.tensor([[0, 3, 1]]))  # 3 = inverse of r
    with pytest.raises(ValueError, match="known_triples has entity ids outside"):
        filtered_ranks(model, data, kg.test, torch.tensor([[0, 0, 5]]))
    with pytest.raises(ValueError, match="triples has relation ids outside"):
        filtered_ranks(model, data, torch.tensor([[0, 7, 1]]), known)
    with pytest.raises(TypeError, match="triples must hold integer ids"):
        filtered_ranks(model, data, kg.test.double(), known)
    with pytest.raises(TypeError, match="triples must hold integer ids"):
        evaluate(model, kg, triples=kg.test.float())
    with pytest.raises(ValueError, match="triples has relation ids outside"):
        evaluate(model, kg, triples=torch.tensor([[0, 3, 1]]))


def test_predict_tails_filters_known_answers_and_keeps_the_query_entity(kg):
    torch.manual_seed(1)
    ultra = UltraLinkPredictor(Ultra(8, 2))
    raw = ultra.predict_tails(kg, "a", "r", filtered=False)
    assert sorted(raw["entity"]) == sorted(kg.entities)
    filt = ultra.predict_tails(kg, "a", "r")
    # known answers of (a, r, ?): b (train) and c (test); the query entity a stays a candidate
    assert sorted(filt["entity"]) == ["a", "d", "e"]
    # the same scores, only the known answers removed, order kept
    assert filt["entity"].tolist() == [e for e in raw["entity"] if e not in ("b", "c")]
    lookup = dict(zip(raw["entity"], raw["score"]))
    assert filt["score"].tolist() == [lookup[e] for e in filt["entity"]]
    # a reflexive known fact (e, r, e) filters the query entity like any other answer
    assert "e" not in ultra.predict_tails(kg, "e", "r")["entity"].tolist()
    assert "e" in ultra.predict_tails(kg, "e", "r", filtered=False)["entity"].tolist()
    # a user-given filter: only (a, r, b) known
    only_b = ultra.predict_tails(kg, "a", "r", known_triples=torch.tensor([[0, 0, 1]]))
    assert sorted(only_b["entity"]) == ["a", "c", "d", "e"]
    # head queries filter the known heads: (?, r, b) has the known head a
    heads = ultra.predict_heads(kg, "r", "b")
    assert "a" not in heads["entity"].tolist() and len(heads) == 4
    assert len(ultra.predict_tails(kg, "a", "r", top_k=2)) == 2
    with pytest.raises(ValueError, match="known_triples has relation ids outside"):
        ultra.predict_tails(kg, "a", "r", known_triples=torch.tensor([[0, 3, 1]]))
    with pytest.raises(TypeError, match="known_triples must hold integer ids"):
        ultra.predict_tails(kg, "a", "r", known_triples=torch.tensor([[0.0, 0.0, 1.0]]))
    with pytest.raises(ValueError, match="only used with filtered=True"):
        ultra.predict_tails(kg, "a", "r", filtered=False, known_triples=kg.train)
    with pytest.raises(TypeError, match="filtered must be a bool"):
        ultra.predict_tails(kg, "a", "r", filtered="yes")
    with pytest.raises(ValueError, match="top_k"):
        ultra.predict_tails(kg, "a", "r", top_k=True)
    assert isinstance(filt, pd.DataFrame)


class _NanAfter(Ultra):
    """An Ultra whose scores turn NaN from the ``n``-th forward call on."""

    def __init__(self, n: int) -> None:
        super().__init__(8, 2)
        self.n, self.calls = n, 0

    def forward(self, data, batch):
        out = super().forward(data, batch)
        self.calls += 1
        return out * float("nan") if self.calls > self.n else out


def test_non_finite_loss_names_the_step_and_keeps_the_last_good_weights():
    kg = make_rule_kg(40, 2, 2, seed=3)
    cfg = TrainConfig(steps=6, batch_size=4, num_negatives=4)
    torch.manual_seed(0)
    broken = _NanAfter(3)
    with pytest.raises(FloatingPointError, match="loss is nan at step 3"):
        train_ultra(broken, [kg], cfg, seed=5)
    # the weights are those after steps 0-2: the same as a clean 3-step run
    torch.manual_seed(0)
    clean = Ultra(8, 2)
    train_ultra(clean, [kg], TrainConfig(steps=3, batch_size=4, num_negatives=4), seed=5)
    for (name, a), b in zip(broken.state_dict().items(), clean.state_dict().values()):
        assert torch.equal(a, b), name
    nan_model = Ultra(8, 2)
    with torch.no_grad():
        nan_model.entity_model.mlp[2].bias.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match="at step 0"):
        train_ultra(nan_model, [kg], cfg, seed=0)
