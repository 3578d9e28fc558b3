"""Filtered ranking evaluation of ULTRA (paper Sec. 5: MRR and Hits@k, both directions).

Zero-shot inference is this evaluation with pre-trained weights and no gradient step: message
passing runs on the *target* graph's training (inference) facts, so no weight depends on the
target's vocabulary. The ranking itself is the knowledge-graph kit's (pessimistic ties as in
the official code; the filter is train + valid + test).
"""

from __future__ import annotations

import torch
from torch_geometric.data import Data

from iclr24.kits.knowledge_graphs import (
    KnowledgeGraph,
    KnownAnswers,
    ScoreFn,
    evaluate_link_prediction,
    rank_metrics,
)
from iclr24.kits.knowledge_graphs import filtered_ranks as _kit_filtered_ranks

from .foundation_model import Ultra, prepare_graph

__all__ = ["evaluate", "filtered_ranks", "rank_metrics", "ultra_score_fn"]


def ultra_score_fn(model: Ultra, data: Data) -> ScoreFn:
    """``score_fn(anchors (B,), relations (B,)) -> (B, |V|)`` logits of ``model`` on ``data``."""

    def score(anchors: torch.Tensor, relations: torch.Tensor) -> torch.Tensor:
        was_training = model.training
        model.eval()
        try:
            with torch.no_grad():
                return model.score_all_tails(data, anchors, relations)
        finally:
            model.train(was_training)

    return score


def filtered_ranks(model: Ultra, data: Data, triples: torch.Tensor, known_triples: torch.Tensor,
                   batch_size: int = 32) -> torch.LongTensor:
    """Filtered ranks (2N,) of (N, 3) ``triples`` (tail queries, then head queries).

    data: the prepared message-passing graph (:func:`prepare_graph`); known_triples: every
    known fact used as the filter (train + valid + test).
    """
    known = KnownAnswers(known_triples, data.num_nodes, data.num_relations // 2)
    return _kit_filtered_ranks(ultra_score_fn(model, data), triples, known,
                               batch_size=batch_size)


def evaluate(model: Ultra, graph: KnowledgeGraph, split: str = "test", *,
             triples: torch.Tensor | None = None, batch_size: int = 32,
             data: Data | None = None) -> dict[str, float]:
    """``{"mrr", "hits@1", "hits@3", "hits@10", "mrr_tail", "mrr_head"}`` on a graph's split.

    Message passing uses the graph's training facts (pass ``data`` to reuse a prepared graph).
    """
    if not isinstance(model, Ultra):
        raise TypeError(f"model must be an Ultra, got {type(model).__name__}")
    data = prepare_graph(graph) if data is None else data
    return evaluate_link_prediction(ultra_score_fn(model, data), graph, split, triples=triples,
                                    batch_size=batch_size)
