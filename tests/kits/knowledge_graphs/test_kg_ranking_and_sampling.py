"""Filtered ranking, metrics, negative sampling and the PyG DistMult baseline wrapper."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.knowledge_graphs import (
    KGETrainConfig,
    KnowledgeGraph,
    KnownAnswers,
    evaluate_link_prediction,
    filtered_ranks,
    kge_score_fn,
    rank_metrics,
    sample_negatives,
    tail_corrupted_rows,
    train_kge,
)

triples_st = st.lists(st.tuples(st.integers(0, 6), st.integers(0, 2), st.integers(0, 6)),
                      min_size=1, max_size=25)


def _brute_answers(triples, anchor, rel, num_rel):
    out = set()
    for h, r, t in triples:
        if r == rel and h == anchor:
            out.add(t)
        if r + num_rel == rel and t == anchor:
            out.add(h)
    return out


@settings(max_examples=40, deadline=None)
@given(triples_st, st.integers(0, 6), st.integers(0, 5))
def test_known_answers_mask_matches_brute_force(triples, anchor, rel):
    known = KnownAnswers(torch.tensor(triples), 7, 3)
    mask = known.mask(torch.tensor([anchor, anchor]), torch.tensor([rel, (rel + 1) % 6]))
    assert set(mask[0].nonzero().flatten().tolist()) == _brute_answers(triples, anchor, rel, 3)
    assert set(mask[1].nonzero().flatten().tolist()) == _brute_answers(
        triples, anchor, (rel + 1) % 6, 3)


@settings(max_examples=30, deadline=None)
@given(triples_st, st.integers(0, 2**31 - 1))
def test_filtered_ranks_match_brute_force(triples, seed):
    g = torch.Generator().manual_seed(seed)
    table = torch.randint(0, 4, (7, 6, 7), generator=g).float()  # ties on purpose

    def score(anchors, rels):
        return table[anchors, rels]

    known = KnownAnswers(torch.tensor(triples), 7, 3)
    test = torch.tensor(triples[:5])
    for ties in ("pessimistic", "optimistic"):
        ranks = filtered_ranks(score, test, known, batch_size=3, ties=ties)
        expected = []
        for direction in ("tail", "head"):
            for h, r, t in test.tolist():
                a, q, y = (h, r, t) if direction == "tail" else (t, r + 3, h)
                answers = _brute_answers(triples, a, q, 3)
                s = table[a, q]
                better = [bool(s[e] >= s[y]) if ties == "pessimistic" else bool(s[e] > s[y])
                          for e in range(7)]
                expected.append(1 + sum(1 for e in range(7)
                                        if e not in answers and e != y and better[e]))
        assert ranks.tolist() == expected


def test_rank_metrics_closed_form():
    m = rank_metrics(torch.tensor([1, 2, 4, 20]))
    assert m["mrr"] == pytest.approx((1 + 0.5 + 0.25 + 0.05) / 4)
    assert m["hits@1"] == 0.25 and m["hits@3"] == 0.5 and m["hits@10"] == 0.75
    with pytest.raises(ValueError, match="empty"):
        rank_metrics(torch.tensor([]))
    with pytest.raises(ValueError, match=">= 1"):
        rank_metrics(torch.tensor([0, 1]))


def test_perfect_scorer_has_mrr_one_and_errors():
    kg = KnowledgeGraph.from_id_triples([[0, 0, 1], [1, 0, 2], [2, 1, 3]],
                                        test=[[0, 0, 2], [3, 1, 0]], num_entities=4)

    def oracle(anchors, rels):
        return KnownAnswers(kg.all_triples(), 4, 2).mask(anchors, rels).float()

    m = evaluate_link_prediction(oracle, kg)
    assert m["mrr"] == 1.0 and m["mrr_head"] == 1.0
    with pytest.raises(ValueError, match="score_fn must return shape"):
        evaluate_link_prediction(lambda a, r: torch.zeros(len(a), 3), kg)
    with pytest.raises(ValueError, match="non-finite"):
        evaluate_link_prediction(lambda a, r: torch.full((len(a), 4), math.nan), kg)
    with pytest.raises(ValueError, match="valid.*empty"):
        evaluate_link_prediction(oracle, kg, "valid")
    with pytest.raises(ValueError, match="ties"):
        filtered_ranks(oracle, kg.test, KnownAnswers(kg.train, 4, 2), ties="random")


@settings(max_examples=25, deadline=None)
@given(triples_st, st.integers(0, 1000))
def test_strict_negatives_never_known_and_layout(triples, seed):
    triples_t = torch.tensor(triples)
    known = KnownAnswers(triples_t, 7, 3)
    g = torch.Generator().manual_seed(seed)
    batch = sample_negatives(triples_t, 7, 5, known=known, generator=g)
    b = len(triples)
    assert batch.shape == (b, 6, 3)
    assert torch.equal(batch[:, 0], triples_t)
    assert (batch[:, :, 1] == triples_t[:, None, 1]).all()
    n_tail = b // 2
    assert (batch[:n_tail, :, 0] == triples_t[:n_tail, None, 0]).all()
    assert (batch[n_tail:, :, 2] == triples_t[n_tail:, None, 2]).all()
    assert tail_corrupted_rows(batch)[:n_tail].all()
    fact_set = set(map(tuple, triples))
    for i in range(b):
        answers_all_known = len(_brute_answers(
            triples, *((triples[i][0], triples[i][1]) if i < n_tail
                       else (triples[i][2], triples[i][1] + 3)), 3)) == 7
        for h, r, t in batch[i, 1:].tolist():
            assert (h, r, t) != tuple(triples[i])
            if not answers_all_known:
                assert (h, r, t) not in fact_set
    again = sample_negatives(triples_t, 7, 5, known=known,
                             generator=torch.Generator().manual_seed(seed))
    assert torch.equal(batch, again)


def test_negative_sampling_errors():
    t = torch.tensor([[0, 0, 1]])
    with pytest.raises(ValueError, match="num_entities"):
        sample_negatives(t, 1, 3)
    with pytest.raises(ValueError, match="num_negatives"):
        sample_negatives(t, 5, 0)
    with pytest.raises(ValueError, match="shape"):
        sample_negatives(torch.tensor([0, 0, 1]), 5, 2)


def test_distmult_baseline_scores_and_determinism():
    triples = torch.tensor([[0, 0, 1], [1, 0, 2], [2, 1, 3], [3, 1, 0], [0, 1, 2]])
    cfg = KGETrainConfig(dim=8, epochs=3, batch_size=2)
    m1 = train_kge(triples, 4, 2, cfg, seed=3)
    m2 = train_kge(triples, 4, 2, cfg, seed=3)
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        assert torch.equal(p1, p2)
    score = kge_score_fn(m1, 4, 2)
    s = score(torch.tensor([0, 3]), torch.tensor([1, 2]))  # (0, r1, ?) and (?, r0, 3)
    with torch.no_grad():
        assert torch.allclose(s[0], m1(torch.zeros(4, dtype=torch.long), torch.ones(4).long(),
                                       torch.arange(4)))
        assert torch.allclose(s[1], m1(torch.arange(4), torch.zeros(4).long(),
                                       torch.full((4,), 3)))
    with pytest.raises(ValueError, match="config.model"):
        train_kge(triples, 4, 2, KGETrainConfig(model="NoSuchModel"))
    with pytest.raises(ValueError, match="empty"):
        train_kge(torch.empty(0, 3), 4, 2)
