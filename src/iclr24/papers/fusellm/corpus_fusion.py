"""FuseLLM's data pipeline over a corpus: align every source's records to the target, fuse.

Official pipeline (``FuseLLM/src/utils/token_alignment.py`` then the trainer's fusion step):
for each text, each source's top-k record is aligned to the target's tokens
(:func:`~.alignment.dtw_align` + :func:`~.alignment.transfer_topk`), the target's own base
record is taken as is (:func:`~.alignment.own_distribution`), and the per-sequence fusion
(:func:`~.fusion.fuse`) picks or weights them by their sequence cross-entropies CE_s.

- :func:`align_records`: one source's records of a corpus carried onto the target's tokens.
- :func:`fuse_corpus`: the fused targets of a corpus, which source MinCE chose per text, and
  each source's coverage (share of target positions that received its distribution).
- :func:`permute_rows`: a null arm for an alignment (not in the paper): the distributions of
  chosen positions permuted among themselves across the corpus, so those positions keep a
  soft target of the same kind but lose the information about their own slot.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .alignment import SparseDist, dtw_align, own_distribution, transfer_topk
from .fusion import fuse
from .records import TopKRecord
from .vocabulary import TokenVocab

__all__ = ["FusedCorpus", "align_records", "fuse_corpus", "permute_rows"]


def align_records(records: Sequence[TopKRecord], src_tok, tgt_tok,
                  target_records: Sequence[TopKRecord],
                  mapping: Mapping[str, str] | None = None,
                  temperature: float = 1.0) -> list[SparseDist]:
    """Each source record aligned to the target record of the same text (same order).

    mapping: None = hard exact-match alignment, a vocabulary mapping = soft (MinED).
    """
    src_tok, tgt_tok = TokenVocab.of(src_tok), TokenVocab.of(tgt_tok)
    if len(records) != len(target_records):
        raise ValueError(f"{len(records)} source records for {len(target_records)} target "
                         "records: one per text on both sides")
    out = []
    for i, (rec, tgt) in enumerate(zip(records, target_records)):
        if rec.text != tgt.text:
            raise ValueError(f"records[{i}] is of another text than target_records[{i}]")
        alignment = dtw_align(src_tok.tokens(rec.token_ids), tgt_tok.tokens(tgt.token_ids))
        out.append(transfer_topk(rec, alignment, src_tok, tgt_tok, tgt.token_ids, mapping,
                                 temperature))
    return out


@dataclass
class FusedCorpus:
    """fused[i]: the fused target of text i; chosen[i]: index of the source MinCE picked
    (0 = the target's base model when included); coverage[s]: share of target positions
    that source s's aligned distribution covers."""

    fused: list[SparseDist]
    chosen: np.ndarray
    coverage: list[float]


def fuse_corpus(target_records: Sequence[TopKRecord],
                aligned_sources: Sequence[Sequence[SparseDist]],
                source_records: Sequence[Sequence[TopKRecord]], method: str = "min_ce",
                weights: str = "official", include_target: bool = True,
                temperature: float = 1.0) -> FusedCorpus:
    """Fuse per text the target's own distribution (if ``include_target``) and each source's
    aligned one, selected/weighted by the records' ``seq_ce``."""
    n = len(target_records)
    if len(aligned_sources) != len(source_records):
        raise ValueError("aligned_sources and source_records need one entry per source")
    for s, (al, rec) in enumerate(zip(aligned_sources, source_records)):
        if len(al) != n or len(rec) != n:
            raise ValueError(f"source {s} covers {len(al)}/{len(rec)} texts, the target {n}")
    if not include_target and not aligned_sources:
        raise ValueError("nothing to fuse: no sources and include_target=False")
    own = [own_distribution(r, temperature) for r in target_records] if include_target else []
    fused, chosen = [], []
    for i in range(n):
        dists = ([own[i]] if include_target else []) + [al[i] for al in aligned_sources]
        ces = ([target_records[i].seq_ce] if include_target else []) + \
              [rec[i].seq_ce for rec in source_records]
        fused.append(fuse(dists, ces, method, weights))
        chosen.append(int(np.argmin(ces)))
    coverage = [float(np.mean(np.concatenate([d.transferred for d in al]))) if n else 0.0
                for al in aligned_sources]
    return FusedCorpus(fused, np.asarray(chosen), coverage)


def permute_rows(dists: Sequence[SparseDist], where: Sequence[np.ndarray],
                 seed: int) -> list[SparseDist]:
    """The rows of ``dists`` at the positions marked by ``where`` permuted among those
    positions, across all texts (a seeded uniform permutation); every other row, and every
    ``transferred`` flag, unchanged.

    dists: one :class:`SparseDist` per text; where: one (T_i,) bool mask per text; seed: the
    permutation's seed. Returns new SparseDists (rows padded to each text's longest)."""
    dists = list(dists)
    masks = [np.asarray(w) for w in where]
    if len(masks) != len(dists):
        raise ValueError(f"where has {len(masks)} masks for {len(dists)} distributions")
    for i, (d, w) in enumerate(zip(dists, masks)):
        if not isinstance(d, SparseDist):
            raise TypeError(f"dists[{i}] must be a SparseDist, got {type(d).__name__}")
        if w.dtype != bool or w.shape != (len(d),):
            raise ValueError(f"where[{i}] must be a bool mask of shape ({len(d)},), got "
                             f"{w.dtype} {w.shape}")
    slots = [(i, t) for i, w in enumerate(masks) for t in np.flatnonzero(w).tolist()]
    order = np.random.default_rng(seed).permutation(len(slots))
    moved = {slot: slots[j] for slot, j in zip(slots, order)}  # slot <- row of slot j
    out = []
    for i, d in enumerate(dists):
        rows = []
        for t in range(len(d)):
            src_i, src_t = moved.get((i, t), (i, t))
            rows.append((dists[src_i].ids[src_t], dists[src_i].probs[src_t]))
        out.append(SparseDist.from_rows(rows, d.transferred))
    return out
