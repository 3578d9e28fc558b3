"""The compressor a user runs: lanes with shared counts (the n-gram's default), the adaptive
variant and stored groups (never expanding, never worse than the model's adaptive part), the
command line's model names."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.language_models import pydoc_topics_corpus
from iclr24.papers.lm_compression import (
    AdaptiveNGramModel,
    compress,
    decode_token_sequences,
    decompress,
    encode_token_sequences,
    supports_shared_counts,
)
from iclr24.papers.lm_compression.model_coding import _read_header

# a small Russian text (not in the training prose): Cyrillic is 2 bytes per letter in UTF-8
_RU = [
    "в", "этом", "разделе", "описаны", "параметры", "командной", "строки", "и", "переменные",
    "окружения", "которые", "влияют", "на", "поведение", "интерпретатора", "модуль",
    "содержит", "функции", "для", "работы", "с", "файлами", "строками", "числами", "ошибка",
    "возникает", "когда", "аргумент", "имеет", "неверный", "тип",
]


@functools.lru_cache(maxsize=1)
def _pydoc_ngram() -> AdaptiveNGramModel:
    return AdaptiveNGramModel(order=3).fit(pydoc_topics_corpus().train)


def _russian(n_words: int, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    return " ".join(_RU[i] for i in rng.integers(0, len(_RU), n_words)).encode("utf-8")


def _random(n: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


def test_random_bytes_are_stored_not_expanded():
    model = _pydoc_ngram()
    data = _random(12_000)
    blob = compress(data, model)
    head = _read_header(blob)
    assert head.coders == [2] and len(blob) <= len(data) + 40   # a header, no expansion
    assert decompress(blob, model) == data
    chunked = compress(data, model, chunk_size=2048)
    assert len(chunked) <= len(data) + 40 + 3 * 6
    assert decompress(chunked, model) == data


def test_prose_is_model_coded_and_beats_its_raw_size():
    model = _pydoc_ngram()
    data = pydoc_topics_corpus().heldout[:9000]
    blob = compress(data, model)
    head = _read_header(blob)
    assert head.coders == [0] and head.mode == 1 and len(blob) < 0.5 * len(data)
    assert decompress(blob, model) == data


def test_text_unlike_the_training_prose_is_never_worse_than_the_adaptive_variant():
    model = _pydoc_ngram()
    data = _russian(2500)
    blob = compress(data, model)
    variant = compress(data, model.adaptive_only())
    assert len(blob) <= len(variant)
    # the English counts lose on Cyrillic bytes: the adaptive variant is what got kept
    assert _read_header(blob).coders[0] == 1          # (a short rest may be stored)
    assert decompress(blob, model) == data
    # and the variant alone decodes with the variant (an unfitted model is its own variant)
    assert decompress(variant, model.adaptive_only()) == data


def test_every_group_keeps_its_own_best_coder():
    model = _pydoc_ngram()
    prose = pydoc_topics_corpus().heldout[:2048]
    data = prose + _random(2048) + _russian(400)[:2048]
    blob = compress(data, model, chunk_size=2048, group_size=1)
    head = _read_header(blob)
    assert head.mode == 0 and head.coders == [0, 2, 1]
    assert head.lengths[1] == 2048                  # a stored group counts bytes
    assert decompress(blob, model) == data


def test_lanes_cut_the_file_evenly_with_the_rest_apart():
    model = _pydoc_ngram()
    data = pydoc_topics_corpus().heldout[:5 * 2048 + 7]
    blob = compress(data, model)
    head = _read_header(blob)
    assert head.mode == 1 and head.group == 5
    assert head.lengths == [2049] * 5 + [2]
    assert decompress(blob, model) == data
    # at most group_size lanes, none shorter than 2048 bytes
    head = _read_header(compress(data, model, group_size=2))
    assert head.group == 2 and head.lengths[:2] == [len(data) // 2] * 2
    assert _read_header(compress(data[:4000], model)).lengths == [4000]


@settings(max_examples=6, deadline=None)
@given(st.integers(0, 60_000), st.integers(4096, 30_000), st.integers(0, 3))
def test_lanes_roundtrip_property(offset, length, lanes):
    model = _pydoc_ngram()
    data = pydoc_topics_corpus().heldout[offset:offset + length]
    assert decompress(compress(data, model, group_size=lanes + 1), model) == data


def test_shared_counts_follow_witten_bell_over_all_rows():
    model = AdaptiveNGramModel(order=0)                # unfitted: online counts only
    shared = model.session(2, shared_counts=True)
    shared.feed([ord("a"), ord("b")])
    p = shared.next_probs()
    # n(a) = n(b) = 1, n = 2, u = 2: p(a) = (1 + 2/256) / 4, the same in both rows
    np.testing.assert_allclose(p[:, ord("a")], (1 + 2 / 256) / 4)
    np.testing.assert_allclose(p.sum(axis=1), 1.0)
    same = model.session(2, shared_counts=True)
    same.feed([ord("a"), ord("a")])                    # one context, one slot, counted twice
    np.testing.assert_allclose(same.next_probs()[:, ord("a")], (2 + 1 / 256) / 3)
    alone = model.session(2)
    alone.feed([ord("a"), ord("b")])
    assert alone.next_probs()[0, ord("a")] == pytest.approx((1 + 1 / 256) / 2)


def test_shared_counts_bad_inputs():
    model = _pydoc_ngram()
    with pytest.raises(ValueError, match="equal length"):
        encode_token_sequences(model, [[1, 2, 3], [4, 5]], shared_counts=True)
    with pytest.raises(ValueError, match="equal length"):
        decode_token_sequences(model, b"\x00" * 8, [3, 2], shared_counts=True)
    with pytest.raises(TypeError, match="shared_counts"):
        encode_token_sequences(model, [[1]], shared_counts="yes")
    with pytest.raises(TypeError, match="shared_counts"):
        model.session(2, shared_counts=1)
    with pytest.raises(TypeError, match="adaptive"):
        AdaptiveNGramModel(adaptive="no")


def test_models_without_shared_counts_use_chunks_and_refuse_lanes():
    import torch

    from iclr24.kits.language_models import CausalTransformer, TransformerConfig, TransformerLM

    torch.manual_seed(0)
    tf = TransformerLM(CausalTransformer(TransformerConfig(d_model=16, n_layers=1, n_heads=2,
                                                           context_length=64)))
    assert not supports_shared_counts(tf) and supports_shared_counts(_pydoc_ngram())
    with pytest.raises(ValueError, match="shared_counts"):
        encode_token_sequences(tf, [[1, 2]], shared_counts=True)
    blob = compress(b"x" * 100, _pydoc_ngram())
    with pytest.raises(ValueError, match="lanes"):
        decompress(blob, tf)
    data = b"a transformer codes independent chunks of its context"
    tblob = compress(data, tf)
    assert _read_header(tblob).mode == 0 and decompress(tblob, tf) == data


def test_adaptive_only_is_the_unfitted_model():
    fitted = _pydoc_ngram()
    variant = fitted.adaptive_only()
    assert variant is fitted.adaptive_only() and variant.n_train_bytes == 0
    assert (variant.order, variant.smoothing, variant.adaptive) == (3, "witten_bell", True)
    assert variant.num_parameters == 0
    assert variant.adaptive_only() is variant


def test_damaged_container_fields_are_refused():
    model = _pydoc_ngram()
    blob = compress(b"hello hello hello", model)
    head = _read_header(blob)
    bad_mode = bytearray(blob)
    bad_mode[4 + 3] = 7           # after the magic and three one-byte varints: the mode byte
    with pytest.raises(ValueError, match="mode"):
        decompress(bytes(bad_mode), model)
    bad_coder = bytearray(blob)
    bad_coder[head.offset - 2] = 9                          # the group's coder byte
    with pytest.raises(ValueError, match="coder"):
        decompress(bytes(bad_coder), model)


def test_decompress_file_accepts_every_named_model(tmp_path, monkeypatch):
    from iclr24.papers.lm_compression import command_line as cl

    model = _pydoc_ngram()
    monkeypatch.setattr(cl, "load_model", lambda spec: model)
    data = b"The for statement iterates over the items of any sequence."
    for name in cl.NAMED_MODELS:
        path = tmp_path / f"{name}.lmc"
        path.write_bytes(cl.write_lmc(name, compress(data, model)))
        out = tmp_path / f"{name}.out"
        cl.decompress_file(path, out, model_spec=name)
        assert out.read_bytes() == data
    with pytest.raises(ValueError, match="compressed with model 'smollm2-int8'"):
        cl.decompress_file(tmp_path / "smollm2-int8.lmc", tmp_path / "x", model_spec="smollm2")
    with pytest.raises(ValueError, match="model must be"):
        cl.decompress_file(tmp_path / "ngram.lmc", tmp_path / "x", model_spec="")


def test_compress_file_never_expands_random_bytes(tmp_path, monkeypatch):
    from iclr24.papers.lm_compression import command_line as cl

    monkeypatch.setattr(cl, "load_model", lambda spec: _pydoc_ngram())
    src = tmp_path / "noise.bin"
    src.write_bytes(_random(8192, seed=3))
    res = cl.compress_file(src, "ngram", None, check=True)
    assert res["roundtrip_ok"] and res["compressed_bytes"] <= 8192 + 64
    back = cl.decompress_file(tmp_path / "noise.bin.lmc", tmp_path / "noise.out")
    assert back["raw_bytes"] == 8192 and (tmp_path / "noise.out").read_bytes() == src.read_bytes()
