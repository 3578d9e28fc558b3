"""Arithmetic coder, model-based compression and the n-gram model of lm_compression."""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.language_models import (
    CausalTransformer,
    GzipCompressor,
    TransformerConfig,
    TransformerLM,
)
from iclr24.papers.lm_compression import (
    FLOAT32_EPS,
    FORMAT_VERSION,
    AdaptiveNGramModel,
    ArithmeticDecoder,
    ArithmeticEncoder,
    adjusted_rate,
    code_chunks,
    code_length_bits,
    compress,
    compressor_as_sampler,
    compressor_continuation_bits,
    compressor_log_probs,
    decode_symbols,
    decode_token_sequences,
    decompress,
    encode_symbols,
    encode_token_sequences,
    floor_pdf,
    mask_rescale,
    max_decodable_tokens,
    quantize_pdf,
    right_shift_bytes,
    utf8_chunks,
    zero_msb_if_not_ascii,
)

TEXT = (b"The for statement is used to iterate over the elements of a sequence (such as a "
        b"string, tuple or list) or other iterable object. ") * 6


@functools.lru_cache(maxsize=1)
def _ngram() -> AdaptiveNGramModel:
    return AdaptiveNGramModel(order=3).fit(TEXT)


@functools.lru_cache(maxsize=1)
def _transformer() -> TransformerLM:
    torch.manual_seed(0)
    cfg = TransformerConfig(d_model=16, n_layers=1, n_heads=2, context_length=128)
    return TransformerLM(CausalTransformer(cfg))


# ----------------------------------------------------------------------------- quantisation

@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0, 1e6, allow_nan=False), min_size=1, max_size=300)
       .filter(lambda v: sum(v) > 0))
def test_quantize_pdf_sums_and_floors(values):
    f = quantize_pdf(np.array(values))
    assert f.sum() == 1 << 24 and f.min() >= 1


def test_quantize_pdf_follows_epsilon_floor_and_is_close():
    p = np.array([0.5, 0.25, 0.25, 0.0])
    f = quantize_pdf(p)
    q = (1 - 2 * 4 * FLOAT32_EPS) * p + FLOAT32_EPS
    np.testing.assert_allclose(f / (1 << 24), q, atol=1e-6)
    with pytest.raises(ValueError, match="non-negative"):
        quantize_pdf(np.array([0.5, -0.1]))
    with pytest.raises(ValueError, match="positive mass"):
        quantize_pdf(np.zeros(3))


# ----------------------------------------------------------------------------- coder

@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 200), st.integers(2, 300))
def test_coder_roundtrip_random_distributions(seed, length, vocab):
    rng = np.random.default_rng(seed)
    pdfs = rng.dirichlet(np.full(vocab, 0.3), size=length)
    symbols = np.array([rng.choice(vocab, p=p) for p in pdfs])
    freqs = quantize_pdf(pdfs)
    data, n_pad = encode_symbols(freqs, symbols)
    assert 0 <= n_pad < 8
    assert np.array_equal(decode_symbols(data, freqs), symbols)


def test_coder_length_is_within_two_bits_of_ideal():
    rng = np.random.default_rng(1)
    pdfs = rng.dirichlet(np.full(256, 0.1), size=2000)
    symbols = np.array([rng.choice(256, p=p) for p in pdfs])
    freqs = quantize_pdf(pdfs)
    ideal = -np.sum(np.log2(freqs[np.arange(2000), symbols] / (1 << 24)))
    data, n_pad = encode_symbols(freqs, symbols)
    bits = 8 * len(data) - n_pad
    assert ideal <= bits <= ideal + 2 + 1e-6


def test_coder_edge_cases_and_errors():
    freqs = quantize_pdf(np.ones((0, 4)))
    data, _ = encode_symbols(freqs, np.zeros(0, dtype=int))
    assert decode_symbols(data, freqs).size == 0
    enc = ArithmeticEncoder()
    with pytest.raises(ValueError, match="alphabet"):
        enc.encode(np.array([1 << 23, 1 << 23]), 5)
    with pytest.raises(ValueError, match="zero frequency"):
        enc.encode(np.array([0, 1 << 24]), 0)
    with pytest.raises(ValueError, match="precision"):
        ArithmeticEncoder(precision=4)
    with pytest.raises(ValueError, match="total_bits"):
        ArithmeticEncoder(precision=16, total_bits=24)
    with pytest.raises(ValueError, match="sum to"):
        ArithmeticDecoder(b"\x00").decode(np.array([1, 2, 3]))
    with pytest.raises(TypeError):
        ArithmeticDecoder("abc")


# ----------------------------------------------------------------------------- model coding

@settings(max_examples=30, deadline=None)
@given(st.binary(max_size=300))
def test_ngram_compress_roundtrip_property(data):
    model = _ngram()
    assert decompress(compress(data, model), model) == data


