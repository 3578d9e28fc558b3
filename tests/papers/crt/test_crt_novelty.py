"""SelfBLEU and embedding novelty against a history; the evaluation's leave-one-out SelfBLEU."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nltk.tokenize import wordpunct_tokenize
from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

from iclr24.papers.crt import (
    EmbeddingNovelty,
    HashingEmbedder,
    SelfBleuNovelty,
    mean_pairwise_cosine,
    self_bleu_leave_one_out,
)

WORDS = ["a", "b", "c", "d", "e", "f", "the", "storm", "sees"]


def _nltk_selfbleu(refs, hyp, orders=(2, 3, 4, 5)):
    weights = [tuple([1.0 / n] * n) for n in orders]
    with _quiet():
        scores = sentence_bleu([wordpunct_tokenize(r) for r in refs], wordpunct_tokenize(hyp),
                               weights=weights, smoothing_function=SmoothingFunction().method1)
    return float(np.mean(scores))


class _quiet:
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)


sentences = st.lists(st.sampled_from(WORDS), min_size=1, max_size=7).map(" ".join)


def test_empty_history_scores_zero():
    assert np.array_equal(SelfBleuNovelty().score(["the storm sees", "a b"]), [0.0, 0.0])
    emb = EmbeddingNovelty(HashingEmbedder())
    assert np.array_equal(emb.score(["the storm sees", "a b"]), [0.0, 0.0])


def test_batch_is_scored_before_it_is_appended():
    sb = SelfBleuNovelty()
    batch = ["the storm sees a b c", "the storm sees a b c"]
    first = sb.score(batch)  # within-batch duplicates are not penalised
    assert np.array_equal(first, [0.0, 0.0]) and len(sb) == 0
    sb.add(batch)
    assert len(sb) == 2
    assert sb.score(batch) == pytest.approx([1.0, 1.0])  # an identical reference now exists
    emb = EmbeddingNovelty(HashingEmbedder())
    emb.add(batch)
    assert emb.score(batch) == pytest.approx([1.0, 1.0])


@settings(max_examples=25)
@given(st.lists(sentences, min_size=1, max_size=30), st.lists(sentences, min_size=1, max_size=5))
def test_pruned_history_equals_nltk_on_the_whole_history(history, new):
    sb = SelfBleuNovelty()
    sb.add(history)
    got = sb.score(new)
    want = [_nltk_selfbleu(history, h) for h in new]
    assert got == pytest.approx(want, abs=1e-12)


def test_orders_change_the_score_as_nltk_does():
    hist = ["the storm sees a b c d", "a b c e f"]
    sb = SelfBleuNovelty(orders=(3, 4, 5))
    sb.add(hist)
    assert sb.score(["the storm sees a b e f"])[0] == pytest.approx(
        _nltk_selfbleu(hist, "the storm sees a b e f", (3, 4, 5)))


def test_sample_size_scores_against_a_subset():
    sb = SelfBleuNovelty(sample_size=1, seed=0)
    sb.add(["a b c d", "e f the storm"])
    s = sb.score(["a b c d"])[0]
    assert s == pytest.approx(1.0) or s == pytest.approx(_nltk_selfbleu(["e f the storm"],
                                                                        "a b c d"))


@settings(max_examples=15)
@given(st.lists(sentences, min_size=2, max_size=12))
def test_leave_one_out_matches_nltk(texts):
    got = self_bleu_leave_one_out(texts)
    want = [_nltk_selfbleu(texts[:i] + texts[i + 1:], t) for i, t in enumerate(texts)]
    assert got == pytest.approx(want, abs=1e-12)


def test_leave_one_out_of_one_text_is_zero():
    assert np.array_equal(self_bleu_leave_one_out(["a b c"]), [0.0])


def test_embedding_novelty_is_the_mean_cosine_to_the_history():
    table = {"x": [1.0, 0.0], "y": [0.0, 2.0], "z": [1.0, 1.0]}

    def embedder(texts):
        return np.array([table[t] for t in texts])

    nov = EmbeddingNovelty(embedder)
    nov.add(["x", "y"])
    # cos(z, x) = cos(z, y) = 1/sqrt(2)
    assert nov.score(["z", "x"]) == pytest.approx([2 ** -0.5, 0.5])
    sub = EmbeddingNovelty(embedder, sample_size=1, seed=3)
    sub.add(["x", "y"])
    assert sub.score(["x"])[0] in (pytest.approx(1.0), pytest.approx(0.0))


def test_mean_pairwise_cosine_closed_form():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((6, 4))
    u = x / np.linalg.norm(x, axis=1, keepdims=True)
    c = u @ u.T
    want = (c.sum() - np.trace(c)) / 30
    assert mean_pairwise_cosine(x) == pytest.approx(want)
    assert mean_pairwise_cosine(x[:1]) == 0.0


def test_hashing_embedder_rows_are_unit_and_shared_across_calls():
    emb = HashingEmbedder(n_features=64)
    a, b = emb(["the storm sees"]), emb(["the storm sees", "a b"])
    assert np.allclose(np.linalg.norm(b, axis=1), 1.0)
    assert np.allclose(a[0], b[0])


@pytest.mark.parametrize("kwargs", [{"orders": ()}, {"orders": (0, 2)}, {"sample_size": 0},
                                    {"sample_size": 1.5}])
def test_bad_selfbleu_arguments(kwargs):
    with pytest.raises(ValueError, match="orders|sample_size"):
        SelfBleuNovelty(**kwargs)


def test_bad_inputs_are_named():
    with pytest.raises(TypeError, match="texts"):
        SelfBleuNovelty().score("one string")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        SelfBleuNovelty().add(["ok", 3])
    with pytest.raises(TypeError, match="tokenizer"):
        SelfBleuNovelty(tokenizer="split")
    with pytest.raises(TypeError, match="embedder"):
        EmbeddingNovelty("minilm")
    nov = EmbeddingNovelty(lambda texts: np.ones(len(texts)))
    with pytest.raises(ValueError, match="2-D"):
        nov.add(["a"])
    with pytest.raises(ValueError, match="n_features"):
        HashingEmbedder(n_features=1)
