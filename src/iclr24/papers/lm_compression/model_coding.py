"""Lossless compression with any predictive model + arithmetic coding (paper Sec. 2).

Encoding symbol x_t costs −log2 p(x_t | x_<t) bits (+ ≤ 2 bits and padding per sequence); the
decoder re-runs the model on the prefix it has already decoded. Any object with the kit's
backend interface works: ``session(batch)`` (``next_log_probs() -> (B, V)``, ``feed``),
``vocab_size``, ``context_length`` and ``tokenizer`` — the tiny transformer, the n-gram model,
SmolLM2 through its BPE tokenizer.

Bit-identical distributions. Encoder and decoder both use the model's *incremental* path
(``session``) with the same batch shape, feeding the same tokens in the same order, so they see
the same floats and the same integer frequencies. The batched path (``log_probs``) is not used for
coding: on CPU a (T, d) and a (1, d) matrix product may round differently, which would desync a
decoder (the official code has a slow incremental mode for the same reason). Several chunks are
coded in lockstep (one session of batch B) for speed; such a group must be decoded as the same
group, which :func:`compress` / :func:`decompress` guarantee by storing the group in one blob.
Decoding on a different machine or library version may see different float rounding — the same
caveat holds for every neural compressor.

Stream format of :func:`compress` (what is stored besides the arithmetic-coded bits)::

    b"LMC1" | varint raw length | varint chunk size | CRC-32 of the raw bytes (4 bytes)
    | varint number of chunks | per chunk: varint token count, varint bitstream length | bitstreams

The paper's rates count only the bitstreams (lengths are side information); the claims report
that accounting, :func:`compress` adds the container so a blob is self-describing and corruption
is detected (CRC mismatch -> ``ValueError``). A header is not trusted: before the model runs,
each declared token count is capped by the model's context, by the raw length for byte models
and by what its bitstream can hold (:func:`max_decodable_tokens`); while decoding, reading a
bitstream past its last bit fails at once.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr24.kits.language_models import torch_threads

from .arithmetic_coding import ArithmeticDecoder, ArithmeticEncoder, quantize_pdf

__all__ = [
    "ModelCodingResult",
    "code_chunks",
    "code_length_bits",
    "compress",
    "decode_token_sequences",
    "decompress",
    "encode_token_sequences",
    "max_decodable_tokens",
    "utf8_chunks",
]

_MAGIC = b"LMC1"


def _check_model(model: Any) -> None:
    for attr in ("session", "vocab_size", "tokenizer"):
        if not hasattr(model, attr):
            raise TypeError(f"model must provide the backend interface (missing {attr!r}); "
                            f"got {type(model).__name__}")


def _check_lengths(model: Any, lengths: Sequence[int], name: str) -> None:
    ctx = getattr(model, "context_length", None)
    if ctx is not None and lengths and max(lengths) > ctx:
        raise ValueError(f"{name}: a sequence of {max(lengths)} tokens is longer than the "
                         f"model's context_length={ctx}; use a smaller chunk_size")


def encode_token_sequences(model: Any, sequences: Sequence[Sequence[int]], *,
                           precision: int = 32, total_bits: int = 24, threads: int = 1,
                           progress: Callable[[int, int], None] | None = None,
                           ideal_bits: list[float] | None = None) -> list[bytes]:
    """Arithmetic-code each token sequence with ``model``; all sequences advance in lockstep.

    Returns one bitstream per sequence. Decode with :func:`decode_token_sequences` on the same
    group of sequences (same order), giving their lengths. The model runs on ``threads`` torch
    threads on both sides (1: fastest for one-token steps, and a fixed reduction order).
    ideal_bits: if a list is given, it receives each sequence's ideal code length
    −Σ log2 p(x_t | x_<t) under the (unquantised) model distributions used for coding.
    """
    _check_model(model)
    seqs = [list(map(int, s)) for s in sequences]
    if not seqs:
        return []
    v = int(model.vocab_size)
    for i, s in enumerate(seqs):
        if s and (min(s) < 0 or max(s) >= v):
            raise ValueError(f"sequences[{i}] holds ids outside [0, {v})")
    lengths = [len(s) for s in seqs]
    _check_lengths(model, lengths, "sequences")
    encoders = [ArithmeticEncoder(precision, total_bits) for _ in seqs]
    steps = max(lengths)
    nats = [0.0] * len(seqs)
    with torch_threads(threads):
        sess = model.session(len(seqs)) if steps else None
        for t in range(steps):
            log_p = sess.next_log_probs()
            freqs = quantize_pdf(np.exp(log_p), total_bits)
            for b, s in enumerate(seqs):
                if t < len(s):
                    encoders[b].encode(freqs[b], s[t])
                    nats[b] -= float(log_p[b, s[t]])
            if t + 1 < steps:
                # finished rows are fed 0: the decoder feeds the same, so both stay in sync
                sess.feed([s[t] if t < len(s) else 0 for s in seqs])
            if progress is not None:
                progress(t + 1, steps)
    if ideal_bits is not None:
        ideal_bits.extend(n / np.log(2) for n in nats)
    return [enc.finish()[0] for enc in encoders]


def decode_token_sequences(model: Any, bitstreams: Sequence[bytes], lengths: Sequence[int], *,
                           precision: int = 32, total_bits: int = 24, threads: int = 1,
                           progress: Callable[[int, int], None] | None = None
                           ) -> list[list[int]]:
    """Inverse of :func:`encode_token_sequences` (same model, same group, same order)."""
    _check_model(model)
    if len(bitstreams) != len(lengths):
        raise ValueError(f"bitstreams ({len(bitstreams)}) and lengths ({len(lengths)}) differ "
                         "in number")
    lengths = [int(n) for n in lengths]
    if any(n < 0 for n in lengths):
        raise ValueError("lengths must be >= 0")
    if not lengths:
        return []
    _check_lengths(model, lengths, "lengths")
    _check_token_counts(lengths, [len(b) for b in bitstreams], int(model.vocab_size),
                        total_bits)
    decoders = [ArithmeticDecoder(b, precision, total_bits) for b in bitstreams]
    # a legitimate stream is never read past its last bit plus the initial window: the decoder
    # shifts in one bit per encoder output bit, and the encoder's flush adds 2 more
    read_limit = [8 * len(b) + precision for b in bitstreams]
    out: list[list[int]] = [[] for _ in lengths]
    steps = max(lengths)
    with torch_threads(threads):
        sess = model.session(len(lengths)) if steps else None
        for t in range(steps):
            freqs = quantize_pdf(np.exp(sess.next_log_probs()), total_bits)
            for b, n in enumerate(lengths):
                if t < n:
                    out[b].append(decoders[b].decode(freqs[b]))
                    if decoders[b].bits_consumed > read_limit[b]:
                        raise ValueError(
                            f"corrupted stream: sequence {b} declares {n} tokens but its "
                            f"{len(bitstreams[b])}-byte bitstream ran out after {t + 1}")
            if t + 1 < steps:
                sess.feed([out[b][t] if t < n else 0 for b, n in enumerate(lengths)])
            if progress is not None:
                progress(t + 1, steps)
    return out


def max_decodable_tokens(n_stream_bytes: int, vocab_size: int, total_bits: int = 24) -> int:
    """The most tokens a bitstream of ``n_stream_bytes`` bytes can hold under any model.

    :func:`~.arithmetic_coding.quantize_pdf` gives every symbol a frequency >= 1, so no token
    is more likely than ``p_max = (2^total_bits − V + 1) / 2^total_bits`` and each costs at least
    ``−log2 p_max`` bits; the coder's code length is at most 8·bytes + 2 bits (its interval
    never falls below a quarter of the range).
    """
    total = 1 << total_bits
    min_bits = -np.log2((total - vocab_size + 1) / total)
    return int((8 * n_stream_bytes + 2) / min_bits * (1 + 1e-9)) + 1


def _check_token_counts(lengths: Sequence[int], stream_bytes: Sequence[int], vocab_size: int,
                        total_bits: int) -> None:
    for b, (n, size) in enumerate(zip(lengths, stream_bytes)):
        cap = max_decodable_tokens(size, vocab_size, total_bits)
        if n > cap:
            raise ValueError(f"corrupted stream: sequence {b} declares {n} tokens but a "
                             f"{size}-byte bitstream holds at most {cap} for a vocabulary of "
                             f"{vocab_size}")


def code_length_bits(data: bytes, model: Any) -> float:
    """Ideal code length −Σ log2 p(x_t | x_<t) of ``data`` under ``model`` (batched pass)."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    tokens = model.tokenizer.encode(bytes(data))
    if not tokens:
        return 0.0
    _check_lengths(model, [len(tokens)], "data")
    lp = model.log_probs(tokens)
    return float(-lp[np.arange(len(tokens)), tokens].sum() / np.log(2))


