"""Axis-informed prompt templates with placeholder tokens (paper Sec. 3, "Prompt").

The paper adds one placeholder token per concept axis to the T5 tokenizer and writes a template
such as "a photo of <e1> with <e2> color and <e3> material". The *input* embeddings of the
placeholders (the rows the embedding table would return) are replaced by the concept encoders'
outputs before the frozen text encoder runs; the template's other words keep their own rows.

:class:`TemplatePrompt` takes any tokenizer that follows :class:`Tokenizer` (add placeholder
tokens, encode text, give a word's single token id):

- :class:`WordTokenizer`, the word-level tokenizer of the stand-in text encoder (one token per
  whitespace-separated word);
- a Hugging Face tokenizer (T5's, CLIP's, any ``PreTrainedTokenizer[Fast]``), wrapped
  automatically in :class:`HFTokenizer` (issue 38: it used to be refused). Its SentencePiece /
  BPE pieces are why anchor words must be checked to be a single token. After building the
  prompt, resize the text encoder's embedding table to ``len(tokenizer)`` (the placeholders are
  new rows; their values never matter, since they are replaced).

:class:`TemplatePrompt` parses a template whose placeholders are written ``{axis}``, checks they
match the axes, and builds the token ids, the placeholder positions, and the input-embedding
sequence with the placeholders swapped in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import torch

__all__ = ["HFTokenizer", "TemplatePrompt", "Tokenizer", "WordTokenizer", "placeholder_token"]

_FIELD = re.compile(r"\{([^{}]*)\}")


def placeholder_token(axis: str) -> str:
    """The placeholder token added to the tokenizer for ``axis``, e.g. ``<color>``."""
    return f"<{axis}>"


@runtime_checkable
class Tokenizer(Protocol):
    """What :class:`TemplatePrompt` needs from a tokenizer."""

    def __len__(self) -> int:
        """The vocabulary size, placeholders included (rows the embedding table needs)."""

    def add_placeholders(self, axes: Sequence[str]) -> list[int]:
        """Add the ``<axis>`` tokens as single, unsplittable tokens; return their ids."""

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (special tokens such as T5's ``</s>`` included if any)."""

    def single_token_id(self, word: str) -> int:
        """The id of ``word``, which must be exactly one known token (else ValueError)."""


class WordTokenizer:
    """Word-level tokenizer: id 0 is padding, then ``words`` in order, then placeholders.

    encode("a photo of ...") -> list of ids; an unknown word is a ValueError (a subword
    tokenizer would split it; this one has no pieces to split into).
    """

    PAD = "<pad>"

    def __init__(self, words: Sequence[str]) -> None:
        if isinstance(words, str) or not all(isinstance(w, str) and w and " " not in w
                                             for w in words):
            raise TypeError("words must be a sequence of non-empty strings without spaces")
        self.vocab: dict[str, int] = {self.PAD: 0}
        for w in words:
            self.vocab.setdefault(w, len(self.vocab))

    def __len__(self) -> int:
        return len(self.vocab)

    def add_placeholders(self, axes: Sequence[str]) -> list[int]:
        """Add ``<axis>`` tokens (idempotent) and return their ids."""
        return [self.vocab.setdefault(placeholder_token(a), len(self.vocab)) for a in axes]

    def tokenize(self, text: str) -> list[str]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return text.split()

    def encode(self, text: str) -> list[int]:
        ids = []
        for word in self.tokenize(text):
            if word not in self.vocab:
                raise ValueError(f"word {word!r} is not in the tokenizer's vocabulary")
            ids.append(self.vocab[word])
        return ids

    def single_token_id(self, word: str) -> int:
        """The id of ``word``, which must be exactly one token (anchor words must be)."""
        pieces = self.tokenize(word)
        if len(pieces) != 1:
            raise ValueError(f"anchor word {word!r} must be a single token, it is "
                             f"{len(pieces)} tokens {pieces}")
        return self.encode(word)[0]


