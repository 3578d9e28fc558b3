"""Step 2 of FuseLLM: align a source's tokens to the target's and carry its top-k across.

FuseLLM (Wan et al., ICLR 2024, Sec. 3.3 and App. A; official ``dtw`` and
``transform_step_logits`` in ``FuseLLM/src/utils/others.py``) aligns, per text, the source
token sequence to the target token sequence by dynamic time warping whose cost is the edit
distance between token strings (markers removed):

    D[i, j] = c(s_i, t_j) + min(D[i-1, j], D[i, j-1], D[i-1, j-1]),   D[0, 0] = c(s_0, t_0)

and backtracks from (n-1, m-1) preferring the diagonal, then a source step, then a target step
(the official tie order). A target position mapped to exactly one source position whose token
matches ("hard": the same string; "soft"/MinED: also through the vocabulary mapping) receives
the source's top-k list, each id translated to a target id (dropped if absent from the target
vocabulary, duplicates keep their first = highest logit) and turned into a distribution by a
softmax over the kept logits at teacher temperature 1.0 (renormalised over what remains). Every
other position (a mismatch, or one target token covering several source tokens) gets a one-hot
on the target's own token.

How this file maps to it.
- :func:`dtw_align` -> target position -> list of source positions (official
  ``mappings_series_2``).
- :func:`transfer_topk` -> :class:`SparseDist` on the target's positions and vocabulary;
  ``transferred`` marks the positions that received a source distribution (the alignment's
  coverage).
- :func:`own_distribution`: the target's base model is also a source, with no alignment.

Deviation from the official code (said in the spec's pitfalls). The official code compares the
*input* token at position i and copies the logits computed there, which predict token i+1,
while its one-hot fallback puts the mass on token i itself (an off-by-one). Here row i is the
distribution *of* token i (see :mod:`.records`) and the match is tested on that predicted token:
a transferred row then always describes the same slot of the text, and the one-hot fallback is
the token the row actually predicts. The official special case for a missing leading marker on
the first token is kept.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import editdistance
import numpy as np

from .records import TopKRecord
from .vocabulary import BYTE_LEVEL_MARKER, SENTENCEPIECE_MARKER, TokenVocab, token_edit_distance

__all__ = ["SparseDist", "dtw_align", "own_distribution", "transfer_topk"]


@dataclass(frozen=True)
class SparseDist:
    """Per-position sparse distributions over a target vocabulary.

    ids: (T, K) int64 target ids; probs: (T, K) float32, rows sum to 1 (padding entries have
    probability 0 and id 0). transferred: (T,) bool, True where the row came from a model's
    distribution rather than the one-hot fallback.
    """

    ids: np.ndarray
    probs: np.ndarray
    transferred: np.ndarray

    def __post_init__(self) -> None:
        ids = np.asarray(self.ids, dtype=np.int64)
        probs = np.asarray(self.probs, dtype=np.float32)
        tr = np.asarray(self.transferred, dtype=bool)
        if ids.ndim != 2 or ids.shape != probs.shape:
            raise ValueError(f"ids and probs must both be (T, K), got {ids.shape} and "
                             f"{probs.shape}")
        if tr.shape != (ids.shape[0],):
            raise ValueError(f"transferred must be (T,) = ({ids.shape[0]},), got {tr.shape}")
        if (probs < 0).any() or not np.allclose(probs.sum(1), 1.0, atol=1e-4):
            raise ValueError("probs must be non-negative rows summing to 1")
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "probs", probs)
        object.__setattr__(self, "transferred", tr)

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    @property
    def coverage(self) -> float:
        """Share of positions that received a (non-one-hot) model distribution."""
        return float(self.transferred.mean()) if len(self) else 0.0

    def dense(self, vocab_size: int) -> np.ndarray:
        """(T, vocab_size) float32: the rows scattered into the full vocabulary."""
        if int(self.ids.max(initial=0)) >= vocab_size:
            raise ValueError(f"ids reach {int(self.ids.max())}, beyond vocab_size={vocab_size}")
        out = np.zeros((len(self), vocab_size), dtype=np.float32)
        rows = np.repeat(np.arange(len(self)), self.ids.shape[1])
        np.add.at(out, (rows, self.ids.reshape(-1)), self.probs.reshape(-1))
        return out

    @classmethod
    def one_hot(cls, target_ids: Sequence[int]) -> SparseDist:
        ids = np.asarray(list(target_ids), dtype=np.int64)[:, None]
        return cls(ids, np.ones_like(ids, dtype=np.float32), np.zeros(ids.shape[0], bool))

    @classmethod
    def from_rows(cls, rows: Sequence[tuple[Sequence[int], Sequence[float]]],
                  transferred: Sequence[bool]) -> SparseDist:
        """Rows of (ids, probabilities) of varying length, padded to the longest."""
        k = max((len(r[0]) for r in rows), default=1)
        ids = np.zeros((len(rows), max(k, 1)), dtype=np.int64)
        probs = np.zeros((len(rows), max(k, 1)), dtype=np.float32)
        for i, (r_ids, r_p) in enumerate(rows):
            ids[i, :len(r_ids)] = r_ids
            probs[i, :len(r_p)] = r_p
        return cls(ids, probs, np.asarray(transferred, dtype=bool))


def _softmax(logits: np.ndarray, temperature: float) -> np.ndarray:
    z = np.asarray(logits, dtype=np.float64) / temperature
    p = np.exp(z - z.max())
    return (p / p.sum()).astype(np.float32)


def _check_temperature(temperature: float) -> float:
    if isinstance(temperature, bool) or not isinstance(temperature, (int, float)) \
            or not temperature > 0:
        raise ValueError(f"temperature must be a number > 0, got {temperature!r}")
    return float(temperature)


def own_distribution(record: TopKRecord, temperature: float = 1.0) -> SparseDist:
    """The target base model's own top-k as a :class:`SparseDist` (no alignment needed): a
    softmax over each row's kept logits."""
    if not isinstance(record, TopKRecord):
        raise TypeError(f"record must be a TopKRecord, got {type(record).__name__}")
    temperature = _check_temperature(temperature)
    z = record.topk_logits.astype(np.float64) / temperature
    p = np.exp(z - z.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return SparseDist(record.topk_ids, p.astype(np.float32), np.ones(len(record), bool))


def _is_default_cost(cost: Callable) -> bool:
    return cost is token_edit_distance


def dtw_align(src_tokens: Sequence[str], tgt_tokens: Sequence[str],
              cost: Callable[[str, str], float] = token_edit_distance) -> list[list[int]]:
    """DTW alignment of two token sequences: for each target position, the source positions
    mapped to it (ascending).

    src_tokens, tgt_tokens: token strings (non-empty). cost(src_token, tgt_token) >= 0; the
    default is :func:`token_edit_distance` (Levenshtein with "▁"/"Ġ" stripped). Every position
    of each side is mapped to at least one of the other; identical sequences give the identity.
    """
    for name, seq in (("src_tokens", src_tokens), ("tgt_tokens", tgt_tokens)):
        if isinstance(seq, str):
            raise TypeError(f"{name} must be a sequence of token strings, not one str")
        if len(seq) == 0:
            raise ValueError(f"{name} must hold at least one token")
        for t in seq:
            if not isinstance(t, str):
                raise TypeError(f"{name} must hold str tokens, got {type(t).__name__}")
    if not callable(cost):
        raise TypeError(f"cost must be callable(src_token, tgt_token), got {cost!r}")
    n, m = len(src_tokens), len(tgt_tokens)
    if _is_default_cost(cost):
        a = [s.replace(SENTENCEPIECE_MARKER, "").replace(BYTE_LEVEL_MARKER, "")
             for s in src_tokens]
        b = [t.replace(SENTENCEPIECE_MARKER, "").replace(BYTE_LEVEL_MARKER, "")
             for t in tgt_tokens]
        c = [[editdistance.eval(x, y) for y in b] for x in a]
    else:
        c = [[float(cost(x, y)) for y in tgt_tokens] for x in src_tokens]
    inf = float("inf")
    # D[i+1][j+1] = c(i, j) + min(D[i][j+1], D[i+1][j], D[i][j]); D[0][0] = 0, borders inf
    d = [[inf] * (m + 1) for _ in range(n + 1)]
    d[0][0] = 0.0
    for i in range(n):
        ci, prev, cur = c[i], d[i], d[i + 1]
        for j in range(m):
            best = prev[j + 1]
            best = min(best, cur[j])
            best = min(best, prev[j])
            cur[j + 1] = ci[j] + best
    i, j = n - 1, m - 1
    tgt_to_src: list[list[int]] = [[] for _ in range(m)]
    while i > 0 or j > 0:
        tgt_to_src[j].append(i)
        diag = d[i][j] if i > 0 and j > 0 else inf  # D[i-1, j-1] in 0-based cell terms
        up = d[i][j + 1] if i > 0 else inf  # D[i-1, j]: one source step back
        left = d[i + 1][j] if j > 0 else inf  # D[i, j-1]: one target step back
        if diag <= up and diag <= left:
            i, j = i - 1, j - 1
        elif up <= left:
            i -= 1
        else:
            j -= 1
    tgt_to_src[0].append(0)
    return [sorted(set(x)) for x in tgt_to_src]


def transfer_topk(record: TopKRecord, alignment: Sequence[Sequence[int]], src_tok: TokenVocab,
                  tgt_tok: TokenVocab, target_ids: Sequence[int],
                  mapping: Mapping[str, str] | None = None,
                  temperature: float = 1.0) -> SparseDist:
    """A source record carried onto the target's tokens (FuseLLM's token alignment).

    record: the source's :class:`TopKRecord` of the text (T_src rows).
    alignment: :func:`dtw_align` (source tokens, target tokens): one list per target token.
    src_tok, tgt_tok: the two tokenizers' :class:`TokenVocab` views (or anything
    ``TokenVocab.of`` accepts).
    target_ids: (T_tgt,) the target tokenizer's ids of the same text.
    mapping: ``None`` = hard exact-match alignment; a :func:`build_vocab_mapping` dict =
    soft MinED alignment (the paper's default).
    temperature: teacher temperature of the softmax over the kept logits.
    Returns a :class:`SparseDist` with T_tgt rows.
    """
    if not isinstance(record, TopKRecord):
        raise TypeError(f"record must be a TopKRecord, got {type(record).__name__}")
    src_tok, tgt_tok = TokenVocab.of(src_tok), TokenVocab.of(tgt_tok)
    temperature = _check_temperature(temperature)
    if mapping is not None and not isinstance(mapping, Mapping):
        raise TypeError(f"mapping must be None (hard alignment) or a dict of source -> target "
                        f"token strings, got {type(mapping).__name__}")
    target_ids = [int(t) for t in target_ids]
    if len(alignment) != len(target_ids):
        raise ValueError(f"alignment has {len(alignment)} entries but the text has "
                         f"{len(target_ids)} target tokens: one entry per target token")
    n_src = len(record)
    for i, js in enumerate(alignment):
        if any(not 0 <= int(j) < n_src for j in js):
            raise ValueError(f"alignment[{i}] = {list(js)} points outside the record's "
                             f"{n_src} source positions (a record of another text?)")
    src_strings = src_tok.tokens(record.token_ids)
    tgt_strings = tgt_tok.tokens(target_ids)
    vocab = tgt_tok.token_to_id
    ms, mt = src_tok.marker, tgt_tok.marker

    def translate(s: str) -> str:
        return s.replace(ms, mt) if ms and ms != mt else s

    rows, transferred = [], []
    for i, js in enumerate(alignment):
        kept_ids: list[int] = []
        kept_logits: list[float] = []
        if len(js) == 1:
            j = int(js[0])
            s, t = src_strings[j], tgt_strings[i]
            s_t = translate(s)
            if i == 0 and mt and t.startswith(mt) and not s_t.startswith(mt):
                s_t = mt + s_t  # the official special case: a missing leading marker
            match = s_t == t or (mapping is not None and mapping.get(s) == t)
            if match:
                for sid, logit in zip(record.topk_ids[j], record.topk_logits[j]):
                    st = src_tok.id_to_token[int(sid)]
                    mapped = mapping.get(st, translate(st)) if mapping is not None \
                        else translate(st)
                    tid = vocab.get(mapped)
                    if tid is not None and tid not in kept_ids:  # first = highest logit
                        kept_ids.append(tid)
                        kept_logits.append(float(logit))
        if kept_ids:
            rows.append((kept_ids, _softmax(np.asarray(kept_logits), temperature)))
            transferred.append(True)
        else:
            rows.append(([target_ids[i]], [1.0]))  # one-hot on the token this row predicts
            transferred.append(False)
    return SparseDist.from_rows(rows, transferred)