# ----------------------------------------------------------------------------- container

def _put_varint(n: int, out: bytearray) -> None:
    while True:
        byte = n & 0x7F
        n >>= 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return


def _get_varint(blob: bytes, pos: int) -> tuple[int, int]:
    n = shift = 0
    while True:
        if pos >= len(blob):
            raise ValueError("corrupted stream: truncated header")
        byte = blob[pos]
        pos += 1
        n |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return n, pos
        shift += 7
        if shift > 63:
            raise ValueError("corrupted stream: malformed length field")


def utf8_chunks(data: bytes, max_bytes: int) -> list[bytes]:
    """Cut UTF-8 ``data`` into pieces of at most ``max_bytes`` bytes, never inside a character
    (so each piece can be tokenized by a text tokenizer on its own)."""
    if max_bytes < 4:
        raise ValueError(f"max_bytes must be >= 4 (one UTF-8 character), got {max_bytes}")
    out, start = [], 0
    while start < len(data):
        end = min(start + max_bytes, len(data))
        while end < len(data) and end > start and (data[end] & 0xC0) == 0x80:
            end -= 1  # step back from a continuation byte to a character boundary
        out.append(data[start:end])
        start = end
    return out


def _byte_level(model: Any) -> bool:
    """One token per byte (the kit's ``ByteTokenizer``)."""
    return model.tokenizer.vocab_size == 256 and type(model.tokenizer).__name__ == "ByteTokenizer"


