"""Filtered ranking evaluation for link prediction (MRR, Hits@k, both directions).

For a test fact ``(h, r, t)`` a model is asked two queries: the tail query ``(h, r, ?)`` and the
head query ``(?, r, t)``, which is written as the tail query ``(t, r + |R|, ?)`` of the inverse
relation. The *filtered* rank of the right answer counts only candidates that are not known
answers of the same query (Bordes et al., 2013): every fact of train + valid + test is removed
from the candidate list except the target itself.

Ties: the default ``"pessimistic"`` rank is ``1 + #{non-answer candidates with score >= the
target's}`` (what the ULTRA/NBFNet code computes); ``"optimistic"`` counts ``>`` only. Their
mean is the "realistic" rank of pykeen.

    MRR = mean(1 / rank),  Hits@k = mean(rank <= k),  over the 2N queries of N facts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

__all__ = ["KnownAnswers", "ScoreFn", "evaluate_link_prediction", "filtered_ranks", "rank_metrics"]

# score_fn(anchors (B,), relations (B,) in [0, 2|R|)) -> scores (B, num_entities)
ScoreFn = Callable[[torch.Tensor, torch.Tensor], torch.Tensor]


class KnownAnswers:
    """Index of the true answers of every query ``(anchor, relation)`` in both directions.

    triples: (N, 3) (head, relation, tail) ids; ``(h, r, t)`` makes ``t`` an answer of
    ``(h, r)`` and ``h`` an answer of ``(t, r + num_relations)``.
    """

    def __init__(self, triples: torch.Tensor, num_entities: int, num_relations: int) -> None:
        triples = torch.as_tensor(triples, dtype=torch.long)
        if triples.numel() and (triples.dim() != 2 or triples.shape[1] != 3):
            raise ValueError(f"triples must have shape (N, 3); got {tuple(triples.shape)}")
        if num_entities < 1 or num_relations < 1:
            raise ValueError("num_entities and num_relations must be >= 1; got "
                             f"{num_entities}, {num_relations}")
        triples = triples.reshape(-1, 3)
        self.num_entities = int(num_entities)
        self.num_relations = int(num_relations)
        h, r, t = triples.t()
        anchors = torch.cat([h, t])
        rels = torch.cat([r, r + num_relations])
        answers = torch.cat([t, h])
        keys = anchors * (2 * num_relations) + rels
        # unique (key, answer) pairs, sorted by key, so a query is a contiguous slice
        pair = torch.unique(keys * num_entities + answers)
        self._keys = pair // num_entities
        self._answers = pair % num_entities

    def mask(self, anchors: torch.Tensor, relations: torch.Tensor) -> torch.Tensor:
        """Boolean (B, num_entities): True where the entity is a known answer of the query."""
        anchors = torch.as_tensor(anchors, dtype=torch.long)
        relations = torch.as_tensor(relations, dtype=torch.long)
        device = anchors.device
        keys, answers = self._keys.to(device), self._answers.to(device)
        q = anchors * (2 * self.num_relations) + relations
        start = torch.searchsorted(keys, q, right=False)
        end = torch.searchsorted(keys, q, right=True)
        counts = end - start
        out = torch.zeros(len(q), self.num_entities, dtype=torch.bool, device=device)
        total = int(counts.sum())
        if total:
            rows = torch.repeat_interleave(torch.arange(len(q), device=device), counts)
            first = torch.repeat_interleave(start - (torch.cumsum(counts, 0) - counts), counts)
            out[rows, answers[torch.arange(total, device=device) + first]] = True
        return out


def filtered_ranks(score_fn: ScoreFn, triples: torch.Tensor, known: KnownAnswers, *,
                   batch_size: int = 64, ties: str = "pessimistic") -> torch.Tensor:
    """Filtered ranks of ``triples`` in both directions.

    score_fn: ``(anchors (B,), relations (B,)) -> (B, num_entities)`` scores of every candidate
        answer; relation ids ``>= |R|`` are inverse (head) queries.
    triples: (N, 3) test facts. known: every true fact (usually train + valid + test).
    Returns a LongTensor (2N,): the N tail-query ranks, then the N head-query ranks.
    """
    if ties not in ("pessimistic", "optimistic"):
        raise ValueError(f"ties must be 'pessimistic' or 'optimistic'; got {ties!r}")
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1; got {batch_size}")
    triples = torch.as_tensor(triples, dtype=torch.long).reshape(-1, 3)
    if len(triples) == 0:
        raise ValueError("triples is empty: nothing to rank")
    h, r, t = triples.t()
    anchors = torch.cat([h, t])
    rels = torch.cat([r, r + known.num_relations])
    targets = torch.cat([t, h])
    ranks = []
    for lo in range(0, len(anchors), batch_size):
        a, q, y = (x[lo:lo + batch_size] for x in (anchors, rels, targets))
        scores = score_fn(a, q)
        if scores.shape != (len(a), known.num_entities):
            raise ValueError(f"score_fn must return shape ({len(a)}, {known.num_entities}); got "
                             f"{tuple(scores.shape)}")
        if not torch.isfinite(scores).all():
            raise ValueError("score_fn returned non-finite scores")
        y = y.to(scores.device)
        target_score = scores.gather(1, y[:, None])
        answers = known.mask(a.to(scores.device), q.to(scores.device))
        answers[torch.arange(len(a), device=scores.device), y] = True  # target counted by the +1
        better = scores >= target_score if ties == "pessimistic" else scores > target_score
        ranks.append(1 + (better & ~answers).sum(dim=1))
    return torch.cat(ranks).cpu()


def rank_metrics(ranks: torch.Tensor, hits_at: Sequence[int] = (1, 3, 10)) -> dict[str, float]:
    """``{"mrr", "hits@1", "hits@3", "hits@10"}`` from ranks (>= 1)."""
    ranks = torch.as_tensor(ranks).double().flatten()
    if ranks.numel() == 0:
        raise ValueError("ranks is empty")
    if bool((ranks < 1).any()):
        raise ValueError("ranks must be >= 1")
    out = {"mrr": float((1.0 / ranks).mean())}
    for k in hits_at:
        out[f"hits@{k}"] = float((ranks <= k).double().mean())
    return out


def evaluate_link_prediction(score_fn: ScoreFn, graph, split: str = "test", *,
                             triples: torch.Tensor | None = None, batch_size: int = 64,
                             ties: str = "pessimistic") -> dict[str, float]:
    """Filtered MRR / Hits@1,3,10 of ``score_fn`` on a :class:`KnowledgeGraph` split.

    The filter is every fact of the graph (train + valid + test). ``triples`` overrides the
    split (e.g. a fixed subsample). Also returns ``mrr_tail`` and ``mrr_head`` per direction.
    """
    from .triples import KnowledgeGraph

    if not isinstance(graph, KnowledgeGraph):
        raise TypeError(f"graph must be a KnowledgeGraph, got {type(graph).__name__}")
    facts = graph.split(split) if triples is None else torch.as_tensor(triples).reshape(-1, 3)
    if len(facts) == 0:
        raise ValueError(f"split {split!r} of graph {graph.name!r} is empty: nothing to evaluate")
    known = KnownAnswers(graph.all_triples(), graph.num_entities, graph.num_relations)
    ranks = filtered_ranks(score_fn, facts, known, batch_size=batch_size, ties=ties)
    out = rank_metrics(ranks)
    n = len(facts)
    out["mrr_tail"] = rank_metrics(ranks[:n])["mrr"]
    out["mrr_head"] = rank_metrics(ranks[n:])["mrr"]
    return out
