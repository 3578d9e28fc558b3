"""Lossless compression with any predictive model + arithmetic coding (paper Sec. 2).

Encoding symbol x_t costs −log2 p(x_t | x_<t) bits (+ a few bytes per stream); the decoder
re-runs the model on the prefix it has already decoded. Any object with the kit's backend
interface works: ``session(batch)`` (``next_log_probs() -> (B, V)``, ``feed``), ``vocab_size``,
``context_length`` and ``tokenizer`` — the tiny transformer, the n-gram model, SmolLM2 through
its BPE tokenizer. A session may also offer ``next_probs() -> (B, V)`` (the n-gram does), which
spares an exp/log round trip.

Batched chunks. Chunks are independent (each is modelled from an empty context, as in the
paper), so a group of B chunks advances in lockstep through *one* session of batch B (one
KV-cached forward per step for the whole group) and their symbols are interleaved into *one*
range-coded stream (:mod:`.range_coding`: one Rust call per step). The decoder does the same
with the same group, so it also runs B chunks per forward pass.

Bit-identical distributions. Encoder and decoder both use the model's *incremental* path
(``session``) with the same batch shape, feeding the same tokens in the same order on the same
number of torch threads, so they see the same floats. The batched path (``log_probs``) is not
used for coding: on CPU a (T, d) and a (1, d) matrix product may round differently, which would
desync a decoder (the official code has a slow incremental mode for the same reason). Decoding
on a different machine or library version may see different float rounding — the same caveat
holds for every neural compressor.

Lanes (not in the paper). Coding one long sequence advances one byte per step, which on the
decoder's side costs two compiled calls and a Rust call per byte (~45 KB/s). :func:`compress`'s
default for a byte model without a context limit whose session can share counts (the n-gram)
cuts the file into up to 64 contiguous *lanes* of >= 2048 bytes coded in lockstep whose rows
read and update *one* set of online counts: the model adapts to the whole file, and the decoder
advances every lane per step. Independent chunks (the paper's protocol) stay available through
``chunk_size`` and are what :func:`code_chunks` and the claims use.

A compressor a user can trust. Every group is coded by the model and by its adaptive variant
(the n-gram without its trained counts, ``adaptive_only``), and the shorter stream is kept; if
neither is shorter than the group's bytes the group is stored raw. So a blob is never longer
than its input plus the header, and data unlike the training text (another language, binary
data) is never coded worse than by the model's adaptive part alone.

Stream format of :func:`compress`, version 4 (version 1 held one Python-coded bitstream per
chunk; version 2 mixed the n-gram's orders in float32; version 3 had no chunking mode and no
per-group coder; all are refused with a "format version" error)::

    b"LMC" 0x04 | varint raw length | varint chunk size | varint group size
    | mode byte (0: independent chunks, 1: lanes with shared counts)
    | CRC-32 of the raw bytes (4 bytes) | varint number of chunks
    | per chunk: varint token count (its byte count in a stored group)
    | per group: coder byte (0: model, 1: its adaptive variant, 2: stored), varint stream length
    | streams

The paper's rates count only the coded bits (lengths are side information); the claims report
that accounting, :func:`compress` adds the container so a blob is self-describing and corruption
is detected (CRC mismatch -> ``ValueError``). A header is not trusted: before the model runs,
each declared token count is capped by the model's context, by the raw length for byte models
and by what its stream can hold (:func:`max_decodable_tokens`); while decoding, a stream that
runs dry while tokens are still owed fails at once.
"""

from __future__ import annotations

import inspect
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from iclr24.kits.language_models import torch_threads

from .range_coding import FLOAT32_EPS, RangeDecoder, RangeEncoder, floor_pdf

__all__ = [
    "FORMAT_VERSION",
    "ModelCodingResult",
    "code_chunks",
    "code_length_bits",
    "compress",
    "decode_token_sequences",
    "decompress",
    "encode_token_sequences",
    "max_decodable_tokens",
    "supports_shared_counts",
    "utf8_chunks",
]

