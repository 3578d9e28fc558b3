"""Subword tokenizers trained offline (Hugging Face ``tokenizers``) for the tiny models.

:func:`train_subword_tokenizer` learns a byte-level BPE or Unigram vocabulary from a corpus of
texts. Both run over the 256-symbol byte alphabet (GPT-2's byte-level pre-tokenizer, its full
alphabet seeded into the vocabulary), so every UTF-8 text encodes without an unknown token and
decodes back to exactly itself. Two tokenizers trained on different corpora or with different
algorithms segment the same text differently: the situation FuseLLM's token alignment and
any cross-tokenizer comparison face.

:class:`SubwordTokenizer` has the kit's :class:`~.backends.Tokenizer` interface (bytes in,
bytes out), so a :class:`~.transformer.CausalTransformer` with ``vocab_size =
tokenizer.vocab_size`` trains on its ids (:func:`~.training.train_causal_lm`) and a
:class:`~.backends.TransformerLM` generates through it; :meth:`SubwordTokenizer.spans` gives
each token's character span in the text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Literal

__all__ = ["SubwordTokenizer", "train_subword_tokenizer"]


class SubwordTokenizer:
    """A trained ``tokenizers.Tokenizer`` behind the bytes-in/bytes-out interface.

    ``eos_id`` is the id of the end-of-sequence special token (``"<eos>"``), which
    :meth:`encode` never emits from text.
    """

    def __init__(self, tokenizer: Any, kind: str) -> None:
        self.tk = tokenizer
        self.tk.encode_special_tokens = True  # "<eos>" in a text is text, not the token
        self.kind = kind
        self.vocab_size = int(tokenizer.get_vocab_size())
        self.eos_id = int(tokenizer.token_to_id("<eos>"))

    @staticmethod
    def _text(data: bytes | str) -> str:
        if isinstance(data, str):
            return data
        if isinstance(data, (bytes, bytearray, memoryview)):
            try:
                return bytes(data).decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ValueError(f"data must be valid UTF-8 for a subword tokenizer: {exc}") \
                    from None
        raise TypeError(f"data must be bytes or str, got {type(data).__name__}")

    def encode(self, data: bytes | str) -> list[int]:
        """Token ids of UTF-8 ``data`` (bytes or str)."""
        return list(self.tk.encode(self._text(data), add_special_tokens=False).ids)

    def decode(self, ids: Sequence[int]) -> bytes:
        """The UTF-8 bytes of ``ids`` (special tokens dropped)."""
        toks = [int(i) for i in ids]
        if any(not 0 <= t < self.vocab_size for t in toks):
            raise ValueError(f"token ids must lie in [0, {self.vocab_size})")
        return self.tk.decode(toks, skip_special_tokens=True).encode("utf-8")

    def tokens(self, text: str) -> list[str]:
        """The tokens' strings (byte-level symbols: 'Ġ' stands for a leading space)."""
        return list(self.tk.encode(self._text(text), add_special_tokens=False).tokens)

    def spans(self, text: str) -> list[tuple[int, int]]:
        """Each token's ``[start, end)`` character span in ``text`` (a character split over
        several byte tokens gives each of them that character's span)."""
        return [tuple(o) for o in self.tk.encode(self._text(text),
                                                 add_special_tokens=False).offsets]


def train_subword_tokenizer(texts: Iterable[str], vocab_size: int = 512,
                            kind: Literal["bpe", "unigram"] = "bpe") -> SubwordTokenizer:
    """Learn a byte-level ``kind`` tokenizer of at most ``vocab_size`` ids from ``texts``.

    vocab_size must leave room for the 256 byte symbols and ``<eos>`` (>= 257); a small corpus
    may yield fewer ids than asked (``SubwordTokenizer.vocab_size`` is what was learnt).
    Training is deterministic for a given corpus order.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    if kind not in ("bpe", "unigram"):
        raise ValueError(f"kind must be 'bpe' or 'unigram', got {kind!r}")
    if isinstance(vocab_size, bool) or not isinstance(vocab_size, int) or vocab_size < 257:
        raise ValueError(f"vocab_size must be an int >= 257 (256 bytes + <eos>), got "
                         f"{vocab_size!r}")
    corpus = list(texts) if not isinstance(texts, str) else None
    if corpus is None:
        raise TypeError("texts must be an iterable of str, not one str (wrap it in a list)")
    for i, t in enumerate(corpus):
        if not isinstance(t, str):
            raise TypeError(f"texts[{i}] must be a str, got {type(t).__name__}")
    if not any(corpus):
        raise ValueError("texts must hold some non-empty text to learn from")
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    if kind == "bpe":
        tk = Tokenizer(models.BPE())
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=["<eos>"],
                                      initial_alphabet=alphabet, show_progress=False)
    else:
        tk = Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(vocab_size=vocab_size, special_tokens=["<eos>"],
                                          initial_alphabet=alphabet, unk_token=None,
                                          show_progress=False)
    tk.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tk.decoder = decoders.ByteLevel()
    tk.train_from_iterator(corpus, trainer)
    return SubwordTokenizer(tk, kind)
