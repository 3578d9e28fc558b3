"""Classical compressors of the language-model kit: round trips and header accounting."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.kits.language_models import (
    Compressor,
    GzipCompressor,
    PngCompressor,
    chunked_rate,
    classical_compressors,
    near_square_shape,
    unchunked_rate,
)

ALL = classical_compressors()


@pytest.mark.parametrize("name", sorted(ALL))
def test_roundtrip_all_byte_values_and_empty(name):
    comp = ALL[name]
    data = bytes(range(256)) * 8
    assert comp.decompress(comp.compress(data)) == data
    assert comp.decompress(comp.compress(b"")) == b""
    assert comp.decompress(comp.compress(b"\x07")) == b"\x07"


@settings(max_examples=25, deadline=None)
@given(st.binary(max_size=700), st.sampled_from(sorted(ALL)))
def test_roundtrip_property(data, name):
    comp = ALL[name]
    assert comp.decompress(comp.compress(data)) == data


def test_header_is_length_of_one_byte_and_counted_once():
    gz = GzipCompressor()
    assert gz.header_bytes == len(gzip.compress(b"\x00", compresslevel=9, mtime=0))
    chunks = [bytes([i]) * 100 for i in range(5)]
    once = chunked_rate(chunks, gz, count_header_once=True, verify=True)
    every = chunked_rate(chunks, gz, count_header_once=False)
    assert every.compressed_bytes - once.compressed_bytes == 4 * gz.header_bytes
    assert once.rate == pytest.approx(once.compressed_bytes / 500)
    whole = unchunked_rate(b"".join(chunks), gz)
    assert whole.n_chunks == 1 and whole.raw_bytes == 500


def test_png_uses_near_square_image_and_flac_compresses_smooth_audio():
    assert near_square_shape(2048) == (32, 64)
    assert near_square_shape(7) == (1, 7)
    t = np.arange(4096)
    smooth = (128 + 100 * np.sin(2 * np.pi * t / 64)).astype(np.uint8).tobytes()
    rnd = np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes()
    flac = ALL["flac"]
    assert len(flac.compress(smooth)) < 0.5 * len(flac.compress(rnd))
    assert len(ALL["png"].compress(bytes(2048))) < 200
    # an image with vertical stripes: the true width keeps rows aligned, PNG's filters exploit it
    stripes = np.tile((np.arange(64) * 4).astype(np.uint8), 16).tobytes()
    true_w = PngCompressor(width=64)
    assert true_w.decompress(true_w.compress(stripes)) == stripes
    assert len(true_w.compress(stripes)) <= len(ALL["png"].compress(stripes))
    with pytest.raises(ValueError, match="width"):
        PngCompressor(width=0)


def test_corrupted_streams_and_bad_input():
    for name, comp in ALL.items():
        blob = comp.compress(b"hello world " * 50)
        bad = blob[: len(blob) // 2]
        try:
            out = comp.decompress(bad)
        except ValueError as exc:
            assert name in str(exc)
        else:  # a codec may decode a prefix; it must never claim the full original
            assert out != b"hello world " * 50
    with pytest.raises(TypeError):
        GzipCompressor().compress("text")
    with pytest.raises(ValueError, match="level"):
        GzipCompressor(level=12)
    with pytest.raises(ValueError, match="unknown compressor"):
        classical_compressors(["brotli9000"])
    with pytest.raises(ValueError, match="non-empty"):
        chunked_rate([], GzipCompressor())
    with pytest.raises(TypeError):
        chunked_rate([b"a"], object())
    assert isinstance(GzipCompressor(), Compressor)