def _split(data: bytes, chunk_size: int, model: Any) -> list[bytes]:
    if not data:
        return []
    if chunk_size == 0:
        return [data]
    if _byte_level(model):
        return [data[i:i + chunk_size] for i in range(0, len(data), chunk_size)]
    return utf8_chunks(data, chunk_size)


def compress(data: bytes, model: Any, *, chunk_size: int | None = None, precision: int = 32,
             total_bits: int = 24) -> bytes:
    """Losslessly compress ``data`` with ``model`` (see the module docstring for the format).

    chunk_size: cut the data into independently modelled chunks of this many bytes (the
    paper's 2048); ``None`` means the model's context length for byte models, else one chunk.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    _check_model(model)
    data = bytes(data)
    if chunk_size is None:
        ctx = getattr(model, "context_length", None)
        chunk_size = ctx if (ctx is not None and model.vocab_size == 256) else 0
    if not isinstance(chunk_size, int) or chunk_size < 0:
        raise ValueError(f"chunk_size must be an int >= 0 or None, got {chunk_size!r}")
    chunks = _split(data, chunk_size, model)
    tokens = [model.tokenizer.encode(c) for c in chunks]
    streams = encode_token_sequences(model, tokens, precision=precision, total_bits=total_bits)
    out = bytearray(_MAGIC)
    _put_varint(len(data), out)
    _put_varint(chunk_size, out)
    out += zlib.crc32(data).to_bytes(4, "big")
    _put_varint(len(chunks), out)
    for toks, s in zip(tokens, streams):
        _put_varint(len(toks), out)
        _put_varint(len(s), out)
    for s in streams:
        out += s
    return bytes(out)


def decompress(blob: bytes, model: Any, *, precision: int = 32, total_bits: int = 24) -> bytes:
    """Inverse of :func:`compress` with the same model; a damaged blob raises ``ValueError``."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"blob must be bytes, got {type(blob).__name__}")
    _check_model(model)
    blob = bytes(blob)
    if blob[:4] != _MAGIC:
        raise ValueError("corrupted stream: not an lm_compression blob (bad magic)")
    pos = 4
    n_raw, pos = _get_varint(blob, pos)
    _, pos = _get_varint(blob, pos)
    if pos + 4 > len(blob):
        raise ValueError("corrupted stream: truncated header")
    crc = int.from_bytes(blob[pos:pos + 4], "big")
    pos += 4
    n_chunks, pos = _get_varint(blob, pos)
    if n_chunks > len(blob):
        raise ValueError("corrupted stream: implausible chunk count")
    lengths, sizes = [], []
    for _ in range(n_chunks):
        n, pos = _get_varint(blob, pos)
        s, pos = _get_varint(blob, pos)
        lengths.append(n)
        sizes.append(s)
    if pos + sum(sizes) != len(blob):
        raise ValueError("corrupted stream: bitstream lengths do not match the blob size")
    ctx = getattr(model, "context_length", None)
    if ctx is not None and lengths and max(lengths) > ctx:
        raise ValueError("corrupted stream (or wrong model): a chunk is longer than the model's "
                         "context")
    if sum(lengths) > n_raw and _byte_level(model):
        raise ValueError(f"corrupted stream: {sum(lengths)} byte tokens declared for {n_raw} "
                         "raw bytes")
    # fail before any model call when a count exceeds what its bitstream can hold
    _check_token_counts(lengths, sizes, int(model.vocab_size), total_bits)
    streams = []
    for s in sizes:
        streams.append(blob[pos:pos + s])
        pos += s
    tokens = decode_token_sequences(model, streams, lengths, precision=precision,
                                    total_bits=total_bits)
    try:
        data = b"".join(model.tokenizer.decode(t) for t in tokens)
    except ValueError as exc:
        raise ValueError(f"corrupted stream: decoded tokens are invalid ({exc})") from exc
    if len(data) != n_raw or zlib.crc32(data) != crc:
        raise ValueError("corrupted stream (or a different model): checksum mismatch after "
                         "decoding")
    return data


