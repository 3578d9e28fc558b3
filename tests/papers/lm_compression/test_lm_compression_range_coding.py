"""The constriction range coder against the Python reference coder, the container format, and
the vectorised n-gram session against a direct transcription of its formula."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.lm_compression import (
    AdaptiveNGramModel,
    compress,
    decompress,
    encode_symbols,
    quantize_pdf,
)
from iclr24.papers.lm_compression.range_coding import RangeDecoder, RangeEncoder, floor_pdf

TEXT = (b"Return the absolute value of a number. The argument may be an integer, a floating "
        b"point number, or an object implementing __abs__(). ") * 8


@functools.lru_cache(maxsize=1)
def _ngram() -> AdaptiveNGramModel:
    return AdaptiveNGramModel(order=3).fit(TEXT)


def _ngram_rows(data: bytes) -> np.ndarray:
    """(T, 256) n-gram distributions along ``data`` (coding path, batch 1)."""
    sess = _ngram().session(1)
    rows = []
    for b in data:
        rows.append(sess.next_probs()[0].astype(np.float64))
        sess.feed([b])
    return np.stack(rows)


# ----------------------------------------------------------------------------- engines agree

def test_constriction_and_python_reference_code_lengths_agree_with_ideal():
    rng = np.random.default_rng(0)
    data = bytes(rng.permutation(np.frombuffer(TEXT, dtype=np.uint8))[:600]) + TEXT[:600]
    probs = _ngram_rows(data)
    sym = np.frombuffer(data, dtype=np.uint8).astype(np.int64)
    ideal_bytes = -np.log2(floor_pdf(probs)[np.arange(sym.size), sym]).sum() / 8
    py_bytes = len(encode_symbols(quantize_pdf(probs), sym)[0])
    enc = RangeEncoder()
    for t in range(0, sym.size, 37):                      # batches of any size
        enc.encode(probs[t:t + 37], sym[t:t + 37])
    stream = enc.finish()
    assert abs(len(stream) - py_bytes) <= 0.005 * py_bytes + 4
    assert ideal_bytes <= len(stream) <= 1.005 * ideal_bytes + 8
    assert ideal_bytes <= py_bytes + 1 and py_bytes <= 1.005 * ideal_bytes + 1
    dec = RangeDecoder(stream)
    back = np.concatenate([dec.decode(probs[t:t + 100]) for t in range(0, sym.size, 100)])
    np.testing.assert_array_equal(back, sym)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(1, 9),
       st.sampled_from([2, 3, 256, 5000]), st.sampled_from([0.01, 0.3, 3.0]))
def test_range_coder_roundtrip_random_batches(seed, steps, batch, vocab, conc):
    rng = np.random.default_rng(seed)
    p = rng.dirichlet(np.full(vocab, conc), size=(steps, batch))
    # sometimes code a symbol the model thought nearly impossible
    sym = np.where(rng.random((steps, batch)) < 0.2, rng.integers(0, vocab, (steps, batch)),
                   (p.cumsum(-1) < rng.random((steps, batch, 1))).sum(-1).clip(0, vocab - 1))
    enc = RangeEncoder()
    for t in range(steps):
        enc.encode(p[t], sym[t])
    dec = RangeDecoder(enc.finish())
    for t in range(steps):
        np.testing.assert_array_equal(dec.decode(p[t]), sym[t])


def test_floor_pdf_is_the_papers_epsilon_floor():
    p = np.array([[0.0, 1.0, 3.0]])
    eps = float(np.finfo(np.float32).eps)
    np.testing.assert_allclose(floor_pdf(p), (1 - 6 * eps) * p / 4 + eps, rtol=1e-12)
    assert floor_pdf(p.astype(np.float32)).dtype == np.float32
    assert floor_pdf(p).min() > 0
    with pytest.raises(ValueError, match="positive mass"):
        floor_pdf(np.zeros((1, 4)))
    with pytest.raises(ValueError, match="non-negative"):
        floor_pdf(np.array([[-1.0, 2.0]]))
    with pytest.raises(ValueError, match="too large"):
        floor_pdf(np.ones((1, 2**23)))
    for bad in (np.nan, np.inf):
        with pytest.raises(ValueError, match="finite"):
            floor_pdf(np.array([[0.5, bad]]))


def test_compiled_floor_equals_the_numpy_expression():
    """(B, V) float64 batches take the compiled pass; other shapes the numpy one: same floor."""
    p = np.random.default_rng(0).random((7, 300)) ** 3
    eps = float(np.finfo(np.float32).eps)
    expected = p * ((1 - 2 * 300 * eps) / p.sum(-1, keepdims=True)) + eps
    np.testing.assert_allclose(floor_pdf(p), expected, rtol=1e-13)
    np.testing.assert_allclose(floor_pdf(p[0]), expected[0], rtol=1e-13)     # 1-D: numpy path
    # strided input: each row sums to (1 − 2Vε) + Vε = 1 − Vε
    np.testing.assert_allclose(floor_pdf(p[:, ::2]).sum(-1), 1 - 150 * eps, rtol=1e-12)


def test_range_coder_errors():
    enc = RangeEncoder()
    with pytest.raises(ValueError, match="symbols must lie"):
        enc.encode(np.ones((1, 4)), [4])
    with pytest.raises(ValueError, match="differ"):
        enc.encode(np.ones((2, 4)), [1])
    with pytest.raises(ValueError, match="whole number of 32-bit words"):
        RangeDecoder(b"abc")
    with pytest.raises(TypeError):
        RangeDecoder("abcd")
    assert RangeEncoder().finish() == b""


# ----------------------------------------------------------------------------- container

@pytest.mark.parametrize("data", [b"", bytes(range(256)), bytes(range(256)) * 9, b"\x00",
                                  TEXT], ids=["empty", "all-256", "all-256-x9", "nul", "text"])
@pytest.mark.parametrize("chunk_size, group_size", [(2048, None), (100, 3), (0, None)])
def test_every_blob_decodes_exactly(data, chunk_size, group_size):
    model = _ngram()
    blob = compress(data, model, chunk_size=chunk_size, group_size=group_size)
    assert decompress(blob, model) == data


def test_truncated_and_padded_blobs_give_clear_errors():
    model = _ngram()
    blob = compress(TEXT, model, chunk_size=256)
    for cut in (1, 4, len(blob) // 2):
        with pytest.raises(ValueError, match="truncated"):
            decompress(blob[:-cut], model)
    with pytest.raises(ValueError, match="truncated or padded"):
        decompress(blob + b"\x00" * 4, model)
    with pytest.raises(ValueError, match="truncated header"):
        decompress(blob[:5], model)
    with pytest.raises(ValueError, match="format version 7"):
        decompress(b"LMC\x07" + blob[4:], model)
    with pytest.raises(ValueError, match="group_size"):
        compress(TEXT, model, group_size=0)


def test_progress_reaches_one_in_both_directions():
    model = _ngram()
    seen: list[float] = []
    blob = compress(TEXT, model, chunk_size=300, group_size=2, progress=lambda f, m: seen.append(f))
    assert seen[-1] == pytest.approx(1.0) and seen == sorted(seen)
    seen.clear()
    decompress(blob, model, progress=lambda f, m: seen.append(f))
    assert seen[-1] == pytest.approx(1.0)


# ----------------------------------------------------------------------------- n-gram

def _reference_probs(model: AdaptiveNGramModel, train: bytes, seq: bytes) -> np.ndarray:
    """Witten–Bell interpolation written out with dictionaries, one position at a time."""
    counts = [{} for _ in range(model.order + 1)]      # order -> ctx -> {byte: count}
    for k in range(model.order + 1):
        for t in range(k, len(train)):
            c = counts[k].setdefault(train[t - k:t], {})
            c[train[t]] = c.get(train[t], 0) + 1
    rows = []
    for t in range(len(seq)):
        p = np.full(256, 1 / 256)
        for k in range(min(model.order, t) + 1):
            c = counts[k].get(seq[t - k:t], {})
            n = sum(c.values())
            if n == 0:
                continue
            u = len(c) if model.smoothing == "witten_bell" else model.alpha
            vec = np.zeros(256)
            for b, v in c.items():
                vec[b] = v
            p = (vec + u * p) / (n + u)
        rows.append(p)
        if model.adaptive:
            for k in range(min(model.order, t) + 1):
                c = counts[k].setdefault(seq[t - k:t], {})
                c[seq[t]] = c.get(seq[t], 0) + 1
    return np.stack(rows)


@pytest.mark.parametrize("smoothing, adaptive", [("witten_bell", True), ("witten_bell", False),
                                                 ("dirichlet", True)])
def test_vectorised_ngram_session_matches_the_formula(smoothing, adaptive):
    train = TEXT[:300]
    model = AdaptiveNGramModel(order=3, smoothing=smoothing, adaptive=adaptive).fit(train)
    seqs = [b"the absolute value of zzz\xff\xfe", TEXT[100:140], bytes(range(200, 240))]
    sess = model.session(len(seqs))
    got = []
    for t in range(40):
        got.append(sess.next_probs().astype(np.float64))
        sess.feed([s[t] if t < len(s) else 0 for s in seqs])
    got = np.stack(got, axis=1)                            # (B, T, 256)
    for b, s in enumerate(seqs):
        ref = _reference_probs(model, train, s)
        np.testing.assert_allclose(got[b, :len(s)], ref, rtol=2e-5, atol=1e-9)


def test_ngram_online_counts_promote_long_lists_to_dense_rows():
    """A context followed by more than PROMOTE distinct bytes moves to a dense row; the
    distribution stays the closed form before and after the move."""
    from iclr24.papers.lm_compression.numba_kernels import PROMOTE

    train = TEXT[:200]
    model = AdaptiveNGramModel(order=1).fit(train)
    seq = bytes(range(256))                       # order 0 sees 256 distinct bytes
    sess = model.session(1)
    got = []
    for b in seq:
        got.append(sess.next_probs()[0].copy())
        sess.feed([b])
    assert sess._online.used[2] >= 1 and len(seq) > PROMOTE
    np.testing.assert_allclose(np.stack(got), _reference_probs(model, train, seq), rtol=2e-5,
                               atol=1e-12)


def test_ngram_session_batch_limit():
    with pytest.raises(ValueError, match="batch_size"):
        AdaptiveNGramModel(order=3).fit(b"abc").session(2**13)


def test_ngram_pool_grows_past_its_first_allocation():
    model = AdaptiveNGramModel(order=2).fit(b"ab")
    data = np.random.default_rng(1).integers(0, 256, 600, dtype=np.uint8).tobytes()
    assert decompress(compress(data, model, chunk_size=0), model) == data