FORMAT_VERSION = 4
_MAGIC = b"LMC"
_MODE_CHUNKS, _MODE_LANES = 0, 1
_CODER_MODEL, _CODER_ADAPTIVE, _CODER_STORED = 0, 1, 2
# shortest lane: a lane starts from an empty context (order-3 needs 3 bytes), so lanes of a
# few bytes would cost compression; 2048 is the paper's chunk
_LANE_MIN_BYTES = 2048
# bits a range decoder may still hold once its input words are used up (its 64-bit state, plus
# margin): more information than this decoded after exhaustion means the stream is too short
_STATE_BITS = 128
# steps per call of a session's ``block_probs`` (the n-gram encoder's fast path), and the
# fewest tokens a group must hold to take it: compiling that kernel costs ~10 s once per
# machine (numba caches it), more than it saves on the few kilobytes of a smoke run
_BLOCK_STEPS = 64
_BLOCK_MIN_TOKENS = 1 << 16


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


def supports_shared_counts(model: Any) -> bool:
    """Whether ``model.session`` takes ``shared_counts`` (rows adapting one set of counts)."""
    try:
        return "shared_counts" in inspect.signature(model.session).parameters
    except (TypeError, ValueError):
        return False


def _check_shared(model: Any, shared: bool, lengths: np.ndarray, name: str) -> None:
    if not isinstance(shared, bool):
        raise TypeError(f"shared_counts must be a bool, got {shared!r}")
    if not shared:
        return
    if not supports_shared_counts(model):
        raise ValueError(f"shared_counts=True needs a model whose session shares counts (the "
                         f"n-gram's); {type(model).__name__} has none")
    if lengths.size and lengths.min() != lengths.max():
        raise ValueError(f"{name}: shared_counts needs sequences of equal length, got "
                         f"{lengths.min()} to {lengths.max()} tokens")


def _session(model: Any, batch: int, shared: bool) -> Any:
    return model.session(batch, shared_counts=True) if shared else model.session(batch)


def _step_probs(sess: Any) -> np.ndarray:
    """(B, V) float64 probabilities of the session's next tokens."""
    if hasattr(sess, "next_probs"):
        return sess.next_probs()
    return np.exp(sess.next_log_probs())


