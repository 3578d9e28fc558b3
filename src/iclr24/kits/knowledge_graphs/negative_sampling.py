"""Negative sampling for link-prediction training.

``sample_negatives`` turns a batch of positive facts into a ``(B, 1 + K, 3)`` tensor of
(head, relation, tail) triples whose first column is the positive. As in NBFNet/ULTRA, the
first ``B // 2`` rows corrupt the tail and the remaining rows corrupt the head, so every row
shares one anchor and one relation (a single message-passing run scores the whole row).

"Strict" sampling (pass ``known=``) draws corruptions uniformly from the entities that are *not*
true answers of the row's query, so no sampled negative is a known fact.
"""

from __future__ import annotations

import torch

from .filtered_ranking import KnownAnswers

__all__ = ["sample_negatives", "tail_corrupted_rows"]


def sample_negatives(triples: torch.Tensor, num_entities: int, num_negatives: int, *,
                     known: KnownAnswers | None = None,
                     generator: torch.Generator | None = None) -> torch.Tensor:
    """Corrupt a batch of positives.

    triples: (B, 3) positive (head, relation, tail) ids. Returns (B, 1 + K, 3): column 0 is the
    positive; rows ``[0, B // 2)`` vary the tail, rows ``[B // 2, B)`` vary the head.
    known: if given, negatives are drawn only among non-answers of each query (strict).
    """
    triples = torch.as_tensor(triples, dtype=torch.long)
    if triples.dim() != 2 or triples.shape[1] != 3:
        raise ValueError(f"triples must have shape (B, 3); got {tuple(triples.shape)}")
    if num_entities < 2:
        raise ValueError(f"num_entities must be >= 2 to sample negatives; got {num_entities}")
    if num_negatives < 1:
        raise ValueError(f"num_negatives must be >= 1; got {num_negatives}")
    b = len(triples)
    device = triples.device
    h, r, t = triples.t()
    n_tail = b // 2
    is_tail = torch.arange(b, device=device) < n_tail
    # every row as a tail query: (anchor, relation) -> corrupted answer
    anchors = torch.where(is_tail, h, t)
    rels = torch.where(is_tail, r, r + (known.num_relations if known is not None else 0))
    targets = torch.where(is_tail, t, h)
    if known is not None:
        allowed = ~known.mask(anchors, rels)
    else:
        allowed = torch.ones(b, num_entities, dtype=torch.bool, device=device)
    allowed[torch.arange(b, device=device), targets] = False
    # a query whose every entity is an answer has no strict negative: fall back to any non-target
    empty = ~allowed.any(dim=1)
    if bool(empty.any()):
        allowed[empty] = True
        allowed[empty, targets[empty]] = False
    weights = allowed.float()
    gen_device = generator.device if generator is not None else device
    neg = torch.multinomial(weights.to(gen_device), num_negatives, replacement=True,
                            generator=generator).to(device)
    out = triples[:, None, :].repeat(1, 1 + num_negatives, 1)
    out[:n_tail, 1:, 2] = neg[:n_tail]
    out[n_tail:, 1:, 0] = neg[n_tail:]
    return out


def tail_corrupted_rows(batch: torch.Tensor) -> torch.Tensor:
    """Boolean (B,): rows of a ``(B, 1+K, 3)`` batch whose heads are all equal (tail corruption)."""
    return (batch[:, :, 0] == batch[:, :1, 0]).all(dim=1)