class HFTokenizer:
    """A Hugging Face tokenizer (``transformers`` ``PreTrainedTokenizer[Fast]``: T5, CLIP, ...)
    seen through :class:`Tokenizer`.

    tokenizer:          the Hugging Face tokenizer; placeholders are added to it in place
                        (``add_tokens(..., special_tokens=True)``, so they are never split);
    add_special_tokens: passed to ``encode`` (True: T5 appends ``</s>``, CLIP wraps in
                        ``<|startoftext|> ... <|endoftext|>``, as their pipelines do).
    """

    def __init__(self, tokenizer: Any, add_special_tokens: bool = True) -> None:
        needed = ("add_tokens", "convert_tokens_to_ids", "tokenize", "encode", "__len__")
        missing = [m for m in needed if not callable(getattr(tokenizer, m, None))]
        if missing:
            raise TypeError(f"tokenizer must be a Hugging Face tokenizer (with {list(needed)}); "
                            f"{type(tokenizer).__name__} lacks {missing}")
        if not isinstance(add_special_tokens, bool):
            raise TypeError(f"add_special_tokens must be a bool, got {add_special_tokens!r}")
        self.hf = tokenizer
        self.add_special_tokens = add_special_tokens

    def __len__(self) -> int:
        return len(self.hf)

    def add_placeholders(self, axes: Sequence[str]) -> list[int]:
        tokens = [placeholder_token(a) for a in axes]
        self.hf.add_tokens(tokens, special_tokens=True)  # idempotent in transformers
        return [int(self.hf.convert_tokens_to_ids(t)) for t in tokens]

    def tokenize(self, text: str) -> list[str]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return list(self.hf.tokenize(text))

    def encode(self, text: str) -> list[int]:
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, got {type(text).__name__}")
        return [int(i) for i in self.hf.encode(text, add_special_tokens=self.add_special_tokens)]

    def single_token_id(self, word: str) -> int:
        pieces = self.tokenize(word)
        if len(pieces) != 1:
            raise ValueError(f"anchor word {word!r} must be a single token, it is "
                             f"{len(pieces)} tokens {pieces}")
        tid = self.hf.convert_tokens_to_ids(pieces[0])
        unk = getattr(self.hf, "unk_token_id", None)
        if tid is None or (unk is not None and tid == unk):
            raise ValueError(f"anchor word {word!r} is the unknown token of the tokenizer")
        return int(tid)


def _as_tokenizer(tokenizer: object) -> Tokenizer:
    if isinstance(tokenizer, Tokenizer):
        return tokenizer
    if callable(getattr(tokenizer, "add_tokens", None)) \
            and callable(getattr(tokenizer, "convert_tokens_to_ids", None)):
        return HFTokenizer(tokenizer)
    raise TypeError("tokenizer must be a WordTokenizer, an object with add_placeholders / "
                    "encode / single_token_id / __len__ (the Tokenizer protocol), or a Hugging "
                    f"Face tokenizer (add_tokens, convert_tokens_to_ids); got "
                    f"{type(tokenizer).__name__}")