def encode_token_sequences(model: Any, sequences: Sequence[Sequence[int]], *,
                           threads: int = 1, shared_counts: bool = False,
                           progress: Callable[[int, int], None] | None = None,
                           ideal_bits: list[float] | None = None,
                           separate_bytes: list[int] | None = None) -> bytes:
    """Range-code a group of token sequences with ``model``, all advancing in lockstep through
    one session of batch ``len(sequences)``; returns one stream for the whole group.

    Decode with :func:`decode_token_sequences` on the same group (same order), giving the
    lengths. The model runs on ``threads`` torch threads (use the same number to decode).
    ideal_bits: if a list is given, it receives each sequence's ideal code length
    −Σ log2 p(x_t | x_<t) under the (unfloored, normalised) model distributions used for coding.
    separate_bytes: if a list is given, it receives the size each sequence's stream would have
    if it were coded alone (the paper's one-bitstream-per-chunk accounting; costs one extra
    encoder call per sequence and step).
    shared_counts: the sequences are parts of one file that adapt the model together
    (``model.session(B, shared_counts=True)``, the n-gram's); they must be of equal length.
    """
    _check_model(model)
    seqs = [np.asarray(list(map(int, s)), dtype=np.int64) for s in sequences]
    if not seqs:
        return b""
    v = int(model.vocab_size)
    for i, s in enumerate(seqs):
        if s.size and (s.min() < 0 or s.max() >= v):
            raise ValueError(f"sequences[{i}] holds ids outside [0, {v})")
    lengths = np.array([s.size for s in seqs])
    _check_lengths(model, lengths.tolist(), "sequences")
    _check_shared(model, shared_counts, lengths, "sequences")
    steps = int(lengths.max())
    padded = np.zeros((len(seqs), steps), dtype=np.int64)  # finished rows are fed 0
    for b, s in enumerate(seqs):
        padded[b, :s.size] = s
    enc = RangeEncoder()
    alone = [RangeEncoder() for _ in seqs] if separate_bytes is not None else None
    nats = np.zeros(len(seqs))
    with torch_threads(threads):
        sess = _session(model, len(seqs), shared_counts) if steps else None
        block = getattr(sess, "block_probs", None) if lengths.sum() >= _BLOCK_MIN_TOKENS \
            else None
        for t0 in range(0, steps, _BLOCK_STEPS) if block is not None else ():
            # the encoder knows its tokens: a session that can score a block of known tokens
            # bit-identically to step-by-step coding (the n-gram) does _BLOCK_STEPS steps per
            # call, and the symbols of all those steps (step-major, rows in order: the order
            # the decoder reads them) go to the range coder in one call
            t1 = min(steps, t0 + _BLOCK_STEPS)
            fp, p_sym = block(padded[:, t0:t1].T, FLOAT32_EPS)
            live = lengths[None, :] > np.arange(t0, t1)[:, None]          # (K, B)
            sym = padded[:, t0:t1].T
            enc.encode(fp[live], sym[live], floor=False)
            if alone is not None:
                for b in range(len(seqs)):
                    alone[b].encode(fp[live[:, b], b], sym[live[:, b], b], floor=False)
            nats -= np.where(live, np.log(p_sym), 0.0).sum(axis=0)  # −ln p(x_t | x_<t)
            if progress is not None:
                progress(t1, steps)
        for t in range(steps) if block is None else ():
            active = np.flatnonzero(lengths > t)
            p = _step_probs(sess)
            p = p if active.size == p.shape[0] else p[active]
            sym = padded[active, t]
            fp = floor_pdf(p)
            enc.encode(fp, sym, floor=False)
            if alone is not None:
                for j, b in enumerate(active):
                    alone[b].encode(fp[j:j + 1], sym[j:j + 1], floor=False)
            # −log2 p(x_t | x_<t) (ideal code length, model distribution before the floor)
            nats[active] -= np.log(p[np.arange(active.size), sym].astype(np.float64))
            if t + 1 < steps:
                sess.feed(padded[:, t].tolist())
            if progress is not None:
                progress(t + 1, steps)
    if ideal_bits is not None:
        ideal_bits.extend((nats / np.log(2)).tolist())
    if alone is not None:
        separate_bytes.extend(len(a.finish()) for a in alone)
    return enc.finish()


def decode_token_sequences(model: Any, stream: bytes, lengths: Sequence[int], *,
                           threads: int = 1, shared_counts: bool = False,
                           progress: Callable[[int, int], None] | None = None
                           ) -> list[list[int]]:
    """Inverse of :func:`encode_token_sequences` (same model, group, order, ``shared_counts``)."""
    _check_model(model)
    if not isinstance(stream, (bytes, bytearray, memoryview)):
        raise TypeError(f"stream must be bytes, got {type(stream).__name__}")
    lengths = np.array([int(n) for n in lengths], dtype=np.int64)
    if np.any(lengths < 0):
        raise ValueError("lengths must be >= 0")
    if lengths.size == 0:
        return []
    _check_lengths(model, lengths.tolist(), "lengths")
    _check_shared(model, shared_counts, lengths, "lengths")
    _check_token_count(int(lengths.sum()), len(stream), int(model.vocab_size))
    dec = RangeDecoder(stream)
    steps = int(lengths.max())
    out = np.zeros((lengths.size, steps), dtype=np.int64)
    bits_after_exhaustion = 0.0
    with torch_threads(threads):
        sess = _session(model, int(lengths.size), shared_counts) if steps else None
        floored = getattr(sess, "next_floored_probs", None)  # the n-gram: floor fused in
        every, shortest = np.arange(lengths.size), int(lengths.min())
        for t in range(steps):
            active = every if t < shortest else np.flatnonzero(lengths > t)
            if floored is not None:  # rows are floored independently: select after
                fp = floored(FLOAT32_EPS)
                fp = fp if active.size == fp.shape[0] else fp[active]
            else:  # exactly what the encoder floors
                p = _step_probs(sess)
                fp = floor_pdf(p if active.size == p.shape[0] else p[active])
            dry = dec.exhausted             # every word read before this step's symbols
            sym = dec.decode(fp, floor=False)
            out[active, t] = sym
            if dry:
                # a real stream has at most the decoder's state left once its words are used
                bits_after_exhaustion -= float(np.log2(fp[np.arange(sym.size), sym]).sum())
                if bits_after_exhaustion > _STATE_BITS:
                    raise ValueError(
                        f"corrupted stream: {int(lengths.sum())} tokens declared but the "
                        f"{len(stream)}-byte stream ran dry after step {t + 1} of {steps}")
            if t + 1 < steps:
                sess.feed(out[:, t] if floored is not None else out[:, t].tolist())
            if progress is not None:
                progress(t + 1, steps)
    return [out[b, :n].tolist() for b, n in enumerate(lengths)]


