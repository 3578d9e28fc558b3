"""Token strings of any tokenizer, token edit distance and FuseLLM's vocabulary mapping.

FuseLLM (Wan et al., ICLR 2024, Sec. 3.3 "Token alignment" and App. A) compares tokens of two
tokenizers *as strings*: each tokenizer's word-boundary marker ("▁" for SentencePiece, "Ġ" for
byte-level BPE) is removed or translated, and the Levenshtein distance between the strings is
the cost of the alignment. Its "MinED" vocabulary mapping sends every source-vocabulary token
to the target-vocabulary token at minimum edit distance (official code: ``find_best_mapping``
in ``FuseLLM/src/utils/vocab_mapping.py``: the marker is translated first; a token present in
the target vocabulary maps to itself; otherwise the first target token with the smallest
distance wins).

How this file maps to it.
- :class:`TokenVocab`: one view of a tokenizer (the kit's byte, BPE and Unigram tokenizers,
  SmolLM2's or any Hugging Face tokenizer, a raw ``tokenizers.Tokenizer``): ``encode(text)``,
  ``tokens(ids)`` (the strings the alignment compares), ``token_to_id``, ``marker``. Byte-level
  tokens are spelt with GPT-2's byte-to-unicode table, so a byte model, the kit's byte-level
  BPE/Unigram tokenizers and SmolLM2 share one symbol space (a space is "Ġ").
- :func:`token_edit_distance`: the DTW cost (markers stripped, ``editdistance``'s C Levenshtein).
- :func:`build_vocab_mapping`: the MinED vocabulary mapping, exact (ties broken by target id,
  as the official ``min`` over the vocabulary list) and fast through a length-bucket search:
  ``|len(a) - len(b)|`` bounds the distance from below, so buckets beyond the best distance are
  never scored.

Scale: the paper maps the 50k/32k vocabularies of MPT/OpenLLaMA onto Llama-2's 32k; here the
vocabularies have 256-49,152 entries (SmolLM2's is the large one).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import editdistance

__all__ = [
    "BYTE_LEVEL_MARKER",
    "SENTENCEPIECE_MARKER",
    "TokenVocab",
    "as_vocab",
    "build_vocab_mapping",
    "byte_level_alphabet",
    "token_edit_distance",
]

SENTENCEPIECE_MARKER = "\u2581"  # "▁"
BYTE_LEVEL_MARKER = "\u0120"  # "Ġ"


@functools.cache
def byte_level_alphabet() -> tuple[str, ...]:
    """GPT-2's reversible byte -> printable-unicode table (entry b spells byte b; b' ' = 'Ġ')."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    table = dict(zip(bs, cs))
    return tuple(chr(table[b]) for b in range(256))


@dataclass(frozen=True)
class TokenVocab:
    """A tokenizer seen as strings: what FuseLLM's alignment needs.

    id_to_token: the string of every id (index = id).
    marker: the word-boundary marker of this tokenizer ("Ġ", "▁" or "" for none).
    encode_fn: text (str) -> token ids.
    """

    id_to_token: tuple[str, ...]
    marker: str
    encode_fn: Callable[[str], list[int]] = field(repr=False, compare=False)
    name: str = "tokenizer"

    def __post_init__(self) -> None:
        if not isinstance(self.marker, str):
            raise TypeError(f"marker must be a str, got {type(self.marker).__name__}")
        if not self.id_to_token:
            raise ValueError("id_to_token must hold at least one token")

    @property
    def size(self) -> int:
        return len(self.id_to_token)

    @functools.cached_property
    def token_to_id(self) -> dict[str, int]:
        """String -> id (the first id of a string spelt twice)."""
        out: dict[str, int] = {}
        for i, t in enumerate(self.id_to_token):
            out.setdefault(t, i)
        return out

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return [int(i) for i in self.encode_fn(text)]

    def tokens(self, ids: Sequence[int]) -> list[str]:
        """The strings of ``ids``."""
        n = self.size
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < n:
                raise ValueError(f"token id {i} outside [0, {n}) of {self.name}")
            out.append(self.id_to_token[i])
        return out

    @classmethod
    def of(cls, tokenizer: Any, marker: str | None = None) -> TokenVocab:
        """Build the view of ``tokenizer``: a :class:`TokenVocab`, the kit's ``ByteTokenizer``
        / ``SubwordTokenizer`` / ``HFTokenizer``, a Hugging Face tokenizer or a raw
        ``tokenizers.Tokenizer``. ``marker=None`` detects it ("▁" if SentencePiece-style tokens
        dominate, else "Ġ")."""
        if isinstance(tokenizer, TokenVocab):
            if marker is None or marker == tokenizer.marker:
                return tokenizer
            return cls(tokenizer.id_to_token, marker, tokenizer.encode_fn, tokenizer.name)
        from iclr24.kits.language_models import ByteTokenizer, HFTokenizer, SubwordTokenizer

        if isinstance(tokenizer, ByteTokenizer):
            return cls(byte_level_alphabet(), BYTE_LEVEL_MARKER if marker is None else marker,
                       lambda text: list(text.encode("utf-8")), "bytes")
        if isinstance(tokenizer, SubwordTokenizer):
            tk = tokenizer.tk
            strings = tuple(tk.id_to_token(i) or "" for i in range(tokenizer.vocab_size))
            return cls(strings, BYTE_LEVEL_MARKER if marker is None else marker,
                       tokenizer.encode, f"{tokenizer.kind}-{tokenizer.vocab_size}")
        if isinstance(tokenizer, HFTokenizer):
            tokenizer = tokenizer.hf
        if hasattr(tokenizer, "convert_ids_to_tokens") and hasattr(tokenizer, "__len__"):
            n = len(tokenizer)
            strings = tuple(t or "" for t in tokenizer.convert_ids_to_tokens(list(range(n))))
            hf = tokenizer
            return cls(strings, _detect_marker(strings) if marker is None else marker,
                       lambda text: list(hf(text, add_special_tokens=False)["input_ids"]),
                       getattr(tokenizer, "name_or_path", "hf-tokenizer") or "hf-tokenizer")
        if hasattr(tokenizer, "id_to_token") and hasattr(tokenizer, "get_vocab_size"):
            n = int(tokenizer.get_vocab_size(with_added_tokens=True))
            strings = tuple(tokenizer.id_to_token(i) or "" for i in range(n))
            raw = tokenizer
            return cls(strings, _detect_marker(strings) if marker is None else marker,
                       lambda text: list(raw.encode(text, add_special_tokens=False).ids),
                       "tokenizers")
        raise TypeError("tokenizer must be a TokenVocab, a kit ByteTokenizer/SubwordTokenizer/"
                        "HFTokenizer, a Hugging Face tokenizer or a tokenizers.Tokenizer; got "
                        f"{type(tokenizer).__name__}")


