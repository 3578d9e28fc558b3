"""Byte-level BPE and Unigram tokenizers trained offline, used by a tiny model."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.language_models import (
    CausalTransformer,
    Tokenizer,
    TrainConfig,
    TransformerConfig,
    TransformerLM,
    pydoc_topics_corpus,
    train_causal_lm,
)
from iclr24.kits.language_models.subword import SubwordTokenizer, train_subword_tokenizer


def _lines(n: int = 1500) -> list[str]:
    """Lines of CPython's bundled documentation (the Unigram trainer prunes a toy corpus of a
    few repeated sentences down to bare characters, so the tests use real text)."""
    text = pydoc_topics_corpus().train.decode("utf-8", errors="replace")
    return [line for line in text.splitlines() if line.strip()][:n]


CORPUS = _lines()


@pytest.fixture(scope="module", params=["bpe", "unigram"])
def tok(request) -> SubwordTokenizer:
    return train_subword_tokenizer(CORPUS, vocab_size=400, kind=request.param)


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=40))
def test_every_text_round_trips(tok, text):
    ids = tok.encode(text)
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text.encode("utf-8")
    assert tok.encode(text.encode("utf-8")) == ids


def test_subwords_are_learnt_and_spans_cover_the_text(tok):
    assert isinstance(tok, Tokenizer)
    assert tok.vocab_size == 400
    text = "the function returns a value"
    ids = tok.encode(text)
    assert len(ids) < 0.6 * len(text.encode())  # frequent words merged into fewer tokens
    spans = tok.spans(text)
    assert len(spans) == len(ids) and spans[0][0] == 0 and spans[-1][1] == len(text)
    assert tok.eos_id not in tok.encode("<eos>")  # never emitted from text
    assert train_subword_tokenizer(CORPUS, 400, tok.kind).encode(text) == ids  # deterministic


def test_bpe_and_unigram_segment_differently_and_a_tiny_model_trains_on_ids(one_torch_thread):
    bpe = train_subword_tokenizer(CORPUS, 400, "bpe")
    uni = train_subword_tokenizer(CORPUS, 400, "unigram")
    texts = ["the function returns a value", "an object of the class"]
    assert any(bpe.tokens(t) != uni.tokens(t) for t in texts)
    torch.manual_seed(0)
    model = CausalTransformer(TransformerConfig(vocab_size=bpe.vocab_size, d_model=32,
                                                n_layers=1, n_heads=2, context_length=32))
    stream = [i for t in CORPUS[:300] for i in bpe.encode(t + "\n")]
    hist = train_causal_lm(model, stream, TrainConfig(steps=60, batch_size=8, seq_len=24))
    assert hist.losses[-1] < hist.losses[0]
    lm = TransformerLM(model, bpe)
    out = lm.generate_bytes(b"the ", 6, temperature=0.0)
    assert isinstance(out, bytes)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="kind"):
        train_subword_tokenizer(CORPUS, 300, "wordpiece")
    with pytest.raises(ValueError, match="vocab_size"):
        train_subword_tokenizer(CORPUS, 100)
    with pytest.raises(TypeError, match="not one str"):
        train_subword_tokenizer("the cat", 300)
    with pytest.raises(ValueError, match="non-empty"):
        train_subword_tokenizer(["", ""], 300)
    tok = train_subword_tokenizer(CORPUS[:200], 300)
    with pytest.raises(ValueError, match="UTF-8"):
        tok.encode(b"\xff\xfe")
    with pytest.raises(ValueError, match="token ids"):
        tok.decode([10_000])