@settings(max_examples=8, deadline=None)
@given(st.binary(max_size=150))
def test_transformer_compress_roundtrip_property(data):
    model = _transformer()
    assert decompress(compress(data, model, chunk_size=64), model) == data


@pytest.mark.parametrize("make", [_ngram, _transformer])
def test_all_byte_values_and_empty_roundtrip(make):
    model = make()
    data = bytes(range(256)) + bytes(range(255, -1, -1))
    assert decompress(compress(data, model, chunk_size=100), model) == data
    assert decompress(compress(b"", model), model) == b""
    assert decompress(compress(b"\x00", model), model) == b"\x00"


def test_lockstep_group_decodes_each_row_like_a_single_sequence():
    model = _ngram()
    seqs = [list(TEXT[:50]), list(TEXT[50:80]), []]
    grouped = encode_token_sequences(model, seqs)
    assert decode_token_sequences(model, grouped, [len(s) for s in seqs]) == seqs
    # the n-gram's rows are independent: each row's ideal code length is the same alone
    ideal_group: list[float] = []
    encode_token_sequences(model, seqs, ideal_bits=ideal_group)
    for s, bits in zip(seqs, ideal_group):
        alone: list[float] = []
        encode_token_sequences(model, [s], ideal_bits=alone)
        assert alone[0] == pytest.approx(bits, rel=1e-6)


class _StepOnly:
    """The n-gram behind a session without ``block_probs``: forces step-by-step encoding."""

    def __init__(self, model):
        self.model = model
        self.vocab_size, self.tokenizer = model.vocab_size, model.tokenizer
        self.context_length = model.context_length

    def session(self, batch_size=1, shared_counts=False):
        sess = self.model.session(batch_size, shared_counts=shared_counts)

        class Session:
            next_probs = sess.next_probs
            next_log_probs = sess.next_log_probs
            feed = sess.feed

        return Session()


@pytest.mark.parametrize("block", [1, 3, 64])
def test_ngram_block_encoder_gives_the_step_by_step_stream(block, monkeypatch):
    import iclr24.papers.lm_compression.model_coding as mc

    monkeypatch.setattr(mc, "_BLOCK_STEPS", block)
    monkeypatch.setattr(mc, "_BLOCK_MIN_TOKENS", 0)
    model = _ngram()
    rng = np.random.default_rng(block)
    seqs = [list(TEXT[:170]), list(rng.integers(0, 256, 97)), list(TEXT[3:4]), [],
            list(TEXT[200:330])]
    fast_bits, slow_bits, fast_alone, slow_alone = [], [], [], []
    fast = encode_token_sequences(model, seqs, ideal_bits=fast_bits, separate_bytes=fast_alone)
    slow = encode_token_sequences(_StepOnly(model), seqs, ideal_bits=slow_bits,
                                  separate_bytes=slow_alone)
    assert fast == slow and fast_alone == slow_alone
    np.testing.assert_allclose(fast_bits, slow_bits, rtol=1e-12)
    assert decode_token_sequences(model, fast, [len(s) for s in seqs]) == seqs
    # lanes with shared counts: the block kernel updates the shared counts like the steps do
    lanes = [list(TEXT[i * 120:(i + 1) * 120]) for i in range(4)] + [list(rng.integers(0, 256,
                                                                                      120))]
    fast = encode_token_sequences(model, lanes, shared_counts=True)
    slow = encode_token_sequences(_StepOnly(model), lanes, shared_counts=True)
    assert fast == slow
    assert fast != encode_token_sequences(model, lanes)  # the rows do share their counts
    assert decode_token_sequences(model, fast, [120] * 5, shared_counts=True) == lanes


def test_ngram_block_probs_grows_its_online_arrays_mid_block():
    model = _ngram()
    rng = np.random.default_rng(0)
    toks = rng.integers(0, 256, (300, 4))  # random bytes: new contexts at every step
    sess = model.session(4)
    sess._online.__init__(capacity=64)  # smallest arrays: the kernel must stop and resume
    fp, p_sym = sess.block_probs(toks, FLOAT32_EPS)
    ref = model.session(4)
    for t in range(300):
        p = ref.next_probs()
        np.testing.assert_array_equal(fp[t], floor_pdf(p))
        np.testing.assert_array_equal(p_sym[t], p[np.arange(4), toks[t]])
        ref.feed(toks[t].tolist())
    with pytest.raises(ValueError, match=r"\(K, 4\)"):
        sess.block_probs(toks[:, :3], FLOAT32_EPS)


