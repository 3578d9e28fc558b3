"""Filtered ranking evaluation of ULTRA (paper Sec. 5: MRR and Hits@k, both directions).

Zero-shot inference is this evaluation with pre-trained weights and no gradient step: message
passing runs on the *target* graph's training (inference) facts, so no weight depends on the
target's vocabulary. The ranking itself is the knowledge-graph kit's (pessimistic ties as in
the official code; the filter is train + valid + test).

A query whose entity or relation never occurs in the training (message-passing) facts has no
edge to propagate from: its score is the same for every candidate or carries no information,
and pessimistic or optimistic ties can make it look perfect. :func:`evaluate` counts such
facts (``n_unseen``), warns about them, and refuses them with ``strict=True``.
"""

from __future__ import annotations

import warnings

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

from .foundation_model import Ultra, as_id_tensor, prepare_graph

__all__ = ["check_triples", "evaluate", "filtered_ranks", "rank_metrics", "ultra_score_fn",
           "unseen_facts"]


def check_triples(triples: torch.Tensor, name: str, num_entities: int,
                  num_relations: int) -> torch.Tensor:
    """(N, 3) integer (head, relation, tail) ids as a LongTensor, checked against the graph:
    float ids raise ``TypeError``; a wrong shape, an entity outside [0, num_entities) or a
    relation outside [0, num_relations) (direct relations) raise ``ValueError`` naming
    ``name``."""
    t = as_id_tensor(triples, name)
    if t.numel() == 0:
        return t.reshape(0, 3)
    if t.dim() != 2 or t.shape[1] != 3:
        raise ValueError(f"{name} must have shape (N, 3); got {tuple(t.shape)}")
    ents, rels = t[:, [0, 2]], t[:, 1]
    if int(ents.min()) < 0 or int(ents.max()) >= num_entities:
        raise ValueError(f"{name} has entity ids outside [0, {num_entities})")
    if int(rels.min()) < 0 or int(rels.max()) >= num_relations:
        raise ValueError(f"{name} has relation ids outside [0, {num_relations}) (direct "
                         "relations; inverses are implicit)")
    return t


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
    num_entities, num_direct = data.num_nodes, data.num_relations // 2
    triples = check_triples(triples, "triples", num_entities, num_direct)
    known_triples = check_triples(known_triples, "known_triples", num_entities, num_direct)
    known = KnownAnswers(known_triples, num_entities, num_direct)
    return _kit_filtered_ranks(ultra_score_fn(model, data), triples, known,
                               batch_size=batch_size)


def unseen_facts(graph: KnowledgeGraph, triples: torch.Tensor) -> torch.Tensor:
    """(N,) bool mask of ``triples`` (N, 3) whose head, relation or tail never occurs in
    ``graph``'s training facts (the graph message passing runs on)."""
    triples = torch.as_tensor(triples).reshape(-1, 3)
    train = graph.train
    ent_seen = torch.zeros(graph.num_entities, dtype=torch.bool)
    ent_seen[train[:, 0]] = True
    ent_seen[train[:, 2]] = True
    rel_seen = torch.zeros(graph.num_relations, dtype=torch.bool)
    rel_seen[train[:, 1]] = True
    return ~(ent_seen[triples[:, 0]] & rel_seen[triples[:, 1]] & ent_seen[triples[:, 2]])


def evaluate(model: Ultra, graph: KnowledgeGraph, split: str = "test", *,
             triples: torch.Tensor | None = None, batch_size: int = 32,
             data: Data | None = None, strict: bool = False) -> dict[str, float]:
    """``{"mrr", "hits@1", "hits@3", "hits@10", "mrr_tail", "mrr_head", "n_unseen"}`` on a
    graph's split.

    Message passing uses the graph's training facts (pass ``data`` to reuse a prepared graph).
    ``n_unseen`` counts evaluated facts with an entity or relation absent from the training
    facts: they are ranked (a warning says how many) unless ``strict=True``, which raises.
    ``triples`` (N, 3) replace the split; float ids raise ``TypeError``, ids outside the graph
    ``ValueError``.
    """
    if not isinstance(model, Ultra):
        raise TypeError(f"model must be an Ultra, got {type(model).__name__}")
    if not isinstance(strict, bool):
        raise TypeError(f"strict must be a bool, got {strict!r}")
    if triples is not None:
        triples = check_triples(triples, "triples", graph.num_entities, graph.num_relations)
    facts = graph.split(split) if triples is None else triples
    n_unseen = int(unseen_facts(graph, facts).sum()) if len(facts) else 0
    if n_unseen:
        message = (f"{n_unseen} of {len(facts)} evaluated facts of graph {graph.name!r} have an "
                   "entity or relation absent from its training facts; ULTRA has no edge to "
                   "propagate from for them, so their ranks carry no information")
        if strict:
            raise ValueError(message + " (strict=True)")
        warnings.warn(message, stacklevel=2)
    data = prepare_graph(graph) if data is None else data
    out = evaluate_link_prediction(ultra_score_fn(model, data), graph, split, triples=triples,
                                   batch_size=batch_size)
    out["n_unseen"] = float(n_unseen)
    return out
