"""Binary arithmetic coding with integer frequencies (Sec. 2 of "Language Modeling Is
Compression"; the official ``arithmetic_coder.py`` design: base 2, 32-bit precision, carry
handling by pending bits, a terminating flush, bits packed into zero-padded bytes).

A predictive model's distribution over V symbols is turned into integer frequencies by
:func:`quantize_pdf`, deterministically and from the same float values on both sides:

    pdf ← pdf / Σ pdf;   pdf ← (1 − 2·V·ε)·pdf + ε      (ε = float32 machine epsilon, paper)
    f_i = ⌊pdf_i · (2^B − V)⌋ + 1;   the rounding deficit goes to the most likely symbol

so every symbol has frequency ≥ 1 (no symbol is uncodable) and Σ f = 2^B exactly. The coder
then narrows ``[low, high]`` to the symbol's sub-interval (Witten–Neal–Cleary scheme): code
length ≤ −Σ log2 p̂(x_t) + 2 bits + padding, where p̂ is the quantised distribution.

This is a fresh, readable Python implementation (not a copy of the official one); the decoder
recovers the same symbols as long as it is given the *same* integer frequencies per step.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "FLOAT32_EPS",
    "ArithmeticDecoder",
    "ArithmeticEncoder",
    "decode_symbols",
    "encode_symbols",
    "quantize_pdf",
]

FLOAT32_EPS = float(np.finfo(np.float32).eps)


def quantize_pdf(probs: np.ndarray, total_bits: int = 24) -> np.ndarray:
    """Integer frequencies (…, V) summing to 2^total_bits, each ≥ 1, from probabilities (…, V).

    Elementwise float64 arithmetic plus integer sums: the same input array gives the same
    output on every call.
    """
    p = np.asarray(probs, dtype=np.float64)
    if p.ndim < 1 or p.shape[-1] < 1:
        raise ValueError(f"probs must have shape (..., V) with V >= 1, got {p.shape}")
    v = p.shape[-1]
    total = 1 << total_bits
    if v > total // 2:
        raise ValueError(f"vocabulary of {v} symbols needs total_bits > {total_bits}")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("probs must be finite and non-negative")
    s = p.sum(axis=-1, keepdims=True)
    if np.any(s <= 0):
        raise ValueError("probs must have positive mass in every row")
    p = p / s
    p = (1.0 - 2.0 * v * FLOAT32_EPS) * p + FLOAT32_EPS  # ε-floor of the official coder
    freq = np.floor(p * (total - v)).astype(np.int64) + 1
    deficit = total - freq.sum(axis=-1)  # ≥ 0 since Σ⌊·⌋ ≤ (total − V)·Σp ≤ total − V
    rows = freq.reshape(-1, v)
    top = np.argmax(rows, axis=-1)
    rows[np.arange(rows.shape[0]), top] += deficit.reshape(-1)
    return rows.reshape(freq.shape)


class ArithmeticEncoder:
    """Encode symbols one at a time: ``encode(freqs, symbol)``, then ``finish()``.

    freqs: (V,) positive integers summing to ``2^total_bits`` (see :func:`quantize_pdf`).
    """

    def __init__(self, precision: int = 32, total_bits: int = 24) -> None:
        if not isinstance(precision, int) or precision < 8:
            raise ValueError(f"precision must be an int >= 8, got {precision!r}")
        if not isinstance(total_bits, int) or not 1 <= total_bits <= precision - 2:
            raise ValueError(f"total_bits must be in [1, precision-2={precision - 2}], "
                             f"got {total_bits!r}")
        self.precision = precision
        self.total_bits = total_bits
        self._full = (1 << precision) - 1
        self._half = 1 << (precision - 1)
        self._quarter = 1 << (precision - 2)
        self._low = 0
        self._high = self._full
        self._pending = 0
        self._bits: list[int] = []
        self._finished = False
        self.n_symbols = 0

    def _emit(self, bit: int) -> None:
        self._bits.append(bit)
        if self._pending:
            self._bits.extend([1 - bit] * self._pending)  # carry resolved: pending opposite bits
            self._pending = 0

    def encode(self, freqs: np.ndarray, symbol: int) -> None:
        if self._finished:
            raise RuntimeError("encoder already finished")
        symbol = int(symbol)
        if not 0 <= symbol < len(freqs):
            raise ValueError(f"symbol {symbol} outside the alphabet of {len(freqs)} symbols")
        f = int(freqs[symbol])
        if f <= 0:
            raise ValueError(f"symbol {symbol} has zero frequency: it cannot be coded")
        lo_cum = int(np.sum(freqs[:symbol], dtype=np.int64))
        width = self._high - self._low + 1
        tb = self.total_bits
        # new interval: [low + ⌊w·F(s−1)/T⌋, low + ⌊w·F(s)/T⌋ − 1]
        self._high = self._low + ((width * (lo_cum + f)) >> tb) - 1
        self._low = self._low + ((width * lo_cum) >> tb)
        half, quarter = self._half, self._quarter
        while True:
            if self._high < half:
                self._emit(0)
            elif self._low >= half:
                self._emit(1)
                self._low -= half
                self._high -= half
            elif self._low >= quarter and self._high < half + quarter:
                # interval straddles the middle: defer the bit (carry handling)
                self._pending += 1
                self._low -= quarter
                self._high -= quarter
            else:
                break
            self._low = 2 * self._low
            self._high = 2 * self._high + 1
        self.n_symbols += 1

    @property
    def bit_count(self) -> int:
        """Bits emitted so far (pending bits excluded)."""
        return len(self._bits)

    def finish(self) -> tuple[bytes, int]:
        """Flush: two more bits pin a value inside the final interval. Returns (bytes, n_pad)
        where n_pad zero bits were appended to fill the last byte."""
        if not self._finished:
            self._pending += 1
            self._emit(0 if self._low < self._quarter else 1)
            self._finished = True
        bits = np.array(self._bits, dtype=np.uint8)
        n_pad = (-len(bits)) % 8
        return np.packbits(bits).tobytes(), n_pad


class ArithmeticDecoder:
    """Decode symbols from ``data`` given the same frequencies the encoder used, step by step.

    Bits past the end of ``data`` read as zeros (consistent with the encoder's zero padding).
    """

    def __init__(self, data: bytes, precision: int = 32, total_bits: int = 24) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"data must be bytes, got {type(data).__name__}")
        ArithmeticEncoder(precision, total_bits)  # validates the parameters
        self.precision = precision
        self.total_bits = total_bits
        self._half = 1 << (precision - 1)
        self._quarter = 1 << (precision - 2)
        self._bits = np.unpackbits(np.frombuffer(bytes(data), dtype=np.uint8)).tolist()
        self._pos = 0
        self._low = 0
        self._high = (1 << precision) - 1
        self._value = 0
        for _ in range(precision):
            self._value = (self._value << 1) | self._next_bit()

    def _next_bit(self) -> int:
        pos = self._pos
        self._pos += 1
        return self._bits[pos] if pos < len(self._bits) else 0

    @property
    def bits_consumed(self) -> int:
        return self._pos

    def decode(self, freqs: np.ndarray) -> int:
        cum = np.cumsum(freqs, dtype=np.int64)
        total = int(cum[-1])
        if total != 1 << self.total_bits:
            raise ValueError(f"frequencies must sum to 2^{self.total_bits}, got {total}")
        width = self._high - self._low + 1
        # the largest cumulative count c with low + ⌊w·c/T⌋ ≤ value
        target = (((self._value - self._low + 1) << self.total_bits) - 1) // width
        symbol = int(np.searchsorted(cum, target, side="right"))
        if symbol >= len(freqs):
            raise ValueError("corrupted stream: decoded value lies outside the coding interval")
        hi_cum = int(cum[symbol])
        lo_cum = hi_cum - int(freqs[symbol])
        tb = self.total_bits
        self._high = self._low + ((width * hi_cum) >> tb) - 1
        self._low = self._low + ((width * lo_cum) >> tb)
        half, quarter = self._half, self._quarter
        while True:
            if self._high < half:
                pass
            elif self._low >= half:
                self._low -= half
                self._high -= half
                self._value -= half
            elif self._low >= quarter and self._high < half + quarter:
                self._low -= quarter
                self._high -= quarter
                self._value -= quarter
            else:
                break
            self._low = 2 * self._low
            self._high = 2 * self._high + 1
            self._value = 2 * self._value + self._next_bit()
        return symbol


def encode_symbols(freqs: np.ndarray, symbols: np.ndarray, precision: int = 32,
                   total_bits: int = 24) -> tuple[bytes, int]:
    """Encode ``symbols`` (T,) with per-step integer frequencies ``freqs`` (T, V)."""
    freqs = np.asarray(freqs)
    symbols = np.asarray(symbols)
    if freqs.ndim != 2 or symbols.ndim != 1 or freqs.shape[0] != symbols.shape[0]:
        raise ValueError(f"freqs must be (T, V) and symbols (T,), got {freqs.shape} and "
                         f"{symbols.shape}")
    enc = ArithmeticEncoder(precision, total_bits)
    for row, s in zip(freqs, symbols):
        enc.encode(row, int(s))
    return enc.finish()


def decode_symbols(data: bytes, freqs: np.ndarray, precision: int = 32,
                   total_bits: int = 24) -> np.ndarray:
    """Inverse of :func:`encode_symbols` when all frequencies are known up front (T, V)."""
    dec = ArithmeticDecoder(data, precision, total_bits)
    return np.array([dec.decode(row) for row in np.asarray(freqs)], dtype=np.int64)