def max_decodable_tokens(n_stream_bytes: int, vocab_size: int) -> int:
    """The most tokens a range-coded stream of ``n_stream_bytes`` bytes can hold under any model.

    The ε-floor (:func:`~.range_coding.floor_pdf`) gives every other symbol at least ε, so no
    token is more likely than ``1 − (V − 1)·ε`` and each costs at least ``−log2`` of that; we
    take half the floor's mass for the quantiser's rounding and allow the decoder's state bits.
    """
    if vocab_size < 2:
        raise ValueError(f"vocab_size must be >= 2, got {vocab_size}")
    min_bits = -np.log2(1.0 - 0.5 * (vocab_size - 1) * FLOAT32_EPS)
    return int((8 * n_stream_bytes + _STATE_BITS) / min_bits) + 1


def _check_token_count(n_tokens: int, stream_bytes: int, vocab_size: int) -> None:
    cap = max_decodable_tokens(stream_bytes, vocab_size)
    if n_tokens > cap:
        raise ValueError(f"corrupted stream: {n_tokens} tokens declared but a {stream_bytes}-byte "
                         f"stream holds at most {cap} for a vocabulary of {vocab_size}")


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


def _lanes(data: bytes, max_lanes: int) -> tuple[list[bytes], int]:
    """``data`` cut into L contiguous lanes of equal length (L <= max_lanes, each at least
    ``_LANE_MIN_BYTES`` when there is enough data) and the short rest (< L bytes) as one more
    chunk; returns (chunks, L)."""
    if not data:
        return [], 1
    n_lanes = max(1, min(max_lanes, len(data) // _LANE_MIN_BYTES))
    width = len(data) // n_lanes
    chunks = [data[i * width:(i + 1) * width] for i in range(n_lanes)]
    if n_lanes * width < len(data):
        chunks.append(data[n_lanes * width:])
    return chunks, n_lanes


def _default_group(model: Any) -> int:
    """Chunks per lockstep group: many for cheap byte models, 8 for large vocabularies."""
    return 64 if int(model.vocab_size) <= 256 else 8


def _coders(model: Any) -> list[tuple[int, Any]]:
    """(coder id, model) pairs that :func:`compress` tries on every group."""
    out = [(_CODER_MODEL, model)]
    variant = model.adaptive_only() if hasattr(model, "adaptive_only") else model
    if variant is not model:
        out.append((_CODER_ADAPTIVE, variant))
    return out


def compress(data: bytes, model: Any, *, chunk_size: int | None = None,
             group_size: int | None = None, threads: int = 1,
             progress: Callable[[float, str], None] | None = None) -> bytes:
    """Losslessly compress ``data`` with ``model`` (see the module docstring for the format).

    chunk_size: cut the data into independently modelled chunks of this many bytes (the
    paper's 2048; 0: one chunk). ``None`` (default): for a byte model without a context limit
    whose session can share counts (the n-gram), up to ``group_size`` lanes of >= 2048 bytes
    coded in lockstep with shared online counts (it adapts to the whole file, the decoder
    advances a byte of every lane per step); the context length for other byte models; one
    chunk otherwise. group_size: chunks coded together through one batched session (default
    64 for byte models, 8 otherwise); decoding repeats the grouping.
    Every group is coded with the model and, if it has one (``adaptive_only``), with its
    adaptive variant, and keeps the shorter stream, or is stored raw if neither is shorter
    than its bytes: a blob never exceeds the input by more than its header.
    progress(fraction, message) is called after every coding step.
    """
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"data must be bytes, got {type(data).__name__}")
    _check_model(model)
    data = bytes(data)
    if chunk_size is not None and (isinstance(chunk_size, bool)
                                   or not isinstance(chunk_size, int) or chunk_size < 0):
        raise ValueError(f"chunk_size must be an int >= 0 or None, got {chunk_size!r}")
    if group_size is not None and (isinstance(group_size, bool)
                                   or not isinstance(group_size, int) or group_size < 1):
        raise ValueError(f"group_size must be a positive int or None, got {group_size!r}")
    group_size = _default_group(model) if group_size is None else group_size
    ctx = getattr(model, "context_length", None)
    mode = _MODE_CHUNKS
    if chunk_size is None and ctx is None and _byte_level(model) \
            and supports_shared_counts(model):
        mode = _MODE_LANES
        chunks, group_size = _lanes(data, group_size)
        chunk_size = len(chunks[0]) if chunks else 0
    else:
        if chunk_size is None:
            chunk_size = ctx if (ctx is not None and model.vocab_size == 256) else 0
        chunks = _split(data, chunk_size, model)
    tokens = [model.tokenizer.encode(c) for c in chunks]
    _check_lengths(model, [len(t) for t in tokens], "data")
    coders = _coders(model)
    picked, streams = [], []
    n_groups = -(-len(tokens) // group_size)
    for gi, g in enumerate(range(0, len(tokens), group_size)):
        raw = b"".join(chunks[g:g + group_size])
        best, best_stream = _CODER_STORED, raw
        for ci, (coder, m) in enumerate(coders):
            step = None if progress is None else (
                lambda t, n, gi=gi, ci=ci: progress(
                    (gi + (ci + t / n) / len(coders)) / n_groups,
                    f"group {gi + 1}/{n_groups}, coder {ci + 1}/{len(coders)}: step {t}/{n}"))
            stream = encode_token_sequences(m, tokens[g:g + group_size], threads=threads,
                                            shared_counts=mode == _MODE_LANES, progress=step)
            if len(stream) < len(best_stream):
                best, best_stream = coder, stream
        picked.append(best)
        streams.append(best_stream)
    out = bytearray(_MAGIC + bytes([FORMAT_VERSION]))
    _put_varint(len(data), out)
    _put_varint(chunk_size, out)
    _put_varint(group_size, out)
    out.append(mode)
    out += zlib.crc32(data).to_bytes(4, "big")
    _put_varint(len(chunks), out)
    for i, (chunk, toks) in enumerate(zip(chunks, tokens)):
        _put_varint(len(chunk) if picked[i // group_size] == _CODER_STORED else len(toks), out)
    for coder, s in zip(picked, streams):
        out.append(coder)
        _put_varint(len(s), out)
    for s in streams:
        out += s
    return bytes(out)


@dataclass(frozen=True)
class _Header:
    n_raw: int
    group: int
    mode: int
    crc: int
    lengths: list[int]      # per chunk: tokens (bytes in a stored group)
    coders: list[int]       # per group
    sizes: list[int]        # per group: stream bytes
    offset: int             # of the first stream


def _read_header(blob: bytes) -> _Header:
    if len(blob) < 4 or blob[:3] != _MAGIC:
        raise ValueError("corrupted stream: not an lm_compression blob (bad magic)")
    version = 1 if blob[:4] == b"LMC1" else blob[3]     # version 1 spelled its magic "LMC1"
    if version != FORMAT_VERSION:
        raise ValueError(f"unsupported lm_compression format version {version} (this version "
                         f"reads format version {FORMAT_VERSION}); compress the data again with "
                         "this version")
    pos = 4
    n_raw, pos = _get_varint(blob, pos)
    _, pos = _get_varint(blob, pos)
    group, pos = _get_varint(blob, pos)
    if pos + 5 > len(blob):
        raise ValueError("corrupted stream: truncated header")
    mode = blob[pos]
    if mode not in (_MODE_CHUNKS, _MODE_LANES):
        raise ValueError(f"corrupted stream: unknown chunking mode {mode}")
    crc = int.from_bytes(blob[pos + 1:pos + 5], "big")
    pos += 5
    n_chunks, pos = _get_varint(blob, pos)
    if n_chunks > len(blob) or (n_chunks and group < 1):
        raise ValueError("corrupted stream: implausible chunk or group count")
    lengths = []
    for _ in range(n_chunks):
        n, pos = _get_varint(blob, pos)
        lengths.append(n)
    coders, sizes = [], []
    for _ in range(-(-n_chunks // group) if n_chunks else 0):
        if pos >= len(blob):
            raise ValueError("corrupted stream: truncated header")
        coders.append(blob[pos])
        if coders[-1] not in (_CODER_MODEL, _CODER_ADAPTIVE, _CODER_STORED):
            raise ValueError(f"corrupted stream: unknown coder {coders[-1]}")
        s, pos = _get_varint(blob, pos + 1)
        sizes.append(s)
    if pos + sum(sizes) != len(blob):
        raise ValueError(f"corrupted stream: the header declares {pos + sum(sizes)} bytes, the "
                         f"blob has {len(blob)} (truncated or padded)")
    return _Header(n_raw, group, mode, crc, lengths, coders, sizes, pos)


def decompress(blob: bytes, model: Any, *, threads: int = 1,
               progress: Callable[[float, str], None] | None = None) -> bytes:
    """Inverse of :func:`compress` with the same model; a damaged blob raises ``ValueError``."""
    if not isinstance(blob, (bytes, bytearray, memoryview)):
        raise TypeError(f"blob must be bytes, got {type(blob).__name__}")
    _check_model(model)
    blob = bytes(blob)
    h = _read_header(blob)
    lanes = h.mode == _MODE_LANES
    if lanes and not supports_shared_counts(model):
        raise ValueError(f"this blob codes lanes with shared counts (an n-gram's default); "
                         f"{type(model).__name__} cannot decode it (wrong model?)")
    groups = [h.lengths[g:g + h.group] for g in range(0, len(h.lengths), h.group)]
    ctx = getattr(model, "context_length", None)
    for counts, coder, size in zip(groups, h.coders, h.sizes):
        # fail before any model call when a header cannot be true
        if coder == _CODER_STORED:
            if sum(counts) != size:
                raise ValueError("corrupted stream: a stored group's lengths do not add up")
            continue
        if coder == _CODER_ADAPTIVE and not hasattr(model, "adaptive_only"):
            raise ValueError("corrupted stream (or wrong model): a group is coded with the "
                             f"model's adaptive variant, which {type(model).__name__} lacks")
        if ctx is not None and max(counts) > ctx:
            raise ValueError("corrupted stream (or wrong model): a chunk is longer than the "
                             "model's context")
        if lanes and min(counts) != max(counts):
            raise ValueError("corrupted stream: lanes of unequal length")
        _check_token_count(sum(counts), size, int(model.vocab_size))
    if sum(h.lengths) > h.n_raw and _byte_level(model):
        raise ValueError(f"corrupted stream: {sum(h.lengths)} byte tokens declared for "
                         f"{h.n_raw} raw bytes")
    pieces: list[bytes] = []
    pos = h.offset
    for gi, (counts, coder, size) in enumerate(zip(groups, h.coders, h.sizes)):
        stream = blob[pos:pos + size]
        pos += size
        if coder == _CODER_STORED:
            pieces.append(stream)
            continue
        step = None if progress is None else (
            lambda t, n, gi=gi: progress((gi + t / n) / len(groups),
                                         f"group {gi + 1}/{len(groups)}: step {t}/{n}"))
        m = model.adaptive_only() if coder == _CODER_ADAPTIVE else model
        tokens = decode_token_sequences(m, stream, counts, threads=threads,
                                        shared_counts=lanes, progress=step)
        try:
            pieces += [model.tokenizer.decode(t) for t in tokens]
        except ValueError as exc:
            raise ValueError(f"corrupted stream: decoded tokens are invalid ({exc})") from exc
    data = b"".join(pieces)
    if len(data) != h.n_raw or zlib.crc32(data) != h.crc:
        raise ValueError("corrupted stream (or a different model): checksum mismatch after "
                         "decoding")
    return data


# ----------------------------------------------------------------------------- evaluation

@dataclass(frozen=True)
class ModelCodingResult:
    """Chunked coding of a data set with a model (paper accounting: every coded bit counted).

    rate = Σ stream bytes / Σ raw bytes for the real, decoded-and-checked streams (the chunks of
    a group share one stream); separate_rate = the same chunks with one stream per chunk (the
    paper's layout: every chunk pays its own flush); ideal_rate = Σ (−log2 p) / 8 / raw bytes,
    with p the model's distributions along the coding path.
    """

    rate: float
    separate_rate: float
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

    @property
    def encode_tokens_per_s(self) -> float:
        return self.n_tokens / self.encode_seconds if self.encode_seconds else np.inf


def code_chunks(chunks: Sequence[bytes], model: Any, *, verify: bool = True,
                group_size: int | None = None, separate: bool = True, threads: int = 1,
                progress: Callable[[float, str], None] | None = None) -> ModelCodingResult:
    """Range-code every chunk independently (in lockstep groups of ``group_size`` sharing one
    stream), measure the real and the ideal rate, and with ``verify`` decode every chunk and
    check it. ``separate``: also measure one-stream-per-chunk sizes (``separate_rate``).
    threads: torch threads of the model, the same for encoder and decoder.
    """
    _check_model(model)
    chunks = [bytes(c) for c in chunks]
    if not chunks or not any(chunks):
        raise ValueError("chunks must hold at least one non-empty chunk")
    group_size = _default_group(model) if group_size is None else int(group_size)
    if group_size < 1:
        raise ValueError(f"group_size must be >= 1, got {group_size}")
    tokens = [model.tokenizer.encode(c) for c in chunks]
    _check_lengths(model, [len(t) for t in tokens], "chunks")
    ideal_bits = 0.0
    compressed = 0
    alone: list[int] = []
    enc_s = dec_s = 0.0
    ok = True
    groups = [list(range(i, min(i + group_size, len(chunks))))
              for i in range(0, len(chunks), group_size)]
    for gi, group in enumerate(groups):
        seqs = [tokens[i] for i in group]
        t0 = time.perf_counter()
        bits: list[float] = []
        stream = encode_token_sequences(model, seqs, ideal_bits=bits, threads=threads,
                                        separate_bytes=alone if separate else None)
        enc_s += time.perf_counter() - t0
        ideal_bits += sum(bits)
        compressed += len(stream)
        if verify:
            t0 = time.perf_counter()
            back = decode_token_sequences(model, stream, [len(s) for s in seqs], threads=threads)
            dec_s += time.perf_counter() - t0
            ok = ok and all(model.tokenizer.decode(b) == chunks[i] for b, i in zip(back, group))
        if progress is not None:
            progress((gi + 1) / len(groups), f"coded {group[-1] + 1}/{len(chunks)} chunks")
    raw = sum(len(c) for c in chunks)
    return ModelCodingResult(rate=compressed / raw,
                             separate_rate=sum(alone) / raw if separate else float("nan"),
                             ideal_rate=ideal_bits / 8 / raw,
                             raw_bytes=raw, compressed_bytes=compressed, n_chunks=len(chunks),
                             n_tokens=sum(len(t) for t in tokens), encode_seconds=enc_s,
                             decode_seconds=dec_s if verify else None,
                             roundtrip_ok=ok if verify else None)