def _detect_marker(strings: Sequence[str]) -> str:
    sp = sum(s.startswith(SENTENCEPIECE_MARKER) for s in strings)
    bl = sum(s.startswith(BYTE_LEVEL_MARKER) for s in strings)
    return SENTENCEPIECE_MARKER if sp > bl else BYTE_LEVEL_MARKER


def as_vocab(tokenizer: Any) -> TokenVocab:
    """:meth:`TokenVocab.of` with the marker detected."""
    return TokenVocab.of(tokenizer)


def token_edit_distance(a: str, b: str,
                        markers: Sequence[str] = (SENTENCEPIECE_MARKER, BYTE_LEVEL_MARKER)
                        ) -> int:
    """Levenshtein distance of two token strings after removing word-boundary ``markers``
    (FuseLLM's DTW cost, ``dist_fn`` in ``FuseLLM/src/utils/others.py``)."""
    if not isinstance(a, str) or not isinstance(b, str):
        raise TypeError(f"tokens must be str, got {type(a).__name__} and {type(b).__name__}")
    for m in markers:
        if m:
            a, b = a.replace(m, ""), b.replace(m, "")
    return int(editdistance.eval(a, b))


def _strings(vocab: Iterable[str] | TokenVocab, name: str) -> tuple[list[str], str | None]:
    if isinstance(vocab, TokenVocab):
        return list(vocab.id_to_token), vocab.marker
    if isinstance(vocab, str):
        raise TypeError(f"{name} must be an iterable of token strings, not one str")
    if isinstance(vocab, dict):  # a str -> id vocabulary: order by id
        items = sorted(vocab.items(), key=lambda kv: kv[1])
        out = [k for k, _ in items]
    else:
        out = list(vocab)
    for t in out:
        if not isinstance(t, str):
            raise TypeError(f"{name} must hold str tokens, got {type(t).__name__}")
    if not out:
        raise ValueError(f"{name} must hold at least one token")
    return out, None


def build_vocab_mapping(src_vocab: Iterable[str] | TokenVocab,
                        tgt_vocab: Iterable[str] | TokenVocab,
                        marker_src: str | None = None,
                        marker_tgt: str | None = None) -> dict[str, str]:
    """MinED vocabulary mapping: every source token -> the closest target-vocabulary token.

    src_vocab / tgt_vocab: token strings (a list in id order, a str->id dict, or a
    :class:`TokenVocab`). The source marker is translated to the target's first
    (``s.replace(marker_src, marker_tgt)``); a translated token in the target vocabulary maps
    to itself, any other to argmin_t Levenshtein(s', t) (markers kept, as in the official
    code), ties to the lowest target id. Markers default to the vocabularies' own (a
    ``TokenVocab``) or to "▁" (source) and "Ġ" (target).

    Returns: {source token string: target token string}.
    """
    src, src_marker = _strings(src_vocab, "src_vocab")
    tgt, tgt_marker = _strings(tgt_vocab, "tgt_vocab")
    marker_src = marker_src if marker_src is not None else (src_marker or SENTENCEPIECE_MARKER)
    marker_tgt = marker_tgt if marker_tgt is not None else (tgt_marker or BYTE_LEVEL_MARKER)
    for name, m in (("marker_src", marker_src), ("marker_tgt", marker_tgt)):
        if not isinstance(m, str):
            raise TypeError(f"{name} must be a str, got {type(m).__name__}")
    tgt_set: dict[str, int] = {}
    for i, t in enumerate(tgt):
        tgt_set.setdefault(t, i)
    buckets: dict[int, list[tuple[int, str]]] = {}
    for t, i in tgt_set.items():
        buckets.setdefault(len(t), []).append((i, t))
    lengths = sorted(buckets)
    mapping: dict[str, str] = {}
    for s in src:
        if s in mapping:
            continue
        s2 = s.replace(marker_src, marker_tgt) if marker_src else s
        if s2 in tgt_set:
            mapping[s] = s2
            continue
        best = (len(s2) + max(lengths) + 1, 0, "")
        for length in sorted(lengths, key=lambda n: abs(n - len(s2))):
            if abs(length - len(s2)) > best[0]:
                break
            for i, t in buckets[length]:
                d = editdistance.eval(s2, t)
                if (d, i) < best[:2]:
                    best = (d, i, t)
        mapping[s] = best[2]
    return mapping
