"""Locating a constraint's tokens in a prompt (SAT Probe, Yuksekgonul et al., ICLR 2024,
arXiv 2309.15098, Sec. 3: "constraint tokens" C of a factual query).

The paper's constraint is an entity string inside the prompt ("the basketball player Michael
Jordan"); its features read attention *to the tokens of that string*. Tokenisation differs with
and without a leading space (" Jordan" vs "Jordan") and a constraint may span many tokens, so
the span is found by character offsets, never by re-tokenising the constraint:

1. the constraint's characters [c0, c1) are its first occurrence in the prompt that is preceded
   by a space (as it appears mid-sentence), else at the very start, else anywhere;
2. its tokens are every prompt token whose character span overlaps [c0, c1) (a byte-level BPE
   token "ĠJordan" carries the space and is included; a token straddling the boundary too).

:func:`token_char_spans` gives each token's character span for the kit's tokenizers (bytes,
subword BPE/Unigram, Hugging Face) and for raw Hugging Face fast tokenizers.
"""

from __future__ import annotations

from typing import Any

from iclr24.kits.language_models.backends import ByteTokenizer

__all__ = ["locate_constraint", "token_char_spans"]


def _byte_spans(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    for i, ch in enumerate(text):
        spans.extend([(i, i + 1)] * len(ch.encode("utf-8")))
    return spans


def token_char_spans(text: str, tokenizer: Any) -> tuple[list[int], list[tuple[int, int]]]:
    """``(ids, spans)``: the token ids of ``text`` (as ``tokenizer.encode`` gives them, no
    special tokens) and each token's ``[start, end)`` character span in ``text``.

    tokenizer: the kit's ``ByteTokenizer`` (one token per UTF-8 byte), ``SubwordTokenizer``
    (``spans``), ``HFTokenizer`` (``.hf``: offset mapping) or a Hugging Face fast tokenizer.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    if hasattr(tokenizer, "spans") and hasattr(tokenizer, "encode"):  # SubwordTokenizer
        ids = list(tokenizer.encode(text))
        return ids, [tuple(s) for s in tokenizer.spans(text)]
    hf = getattr(tokenizer, "hf", tokenizer)
    if callable(hf) and getattr(hf, "is_fast", False):
        enc = hf(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc["input_ids"]), [tuple(s) for s in enc["offset_mapping"]]
    if isinstance(tokenizer, ByteTokenizer):
        ids = list(tokenizer.encode(text.encode("utf-8")))
        return ids, _byte_spans(text)
    raise TypeError("tokenizer must be a ByteTokenizer, SubwordTokenizer, HFTokenizer or a "
                    f"Hugging Face fast tokenizer (character offsets), got "
                    f"{type(tokenizer).__name__}")


def _char_range(prompt: str, constraint: str) -> tuple[int, int]:
    i = prompt.find(" " + constraint)
    if i >= 0:
        return i + 1, i + 1 + len(constraint)
    i = prompt.find(constraint)
    if i < 0:
        raise ValueError(f"constraint {constraint!r} does not occur in the prompt {prompt!r}")
    return i, i + len(constraint)


def locate_constraint(prompt: str, constraint: str, tokenizer: Any) -> tuple[int, int]:
    """Token span ``[start, end)`` of ``constraint`` inside ``prompt``'s tokens (indices into
    ``token_char_spans(prompt, tokenizer)[0]``).

    Raises ``ValueError`` if the constraint is empty or absent from the prompt.
    """
    if not isinstance(prompt, str):
        raise TypeError(f"prompt must be a str, got {type(prompt).__name__}")
    if not isinstance(constraint, str):
        raise TypeError(f"constraint must be a str, got {type(constraint).__name__}")
    if not constraint.strip():
        raise ValueError("constraint must be a non-empty string")
    c0, c1 = _char_range(prompt, constraint)
    _, spans = token_char_spans(prompt, tokenizer)
    hit = [k for k, (s, e) in enumerate(spans) if e > s and s < c1 and e > c0]
    if not hit:  # pragma: no cover - offsets cover every character of a non-empty match
        raise ValueError(f"no token of the prompt covers constraint {constraint!r}")
    return hit[0], hit[-1] + 1
