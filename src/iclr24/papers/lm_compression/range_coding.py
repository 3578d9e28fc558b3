"""The coding engine: a range coder from ``constriction`` (Rust), driven a batch of symbols at a
time (Sec. 2 of "Language Modeling Is Compression": a model's pdf per step + an entropy coder).

The paper's coder is the base-2, 32-bit arithmetic coder of the official ``arithmetic_coder.py``;
:mod:`.arithmetic_coding` keeps a readable Python port of it as the *reference* (the tests check
that both give code lengths within 0.5% of each other and of the ideal −Σ log2 p). This module is
what the compressor uses: ``constriction``'s queue range coder (32-bit words, 24-bit probability
precision) is 20-100x faster because a whole batch of symbols is coded per call from a numpy
array of distributions.

Distributions. Each step's pdf over V symbols gets the paper's ε-floor in float64,

    pdf ← pdf / Σ pdf;   pdf ← (1 − 2·V·ε)·pdf + ε          (ε = float32 machine epsilon)

(:func:`floor_pdf`), then ``constriction``'s ``Categorical(perfect=False)`` quantises it to
integer frequencies in Rust (deterministic; each symbol keeps at least 2^-24 of the mass). The
decoder must be handed bit-identical floats; the model-coding layer guarantees that.

Interleaving. Several independent sequences (chunks) coded in lockstep share *one* stream: at
step t the symbols of every still-active sequence are appended in row order, and the decoder
reads them back in the same order, so the whole batch is one Rust call per step. Each chunk is
still modelled on its own (its own context and model state, as in the paper); the shared stream
only saves the per-chunk flush (≤ 4 bytes) and turns B decoder calls into one.
"""

from __future__ import annotations

import numpy as np

__all__ = ["RangeDecoder", "RangeEncoder", "floor_pdf"]

FLOAT32_EPS = float(np.finfo(np.float32).eps)


def _constriction():
    import constriction

    return constriction


_BAD_ROWS = "probs must be finite and non-negative with positive mass per row"


def floor_pdf(probs: np.ndarray) -> np.ndarray:
    """The paper's ε-floored, normalised pdf (…, V) (every symbol > 0); float32 stays float32,
    anything else becomes float64.

    probs: non-negative, finite, positive mass per row (e.g. ``exp`` of log-probabilities).
    A (B, V) float64 batch takes one compiled pass per row (the n-gram coder's hot path); other
    shapes and dtypes the numpy expression. Encoder and decoder hand the same shape and dtype
    to this function, so both see the same floats.
    """
    p = np.asarray(probs)
    p = p.astype(np.result_type(p.dtype, np.float32), copy=False)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"probs must have shape (..., V) with V >= 1, got {p.shape}")
    v = p.shape[-1]
    if 2 * v * FLOAT32_EPS >= 1:
        raise ValueError(f"a vocabulary of {v} symbols is too large for the ε-floor")
    if p.dtype == np.float64 and p.ndim == 2 and v <= 4096:
        from .numba_kernels import floor_rows

        out, ok = floor_rows(np.ascontiguousarray(p), FLOAT32_EPS)
        if not ok:
            raise ValueError(_BAD_ROWS)
        return out
    s = p.sum(axis=-1, keepdims=True)
    if not np.all(np.isfinite(s)) or np.any(s <= 0) or np.any(p < 0):
        raise ValueError(_BAD_ROWS)
    p = p * ((1.0 - 2.0 * v * FLOAT32_EPS) / s).astype(p.dtype)
    p += p.dtype.type(FLOAT32_EPS)  # pdf ← (1 − 2Vε)·pdf/Σpdf + ε, the official coder's floor
    return p


def _batch(probs: np.ndarray, name: str = "probs") -> np.ndarray:
    p = np.asarray(probs)
    p = np.ascontiguousarray(p, dtype=p.dtype if p.dtype in (np.float32, np.float64)
                             else np.float64)
    if p.ndim != 2:
        raise ValueError(f"{name} must be (B, V), got shape {p.shape}")
    return p


class RangeEncoder:
    """Append symbols to one range-coded stream, a batch per call.

    ``encode(probs, symbols)``: probs (B, V) distributions (floored by :func:`floor_pdf` unless
    ``floor=False``), symbols (B,) ints in [0, V). ``finish()`` returns the stream as bytes
    (a whole number of 32-bit little-endian words; empty input gives ``b""``).
    """

    def __init__(self) -> None:
        c = _constriction()
        self._enc = c.stream.queue.RangeEncoder()
        self._family = c.stream.model.Categorical(perfect=False)
        self.n_symbols = 0

    def encode(self, probs: np.ndarray, symbols: np.ndarray, *, floor: bool = True) -> None:
        p = _batch(floor_pdf(probs) if floor else probs)
        s = np.ascontiguousarray(symbols, dtype=np.int32).reshape(-1)
        if s.shape[0] != p.shape[0]:
            raise ValueError(f"symbols ({s.shape[0]}) and probs rows ({p.shape[0]}) differ")
        if s.size == 0:
            return
        if s.min() < 0 or s.max() >= p.shape[1]:
            raise ValueError(f"symbols must lie in [0, {p.shape[1]})")
        self._enc.encode(s, self._family, p)
        self.n_symbols += s.size

    @property
    def num_bits(self) -> int:
        """Bits of the stream so far (whole 32-bit words)."""
        return int(self._enc.num_bits())

    def finish(self) -> bytes:
        return self._enc.get_compressed().astype("<u4").tobytes()


class RangeDecoder:
    """Read symbols back from a :class:`RangeEncoder` stream, given the same distributions."""

    def __init__(self, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        data = bytes(data)
        if len(data) % 4:
            raise ValueError(f"corrupted stream: a range-coded stream is a whole number of "
                             f"32-bit words, got {len(data)} bytes (truncated?)")
        c = _constriction()
        words = np.frombuffer(data, dtype="<u4").astype(np.uint32)
        self._dec = c.stream.queue.RangeDecoder(words)
        self._family = c.stream.model.Categorical(perfect=False)
        self.n_symbols = 0

    def decode(self, probs: np.ndarray, *, floor: bool = True) -> np.ndarray:
        """(B,) int64 symbols for the (B, V) distributions of this step."""
        p = _batch(floor_pdf(probs) if floor else probs)
        if p.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        try:
            out = np.asarray(self._dec.decode(self._family, p), dtype=np.int64)
        except (AssertionError, ValueError, RuntimeError) as exc:  # constriction's refusal
            raise ValueError(f"corrupted stream: the range decoder met data that these "
                             f"distributions cannot have produced ({exc})") from None
        self.n_symbols += out.size
        return out

    @property
    def exhausted(self) -> bool:
        """True once every input word has been read (the state may still hold a few symbols)."""
        return bool(self._dec.maybe_exhausted())
