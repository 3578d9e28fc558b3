"""Sentence embeddings: all-MiniLM-L6-v2 from its wheel, and TF-IDF."""

from __future__ import annotations

import numpy as np
import pytest

from iclr24.kits.language_models.embeddings import SentenceEmbedder, embed, minilm_path


def test_minilm_matches_sentence_transformers_pooling_and_ranks_paraphrases():
    texts = ["A man is playing a guitar.", "Someone plays an acoustic guitar.",
             "The stock market fell sharply today.", ""]
    e = embed(texts)
    assert e.shape == (4, 384) and e.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    sim = e @ e.T
    assert sim[0, 1] > 0.6 > sim[0, 2]  # the paraphrase is nearer than the unrelated sentence
    # the pooling by hand: masked mean of the last hidden states, then L2 normalisation
    import torch

    m = SentenceEmbedder()
    tok = m.tokenizer(texts[:2], padding=True, return_tensors="pt")
    with torch.no_grad():
        h = m.model(**tok).last_hidden_state
    keep = tok["attention_mask"][..., None].float()
    ref = torch.nn.functional.normalize((h * keep).sum(1) / keep.sum(1), dim=-1).numpy()
    np.testing.assert_allclose(e[:2], ref, atol=1e-5)
    # batching does not change an embedding
    np.testing.assert_allclose(m.encode(texts, batch_size=1), e, atol=1e-5)
    assert (minilm_path() / "model.safetensors").is_file()


def test_tfidf_backend_and_bad_input():
    e = embed(["red apple", "red apple pie", "blue sky"], backend="tfidf")
    np.testing.assert_allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-6)
    assert (e @ e.T)[0, 1] > (e @ e.T)[0, 2] == 0.0
    assert embed(["", " "], backend="tfidf").shape == (2, 0)
    assert embed([]).shape == (0, 384)
    with pytest.raises(TypeError, match="not one str"):
        embed("a sentence")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        embed(["ok", 3])
    with pytest.raises(ValueError, match="backend"):
        embed(["x"], backend="bert")
    with pytest.raises(FileNotFoundError, match="config.json"):
        SentenceEmbedder(path="/nonexistent")