class TemplatePrompt:
    """A template such as ``"a photo of {category} with {color} color and {material} material"``.

    template:  text with one ``{axis}`` field per axis (each exactly once, no other fields);
    axes:      the concept axes, in the order the encoders' outputs are stacked;
    tokenizer: a :class:`Tokenizer` (e.g. :class:`WordTokenizer`) or a Hugging Face tokenizer
               (wrapped in :class:`HFTokenizer`); the placeholder tokens are added to it.

    Attributes: ``tokenizer`` (the :class:`Tokenizer` used), ``token_ids`` (L,) int64,
    ``positions`` (K,) int64 (where axis k's placeholder sits in the sequence, in ``axes``
    order).
    """

    def __init__(self, template: str, axes: Sequence[str], tokenizer: object) -> None:
        if not isinstance(template, str):
            raise TypeError(f"template must be a str, got {type(template).__name__}")
        if isinstance(axes, str) or not axes or not all(isinstance(a, str) and a for a in axes):
            raise TypeError("axes must be a non-empty sequence of axis names")
        if len(set(axes)) != len(axes):
            raise ValueError(f"axes must be distinct, got {list(axes)}")
        tok = _as_tokenizer(tokenizer)
        fields = _FIELD.findall(template)
        if sorted(fields) != sorted(axes):
            raise ValueError(f"template placeholders {fields} do not match the axes {list(axes)}: "
                             "each axis must appear exactly once as {axis} and nothing else")
        self.template = template
        self.axes = tuple(axes)
        self.tokenizer = tok
        placeholder_ids = tok.add_placeholders(self.axes)
        text = " ".join(_FIELD.sub(lambda m: f" {placeholder_token(m.group(1))} ",
                                   template).split())
        ids = tok.encode(text)
        positions = []
        for axis, pid in zip(self.axes, placeholder_ids):
            where = [i for i, t in enumerate(ids) if t == pid]
            if len(where) != 1:
                raise ValueError(f"the tokenizer does not keep {placeholder_token(axis)!r} as one "
                                 f"token of the template (found {len(where)} times)")
            positions.append(where[0])
        self.token_ids = torch.tensor(ids, dtype=torch.int64)
        self.positions = torch.tensor(positions, dtype=torch.int64)

    def __len__(self) -> int:
        return len(self.token_ids)

    def fill_words(self, words: Mapping[str, str]) -> str:
        """The template with each axis replaced by a word (the text-only prompt)."""
        missing = set(self.axes) - set(words)
        if missing:
            raise ValueError(f"words lacks axes {sorted(missing)}")
        return _FIELD.sub(lambda m: words[m.group(1)], self.template)

    def word_embeddings(self, text_encoder, words: Mapping[str, Sequence[str]]) -> torch.Tensor:
        """Input embeddings w(a) of one word per axis and image: (B, K, D).

        words: axis -> B words; each must be a single token (the anchor condition)."""
        missing = set(self.axes) - set(words)
        if missing:
            raise ValueError(f"words lacks axes {sorted(missing)}")
        lengths = {len(words[a]) for a in self.axes}
        if len(lengths) != 1:
            raise ValueError(f"every axis needs the same number of words, got {lengths}")
        ids = torch.tensor([[self.tokenizer.single_token_id(w) for w in words[a]]
                            for a in self.axes], dtype=torch.int64).T  # (B, K)
        return text_encoder.input_embeddings(ids)

    def input_embeddings(self, text_encoder, embeddings: torch.Tensor) -> torch.Tensor:
        """The template's input-embedding sequence with axis k's placeholder row replaced by
        ``embeddings[:, k]``. embeddings: (B, K, D) -> (B, L, D); differentiable in
        ``embeddings`` (the other rows come from the frozen table)."""
        if not isinstance(embeddings, torch.Tensor) or embeddings.ndim != 3:
            raise ValueError("embeddings must be a (batch, axes, dim) tensor")
        b, k, d = embeddings.shape
        if k != len(self.axes):
            raise ValueError(f"embeddings has {k} axes, the template has {len(self.axes)}")
        ids = self.token_ids.to(embeddings.device)
        base = text_encoder.input_embeddings(ids[None].expand(b, -1))  # (B, L, D)
        if base.shape[-1] != d:
            raise ValueError(f"embeddings have dim {d}, the text encoder's inputs have "
                             f"{base.shape[-1]}")
        # one-hot scatter keeps the graph: seq = base * (1 - M) + M^T e
        onehot = torch.zeros(k, len(ids), dtype=embeddings.dtype, device=embeddings.device)
        onehot[torch.arange(k), self.positions.to(embeddings.device)] = 1.0
        keep = 1.0 - onehot.sum(0)                                     # (L,)
        return base * keep[None, :, None] + torch.einsum("kl,bkd->bld", onehot, embeddings)