def test_real_rate_close_to_ideal_and_model_beats_gzip_on_its_text():
    model = _ngram()
    res = code_chunks([TEXT[:256], TEXT[256:512]], model)
    assert res.roundtrip_ok
    # one shared stream: at most a few words over the ideal; separate streams pay per chunk
    assert res.ideal_rate <= res.rate <= res.ideal_rate + 12 / 512
    assert res.ideal_rate <= res.separate_rate <= res.ideal_rate + 2 * 12 / 512
    ideal = code_length_bits(TEXT[:256], model) + code_length_bits(TEXT[256:512], model)
    assert ideal / 8 / 512 == pytest.approx(res.ideal_rate, rel=1e-5)
    gz = len(GzipCompressor().compress(TEXT[:256])) / 256
    assert res.rate < gz


def test_context_longer_than_model_and_corrupted_streams_raise():
    tf = _transformer()
    with pytest.raises(ValueError, match="context_length"):
        encode_token_sequences(tf, [list(range(129))])
    with pytest.raises(ValueError, match="context_length"):
        code_chunks([bytes(200)], tf)
    with pytest.raises(ValueError, match="context_length"):
        code_length_bits(bytes(200), tf)
    model = _ngram()
    blob = compress(TEXT[:200], model)
    flipped = bytearray(blob)
    flipped[-3] ^= 0x40
    with pytest.raises(ValueError, match="corrupted"):
        decompress(bytes(flipped), model)
    with pytest.raises(ValueError, match="truncated"):
        decompress(blob[:-2], model)
    with pytest.raises(ValueError, match="corrupted"):
        decompress(b"XXXX" + blob[4:], model)
    with pytest.raises(ValueError, match="corrupted"):
        decompress(blob[:6], model)
    with pytest.raises(TypeError, match="backend"):
        compress(b"abc", object())
    with pytest.raises(TypeError):
        compress("text", model)


def _forged_blob(raw_len: int, counts: list[int], stream: bytes, mode: int = 0,
                 coder: int = 0) -> bytes:
    """A current-version container holding one group with the given (possibly false) counts."""
    from iclr24.papers.lm_compression.model_coding import _put_varint

    out = bytearray(b"LMC" + bytes([FORMAT_VERSION]))
    _put_varint(raw_len, out)
    _put_varint(0, out)
    _put_varint(max(1, len(counts)), out)
    out.append(mode)
    out += bytes(4)
    _put_varint(len(counts), out)
    for n in counts:
        _put_varint(n, out)
    out.append(coder)
    _put_varint(len(stream), out)
    return bytes(out) + stream


def test_forged_token_counts_fail_before_or_soon_after_decoding_starts():
    model = _ngram()  # no context limit: only the stream can bound the count
    stream = encode_token_sequences(model, [model.tokenizer.encode(TEXT[:200])])
    # a count far beyond what the stream's bits can hold is refused before decoding
    cap = max_decodable_tokens(len(stream), 256)
    with pytest.raises(ValueError, match="holds at most"):
        decompress(_forged_blob(10**9, [cap + 1], stream), model)
    # byte models: more tokens than raw bytes is refused
    with pytest.raises(ValueError, match="raw bytes"):
        decompress(_forged_blob(199, [200], stream), model)
    # a count the cap allows but the stream does not carry: once the stream's words are used
    # up, the decoder stops when the symbols it still produces carry more information than its
    # state can hold (or constriction meets impossible data) — long before 10**6 steps, though
    # an adaptive model that grows confident in the zero-padding garbage can take thousands
    calls = []
    with pytest.raises(ValueError, match="corrupted stream"):
        decode_token_sequences(model, stream, [10**6], progress=lambda t, n: calls.append(t))
    assert len(calls) < 10**4


def test_max_decodable_tokens_bounds_every_real_stream():
    model = _ngram()
    for data in (b"", b"a" * 300, TEXT[:300]):
        stream = encode_token_sequences(model, [model.tokenizer.encode(data)])
        assert len(data) <= max_decodable_tokens(len(stream), 256)
    # the ε-floor leaves no token more likely than 1 − 255ε (half of it taken for rounding)
    min_bits = -math.log2(1 - 0.5 * 255 * FLOAT32_EPS)
    assert max_decodable_tokens(1, 256) == int((8 + 128) / min_bits) + 1
    with pytest.raises(ValueError, match="vocab_size"):
        max_decodable_tokens(1, 1)


def test_old_format_version_is_refused_clearly():
    model = _ngram()
    blob = compress(TEXT[:50], model)
    assert blob[:4] == b"LMC\x04"
    with pytest.raises(ValueError, match="format version 1"):
        decompress(b"LMC1" + blob[4:], model)
    for old in (2, 3):
        with pytest.raises(ValueError, match=f"format version {old}"):
            decompress(b"LMC" + bytes([old]) + blob[4:], model)


def test_decoding_with_a_different_model_is_detected():
    blob = compress(TEXT[:120], _ngram())
    other = AdaptiveNGramModel(order=1).fit(b"completely different training text")
    with pytest.raises(ValueError, match="corrupted|checksum"):
        decompress(blob, other)


