"""Hard-attention transformer encoders with explicit weights and two exact-enough executors
(paper Sec. 2: UHAT and AHAT).

Position i of a word a_1..a_n starts as x_i = [onehot(a_i); PE(i, n); 0 ...]: one register
(coordinate) per letter, per positional feature, and one fresh register per value a layer
computes. A layer is an attention sublayer followed by a position-wise ReLU FFN, both residual
(outputs are *added* into registers that are still zero, so "add" = "write").

- Attention head: score s_ij = <Q x_i, K x_j>; unique hard attention (UHA) takes the leftmost
  maximiser j*, average hard attention (AHA) the mean over all maximisers; the value V x_j is
  a copy of some registers into fresh ones. ``causal_average`` (an explicit extension, used only
  for prefix counts) averages over j <= i.
- FFN: out = W_2 ReLU(W_1 x + b_1) + b_2 with fixed weights (independent of n).

Weights are exact rationals (``fractions.Fraction``). :meth:`HardAttentionEncoder.run` executes
them either in exact rational arithmetic or in float64 (positional features are the correctly
rounded exact values; every linear map is summed in its listed order, bias first, which the
compiler uses to keep tiny positional terms from being absorbed). Replacing hard attention by a
softmax at temperature tau (float64 only) gives the baseline of the claims.

float64 has a length limit: the until/since gadgets' scores scale like eps^j / n, which leave the
normal float64 range (and then underflow: eps^538 rounds to 0) as the word grows. An encoder
carries ``float64_max_length`` (set by the compiler; None = no known limit): up to it float64
provably separates every score; beyond it :meth:`HardAttentionEncoder.run` refuses float64 and
:meth:`HardAttentionEncoder.accepts` falls back to exact ``Fraction`` arithmetic.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Literal

import numpy as np

__all__ = ["AttentionHead", "EncoderLayer", "FeedForward", "HardAttentionEncoder", "Linear"]

Attention = Literal["unique", "average", "causal_average"]


@dataclass(frozen=True)
class Linear:
    """bias + sum_k coef_k * x[src_k], summed in this order."""

    bias: Fraction = Fraction(0)
    terms: tuple[tuple[int, Fraction], ...] = ()


@dataclass(frozen=True)
class AttentionHead:
    query: tuple[Linear, ...]  # the k coordinates of Q x_i
    key: tuple[Linear, ...]  # the k coordinates of K x_j
    values: tuple[tuple[int, int], ...]  # (source register, destination register)
    kind: Attention = "unique"


@dataclass(frozen=True)
class FeedForward:
    hidden: tuple[Linear, ...]  # ReLU units over the registers
    outputs: tuple[tuple[int, Linear], ...]  # destination register, linear map over hidden units


@dataclass(frozen=True)
class EncoderLayer:
    heads: tuple[AttentionHead, ...] = ()
    ffn: FeedForward | None = None


@dataclass
class HardAttentionEncoder:
    """A compiled encoder.

    alphabet: the letters (register k holds [a_i = alphabet[k]]);
    registers: names of all registers (width = len(registers));
    positional: (register, feature(i, n) -> Fraction) pairs, the positional encoding;
    layers: the layers, applied in order; output: the linear functional of position 1's final
    vector that decides acceptance (> 1/2 accepts); readout_of: every compiled subformula ->
    the affine form over registers that holds its truth value (0/1) at each position;
    float64_max_length: the longest word on which the float64 executor is guaranteed to rank
    the attention scores exactly as exact arithmetic does (None: no limit known).
    """

    alphabet: tuple[str, ...]
    registers: list[str]
    positional: list[tuple[int, Callable[[int, int], Fraction]]]
    layers: list[EncoderLayer]
    output: Linear
    attention: Literal["unique", "average"] = "unique"
    formula: object = None
    readout_of: dict = field(default_factory=dict)
    float64_max_length: int | None = None

    @property
    def depth(self) -> int:
        """Number of layers (attention + FFN)."""
        return len(self.layers)

    @property
    def width(self) -> int:
        """Number of registers per position."""
        return len(self.registers)

    @property
    def n_heads(self) -> int:
        return sum(len(layer.heads) for layer in self.layers)

    def encode(self, word: str | Sequence[str], arithmetic: str = "fraction") -> np.ndarray:
        """Initial vectors x_i: (n, width), letters one-hot plus the positional encoding."""
        letters = self._check_word(word)
        n = len(letters)
        exact = self._check_arithmetic(arithmetic)
        zero = Fraction(0) if exact else 0.0
        x = np.full((n, self.width), zero, dtype=object if exact else np.float64)
        index = {a: k for k, a in enumerate(self.alphabet)}
        for i, a in enumerate(letters):
            x[i, index[a]] = Fraction(1) if exact else 1.0
        for reg, feature in self.positional:
            x[:, reg] = _feature_column(feature, n, exact)
        return x

    def run(self, word: str | Sequence[str], arithmetic: Literal["fraction", "float64"] = "fraction",
            attention: Literal["unique", "average"] | None = None,
            softmax_temperature: float | None = None) -> np.ndarray:
        """Final registers (n, width). ``attention`` overrides every hard head's tie rule
        (``unique``: leftmost maximiser; ``average``: mean over maximisers); causal heads stay
        causal. ``softmax_temperature`` replaces hard attention by softmax(s / tau) (float64).
        Raises ValueError for float64 on a word longer than ``float64_max_length``."""
        if attention not in (None, "unique", "average"):
            raise ValueError(f"attention must be 'unique', 'average' or None, got {attention!r}")
        if softmax_temperature is not None:
            if arithmetic != "float64":
                raise ValueError("softmax attention needs arithmetic='float64'")
            if not softmax_temperature > 0:
                raise ValueError(f"softmax_temperature must be > 0, got {softmax_temperature!r}")
        x = self.encode(word, arithmetic)
        exact = arithmetic == "fraction"
        if not exact and self._too_long_for_float64(x.shape[0]):
            raise ValueError(
                f"arithmetic='float64' cannot separate this encoder's attention scores beyond "
                f"length {self.float64_max_length} (eps^j leaves the float64 range); the word has "
                f"length {x.shape[0]}: use arithmetic='fraction'")
        for layer in self.layers:
            if layer.heads:
                updates = [self._head(h, x, attention, softmax_temperature, exact)
                           for h in layer.heads]
                for upd in updates:
                    for dst, col in upd:
                        x[:, dst] = x[:, dst] + col
            if layer.ffn is not None:
                hidden = [_relu(_apply(lin, x, exact)) for lin in layer.ffn.hidden]
                h = np.stack(hidden, axis=1) if hidden else np.zeros((x.shape[0], 0))
                for dst, lin in layer.ffn.outputs:
                    x[:, dst] = x[:, dst] + _apply(lin, h, exact)
        return x

    def accepts(self, word: str | Sequence[str], arithmetic: Literal["fraction", "float64"] = "float64",
                attention: Literal["unique", "average"] | None = None,
                softmax_temperature: float | None = None) -> bool:
        """Accept iff the output functional at position 1 exceeds 1/2 (it is exactly 0 or 1
        under hard attention). float64 on a word longer than ``float64_max_length`` falls back
        to exact ``Fraction`` arithmetic (same answer, slower); with ``softmax_temperature``
        (float64 only) that is a ValueError instead."""
        n = len(self._check_word(word))
        if arithmetic == "float64" and self._too_long_for_float64(n):
            if softmax_temperature is not None:
                raise ValueError(
                    f"softmax_temperature needs float64, which cannot separate this encoder's "
                    f"scores beyond length {self.float64_max_length}; the word has length {n}")
            arithmetic = "fraction"
        x = self.run(word, arithmetic, attention, softmax_temperature)
        return bool(self.read_output(x) > Fraction(1, 2))

    def read_output(self, registers: np.ndarray):
        """The output functional at position 1 (exactly 0 or 1 under hard attention)."""
        return _apply(self.output, registers[:1], registers.dtype == object)[0]

    # internals
    def _too_long_for_float64(self, n: int) -> bool:
        return self.float64_max_length is not None and n > self.float64_max_length

    def _check_word(self, word) -> list[str]:
        from .ltl import check_word

        return check_word(word, self.alphabet)

    @staticmethod
    def _check_arithmetic(arithmetic: str) -> bool:
        if arithmetic not in ("fraction", "float64"):
            raise ValueError(f"arithmetic must be 'fraction' or 'float64', got {arithmetic!r}")
        return arithmetic == "fraction"

    def _head(self, head: AttentionHead, x: np.ndarray, override, tau, exact):
        n = x.shape[0]
        q = np.stack([_apply(lin, x, exact) for lin in head.query], axis=1)
        k = np.stack([_apply(lin, x, exact) for lin in head.key], axis=1)
        scores = q @ k.T  # s_ij = <Q x_i, K x_j>
        kind = head.kind
        if kind == "causal_average":
            allowed = np.tril(np.ones((n, n), dtype=bool))
        else:
            allowed = np.ones((n, n), dtype=bool)
            kind = override or kind
        if tau is not None:
            s = np.where(allowed, scores.astype(np.float64) / tau, -np.inf)
            w = np.exp(s - s.max(axis=1, keepdims=True))
            w = w / w.sum(axis=1, keepdims=True)
            return [(dst, w @ x[:, src]) for src, dst in head.values]
        masked = np.where(allowed, scores, None) if exact else np.where(allowed, scores, -np.inf)
        if exact:
            best = np.array([max(s for s in row if s is not None) for row in masked], dtype=object)
            is_max = np.array([[s is not None and s == b for s in row]
                               for row, b in zip(masked, best)], dtype=bool)
        else:
            is_max = masked == masked.max(axis=1, keepdims=True)
        if kind == "unique":
            pick = np.argmax(is_max, axis=1)  # leftmost maximiser
            return [(dst, x[pick, src]) for src, dst in head.values]
        counts = is_max.sum(axis=1)
        out = []
        for src, dst in head.values:
            if exact:
                col = np.array([sum(x[is_max[i], src], Fraction(0)) / int(counts[i])
                                for i in range(n)], dtype=object)
            else:
                col = (is_max @ x[:, src]) / counts
            out.append((dst, col))
        return out


def _feature_column(feature, n: int, exact: bool):
    """feature(i, n) for i = 1..n; float64: the correctly rounded exact values. Cached per
    (feature, n) when the feature is hashable (the compiler's are)."""
    try:
        return _cached_column(feature, n, exact)
    except TypeError:  # an unhashable user feature
        return _column(feature, n, exact)


def _column(feature, n: int, exact: bool):
    col = [feature(i, n) for i in range(1, n + 1)]
    return col if exact else np.array([float(v) for v in col])


@functools.lru_cache(maxsize=8192)
def _cached_column(feature, n: int, exact: bool):
    col = _column(feature, n, exact)
    if not exact:
        col.setflags(write=False)
    return col


def _apply(lin: Linear, x: np.ndarray, exact: bool) -> np.ndarray:
    n = x.shape[0]
    if exact:
        acc = np.full(n, lin.bias, dtype=object)
        for src, c in lin.terms:
            acc = acc + c * x[:, src]
    else:
        bias, terms = _as_float(lin)
        acc = np.full(n, bias)
        for src, c in terms:
            acc = acc + c * x[:, src]
    return acc


@functools.lru_cache(maxsize=65536)
def _as_float(lin: Linear) -> tuple[float, tuple[tuple[int, float], ...]]:
    return float(lin.bias), tuple((src, float(c)) for src, c in lin.terms)


def _relu(v: np.ndarray) -> np.ndarray:
    if v.dtype == object:
        return np.array([a if a > 0 else Fraction(0) for a in v], dtype=object)
    return np.maximum(v, 0.0)