# ----------------------------------------------------------------------------- evaluation

@dataclass(frozen=True)
class ModelCodingResult:
    """Chunked coding of a data set with a model (paper accounting: every bitstream counted).

    rate = Σ bitstream bytes / Σ raw bytes; ideal_rate = Σ (−log2 p) / 8 / raw bytes, with p the
    model's distributions along the coding path (before quantisation).
    """

    rate: float
    ideal_rate: float
    raw_bytes: int
    compressed_bytes: int
    n_chunks: int
    n_tokens: int
    encode_seconds: float
    decode_seconds: float | None
    roundtrip_ok: bool | None

    @property
    def encode_kb_per_s(self) -> float:
        return self.raw_bytes / 1024 / self.encode_seconds if self.encode_seconds else np.inf

    @property
    def decode_kb_per_s(self) -> float:
        if not self.decode_seconds:
            return float("nan")
        return self.raw_bytes / 1024 / self.decode_seconds


def code_chunks(chunks: Sequence[bytes], model: Any, *, verify: bool = True,
                group_size: int = 64, precision: int = 32, total_bits: int = 24,
                progress: Callable[[float, str], None] | None = None) -> ModelCodingResult:
    """Arithmetic-code every chunk independently (in lockstep groups of ``group_size``),
    measure the real and the ideal rate, and with ``verify`` decode every chunk and check it.
    """
    _check_model(model)
    chunks = [bytes(c) for c in chunks]
    if not chunks or not any(chunks):
        raise ValueError("chunks must hold at least one non-empty chunk")
    tokens = [model.tokenizer.encode(c) for c in chunks]
    _check_lengths(model, [len(t) for t in tokens], "chunks")
    ideal_bits = 0.0
    compressed = 0
    enc_s = dec_s = 0.0
    ok = True
    groups = [list(range(i, min(i + group_size, len(chunks))))
              for i in range(0, len(chunks), group_size)]
    for gi, group in enumerate(groups):
        seqs = [tokens[i] for i in group]
        t0 = time.perf_counter()
        bits: list[float] = []
        streams = encode_token_sequences(model, seqs, precision=precision,
                                         total_bits=total_bits, ideal_bits=bits)
        enc_s += time.perf_counter() - t0
        ideal_bits += sum(bits)
        compressed += sum(len(s) for s in streams)
        if verify:
            t0 = time.perf_counter()
            back = decode_token_sequences(model, streams, [len(s) for s in seqs],
                                          precision=precision, total_bits=total_bits)
            dec_s += time.perf_counter() - t0
            ok = ok and all(model.tokenizer.decode(b) == chunks[i] for b, i in zip(back, group))
        if progress is not None:
            progress((gi + 1) / len(groups), f"coded {group[-1] + 1}/{len(chunks)} chunks")
    raw = sum(len(c) for c in chunks)
    return ModelCodingResult(rate=compressed / raw, ideal_rate=ideal_bits / 8 / raw,
                             raw_bytes=raw, compressed_bytes=compressed, n_chunks=len(chunks),
                             n_tokens=sum(len(t) for t in tokens), encode_seconds=enc_s,
                             decode_seconds=dec_s if verify else None,
                             roundtrip_ok=ok if verify else None)