def test_utf8_chunks_never_split_characters():
    text = "naïve café — ✓ ok ".encode() * 10
    pieces = utf8_chunks(text, 7)
    assert b"".join(pieces) == text
    assert all(len(p) <= 7 for p in pieces)
    for p in pieces:
        p.decode("utf-8")
    with pytest.raises(ValueError):
        utf8_chunks(text, 2)


# ----------------------------------------------------------------------------- n-gram

def test_ngram_distribution_normalised_and_learns():
    model = _ngram()
    lp = model.log_probs(list(TEXT[:40]))
    np.testing.assert_allclose(np.exp(lp).sum(-1), 1.0, atol=1e-5)  # float32 arithmetic
    # row 0 has no context: it is the order-0 (unigram) estimate
    assert np.argmax(lp[0]) == ord(" ")
    # a repeated phrase is cheap, random bytes are not
    assert code_length_bits(TEXT[:100], model) / 100 < 2.0
    rnd = np.random.default_rng(0).integers(0, 256, 100, dtype=np.uint8).tobytes()
    assert code_length_bits(rnd, model) / 100 > 7.0
    assert model.num_parameters > 0


def test_ngram_witten_bell_closed_form_order0():
    model = AdaptiveNGramModel(order=0, adaptive=False).fit(b"aab")
    p = np.exp(model.log_probs([0])[0])
    # n(a)=2, n(b)=1, n=3, u=2: p(a) = (2 + 2/256)/5, p(c) = (2/256)/5
    assert p[ord("a")] == pytest.approx((2 + 2 / 256) / 5)
    assert p[ord("c")] == pytest.approx((2 / 256) / 5)


def test_ngram_bad_input():
    with pytest.raises(ValueError, match="empty corpus"):
        AdaptiveNGramModel().fit(b"")
    with pytest.raises(ValueError, match="order"):
        AdaptiveNGramModel(order=9)
    with pytest.raises(TypeError):
        AdaptiveNGramModel().fit("text")
    with pytest.raises(ValueError, match="smoothing"):
        AdaptiveNGramModel(smoothing="kneser")


# ----------------------------------------------------------------------------- rates & sampler

def test_adjusted_rate_and_masks():
    assert adjusted_rate(100, 1000, 50, 4) == pytest.approx(0.3)
    with pytest.raises(ValueError):
        adjusted_rate(1, 0, 1)
    shifted, missed = right_shift_bytes(bytes([255, 2, 3]))
    assert shifted == bytes([127, 1, 1]) and missed == 3
    assert mask_rescale(70, 10, 10) == pytest.approx(80)  # 8/7 for right-shifted data
    assert zero_msb_if_not_ascii(b"abc") == (b"abc", 0)
    assert zero_msb_if_not_ascii(bytes([0xC3, 0x41])) == (bytes([0x43, 0x41]), 1)
    assert zero_msb_if_not_ascii(bytes([0xFF, 0x80, 0x7F])) == (bytes([0x7F, 0x00, 0x7F]), 2)
    assert zero_msb_if_not_ascii(b"") == (b"", 0)


def test_compressor_as_generative_model():
    gz = GzipCompressor()
    lp = compressor_log_probs(gz, TEXT[:100])
    assert lp.shape == (256,)
    assert math.isclose(np.exp(lp).sum(), 1.0, rel_tol=1e-9)
    # byte-granular code lengths: many exact ties, so the distribution is flat-ish
    assert len(np.unique(np.round(lp, 9))) <= 8
    bits = compressor_continuation_bits(gz, TEXT[:100], TEXT[100:104])
    assert 0 < bits < 4 * 16
    s1 = compressor_as_sampler(gz, b"abc", 5, rng=np.random.default_rng(0))
    s2 = compressor_as_sampler(gz, b"abc", 5, rng=np.random.default_rng(0))
    assert s1 == s2 and len(s1) == 5
    with pytest.raises(ValueError, match="temperature"):
        compressor_log_probs(gz, b"", temperature=0)
    with pytest.raises(TypeError):
        compressor_log_probs(lambda b: b, b"")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_smollm2_int8_codes_exactly_and_costs_little_rate():
    from iclr24.kits.language_models import load_smollm2

    text = [b"The for statement is used to iterate over the elements of a sequence.",
            b"Exceptions are raised when an error is detected during execution."]
    fp32 = code_chunks(text, load_smollm2(), group_size=2, separate=False)
    int8 = code_chunks(text, load_smollm2(quantize="int8"), group_size=2, separate=False)
    assert fp32.roundtrip_ok and int8.roundtrip_ok
    assert int8.ideal_rate < 1.3 * fp32.ideal_rate
