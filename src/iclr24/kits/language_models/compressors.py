"""Classical lossless compressors behind one interface, with the paper's header accounting.

Every :class:`Compressor` has ``name``, ``compress(bytes) -> bytes``, ``decompress(bytes) ->
bytes`` (exact inverse) and ``header_bytes`` = ``len(compress(b"\\x00"))``: the container
overhead that "Language Modeling Is Compression" (Sec. 3.1, ``compress.py``) counts only once
when a data set is compressed chunk by chunk::

    chunked rate = (Σ_i |C(chunk_i)| − header_bytes · (n_chunks − 1)) / Σ_i |chunk_i|

Settings (fixed, printed in ``repr``): gzip level 9, LZMA (xz container, preset 6), zstd level
19, bz2 level 9, PNG via Pillow with ``optimize=True`` on a near-square 8-bit grayscale image
(2048 bytes -> 32×64), FLAC via soundfile (libsndfile) on 8-bit mono 16 kHz samples at the
highest compression level libsndfile exposes (the paper's ffmpeg level 12 is not reachable
through libsndfile; its level 8 is the reference encoder's maximum). Empty input compresses to
``b""`` for the image/audio codecs (an image or clip cannot be empty).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Bz2Compressor",
    "ChunkedRate",
    "Compressor",
    "FlacCompressor",
    "GzipCompressor",
    "LzmaCompressor",
    "PngCompressor",
    "ZstdCompressor",
    "chunked_rate",
    "classical_compressors",
    "near_square_shape",
    "unchunked_rate",
]


def _as_bytes(data: object, name: str = "data") -> bytes:
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, got {type(data).__name__}")
    return bytes(data)


class Compressor:
    """Base class: subclasses implement ``_compress`` / ``_decompress``."""

    name = "compressor"

    def compress(self, data: bytes) -> bytes:
        return self._compress(_as_bytes(data))

    def decompress(self, blob: bytes) -> bytes:
        blob = _as_bytes(blob, "blob")
        try:
            return self._decompress(blob)
        except Exception as exc:
            raise ValueError(f"{self.name}: corrupted or foreign compressed stream ({exc})"
                             ) from exc

    @property
    def header_bytes(self) -> int:
        """Length of compressing one zero byte (the paper's header length)."""
        return len(self.compress(b"\x00"))

    def _compress(self, data: bytes) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    def _decompress(self, blob: bytes) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={v!r}" for k, v in vars(self).items())
        return f"{type(self).__name__}({fields})"


class GzipCompressor(Compressor):
    name = "gzip"

    def __init__(self, level: int = 9) -> None:
        if not 0 <= level <= 9:
            raise ValueError(f"level must be in [0, 9], got {level!r}")
        self.level = level

    def _compress(self, data: bytes) -> bytes:
        return gzip.compress(data, compresslevel=self.level, mtime=0)

    def _decompress(self, blob: bytes) -> bytes:
        return gzip.decompress(blob)


class LzmaCompressor(Compressor):
    name = "lzma"

    def __init__(self, preset: int = 6) -> None:
        if not 0 <= preset <= 9:
            raise ValueError(f"preset must be in [0, 9], got {preset!r}")
        self.preset = preset

    def _compress(self, data: bytes) -> bytes:
        return lzma.compress(data, preset=self.preset)

    def _decompress(self, blob: bytes) -> bytes:
        return lzma.decompress(blob)


class ZstdCompressor(Compressor):
    name = "zstd"

    def __init__(self, level: int = 19) -> None:
        if not 1 <= level <= 22:
            raise ValueError(f"level must be in [1, 22], got {level!r}")
        self.level = level

    def _compress(self, data: bytes) -> bytes:
        import zstandard

        return zstandard.ZstdCompressor(level=self.level).compress(data)

    def _decompress(self, blob: bytes) -> bytes:
        import zstandard

        return zstandard.ZstdDecompressor().decompress(blob)


class Bz2Compressor(Compressor):
    name = "bz2"

    def __init__(self, level: int = 9) -> None:
        if not 1 <= level <= 9:
            raise ValueError(f"level must be in [1, 9], got {level!r}")
        self.level = level

    def _compress(self, data: bytes) -> bytes:
        return bz2.compress(data, compresslevel=self.level)

    def _decompress(self, blob: bytes) -> bytes:
        return bz2.decompress(blob)


def near_square_shape(n: int) -> tuple[int, int]:
    """(height, width) with height·width = n, height the largest divisor ≤ √n (2048 -> 32×64)."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    h = math.isqrt(n)
    while n % h:
        h -= 1
    return h, n // h


class PngCompressor(Compressor):
    """Bytes as an 8-bit grayscale image, PNG via Pillow.

    width: the image width when the bytes are raster rows of known width (e.g. 64 for 32×64
    patches), used whenever it divides the length; otherwise the near-square shape of the
    paper's code (2048 -> 32×64).
    """

    name = "png"

    def __init__(self, optimize: bool = True, width: int | None = None) -> None:
        if width is not None and (not isinstance(width, int) or width < 1):
            raise ValueError(f"width must be a positive int or None, got {width!r}")
        self.optimize = optimize
        self.width = width

    def _compress(self, data: bytes) -> bytes:
        if not data:
            return b""
        from PIL import Image

        if self.width is not None and len(data) % self.width == 0:
            h, w = len(data) // self.width, self.width
        else:
            h, w = near_square_shape(len(data))
        img = Image.frombytes("L", (w, h), data)
        buf = io.BytesIO()
        img.save(buf, format="PNG", optimize=self.optimize)
        return buf.getvalue()

    def _decompress(self, blob: bytes) -> bytes:
        if not blob:
            return b""
        from PIL import Image

        with Image.open(io.BytesIO(blob)) as img:
            img.load()
            if img.mode != "L":
                raise ValueError(f"expected an 8-bit grayscale PNG, got mode {img.mode}")
            return img.tobytes()


class FlacCompressor(Compressor):
    """Bytes as 8-bit unsigned mono samples at ``sample_rate`` Hz, FLAC via soundfile."""

    name = "flac"

    def __init__(self, sample_rate: int = 16_000, compression_level: float = 1.0) -> None:
        if sample_rate < 1:
            raise ValueError(f"sample_rate must be >= 1, got {sample_rate!r}")
        if not 0.0 <= compression_level <= 1.0:
            raise ValueError(f"compression_level must be in [0, 1], got {compression_level!r}")
        self.sample_rate = sample_rate
        self.compression_level = compression_level

    def _compress(self, data: bytes) -> bytes:
        if not data:
            return b""
        import soundfile as sf

        # unsigned 8-bit -> signed 8-bit (FLAC stores signed PCM)
        samples = (np.frombuffer(data, dtype=np.uint8).astype(np.int16) - 128).astype(np.int16)
        buf = io.BytesIO()
        with sf.SoundFile(buf, mode="w", samplerate=self.sample_rate, channels=1, format="FLAC",
                          subtype="PCM_S8", compression_level=self.compression_level) as f:
            # int16 input is scaled by libsndfile: shift into the high byte
            f.write((samples.astype(np.int32) << 8).astype(np.int16))
        return buf.getvalue()

    def _decompress(self, blob: bytes) -> bytes:
        if not blob:
            return b""
        import soundfile as sf

        samples, _ = sf.read(io.BytesIO(blob), dtype="int16")
        return ((samples.astype(np.int32) >> 8) + 128).astype(np.uint8).tobytes()


def classical_compressors(names: Sequence[str] | None = None) -> dict[str, Compressor]:
    """Default-configured compressors by name (all six, or the ``names`` asked for)."""
    all_ = {c.name: c for c in (GzipCompressor(), LzmaCompressor(), ZstdCompressor(),
                                Bz2Compressor(), PngCompressor(), FlacCompressor())}
    if names is None:
        return all_
    unknown = [n for n in names if n not in all_]
    if unknown:
        raise ValueError(f"unknown compressor(s) {unknown}; valid: {sorted(all_)}")
    return {n: all_[n] for n in names}


@dataclass(frozen=True)
class ChunkedRate:
    """Result of compressing a data set chunk by chunk (rate = compressed / raw)."""

    rate: float
    raw_bytes: int
    compressed_bytes: int
    n_chunks: int
    header_bytes: int
    seconds: float

    @property
    def kb_per_second(self) -> float:
        return self.raw_bytes / 1024 / self.seconds if self.seconds > 0 else float("inf")


def chunked_rate(chunks: Sequence[bytes], compressor: Compressor, *,
                 count_header_once: bool = True, verify: bool = False) -> ChunkedRate:
    """Compress each chunk independently; with ``count_header_once`` the header is paid once
    for the whole data set (paper's accounting for classical compressors).

    verify: decompress every chunk and raise if any does not round-trip.
    """
    if not isinstance(compressor, Compressor):
        raise TypeError(f"compressor must be a Compressor, got {type(compressor).__name__}")
    chunks = [_as_bytes(c, "chunks[i]") for c in chunks]
    if not chunks or not any(chunks):
        raise ValueError("chunks must hold at least one non-empty chunk")
    t0 = time.perf_counter()
    blobs = [compressor.compress(c) for c in chunks]
    seconds = time.perf_counter() - t0
    if verify:
        for i, (c, b) in enumerate(zip(chunks, blobs)):
            if compressor.decompress(b) != c:
                raise RuntimeError(f"{compressor.name} failed to round-trip chunk {i}")
    header = compressor.header_bytes
    total = sum(len(b) for b in blobs)
    if count_header_once:
        total -= header * (len(chunks) - 1)  # header paid once for the data set
    raw = sum(len(c) for c in chunks)
    return ChunkedRate(total / raw, raw, total, len(chunks), header, seconds)


def unchunked_rate(data: bytes, compressor: Compressor) -> ChunkedRate:
    """The whole stream compressed at once (the paper's 'unchunked' rows)."""
    data = _as_bytes(data)
    if not data:
        raise ValueError("data must be non-empty")
    t0 = time.perf_counter()
    blob = compressor.compress(data)
    seconds = time.perf_counter() - t0
    return ChunkedRate(len(blob) / len(data), len(data), len(blob), 1, compressor.header_bytes,
                       seconds)
