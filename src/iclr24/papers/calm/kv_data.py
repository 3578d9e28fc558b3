"""The synthetic key-value arithmetic task of CALM (Sec. 4.1), scaled down, and its characters.

Paper (Bansal et al., ICLR 2024, Sec. 4.1): m_A memorises a mapping from string keys to
numbers; the anchor m_B can do arithmetic over numbers but has never seen the keys; the
composition set D_C holds arithmetic expressions over a *subset* of the keys, and the composed
model is evaluated on expressions over held-out keys (plus KV-substitution and plain numeric
arithmetic).

Here (the spec's laptop version): keys are random strings of ``key_length`` letters (3–5 by
default), values integers in ``value_range``; every line ends with ``;``.

- ``kv_sub``: ``abc=42;`` and ``abc?42;`` for *all* keys; m_A trains on these and on the
  listing form ``abc42;`` (:meth:`KVData.memorisation`), the KV-substitution test is the query
  form ``abc?`` -> ``42;``. The listing form is ours: it makes m_A predict a key's value at
  the key's last letter, so its state there holds the value in any context (a tiny m_A
  otherwise computes the value only after ``=``/``?``, which expressions over keys lack).
- ``arith``: numeric expressions ``12+7-3=16;`` (m_B's data; ``arith_test`` fresh draws of the
  same distribution, which may repeat training expressions when the value range is small);
  with ``number_width`` w > 1 every operand is zero-padded to w characters (``007+003=10;``);
- ``kv_context`` (``n_context`` lines, ours): keys in expression-shaped lines, each key followed
  by its value with probability ½ (``abc7+kqz;``), for m_A (:meth:`KVData.memorisation`); they
  hold no arithmetic result;
- ``kv_arith_train``: expressions over train keys only (D_C, ``train_key_frac`` of the keys);
- ``kv_arith_test``: expressions over held-out keys only (the claim's test set).

Each example is a (prompt, answer) pair: prompt ``abc+kqz=``, answer ``59;``. Values are
smaller than the paper's (0–99 with PaLM2-XS): the range is a parameter, chosen per scale so a
tiny model learns the arithmetic on CPU. Results may be negative (``-`` is an operator and a
sign).

The fixed-layout test bed of :mod:`.kv_experiment` (ours, not the paper's) uses
``key_length=(3, 3)`` with ``number_width=3``: a key then fills exactly the slot of a number
(``abc+kqz=`` vs ``007+003=``), so a tiny anchor whose arithmetic reads digits at fixed
positions can be fed by the composer at those positions; and ``n_context`` lines, so that m_A
holds a key's value at the key's last letter wherever the key stands in an expression, not only
at the start of a line.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import torch

__all__ = ["VOCAB", "CharVocab", "KVData", "kv_arithmetic_data"]


class CharVocab:
    """Character-level vocabulary: digits, ``+ - = ? ;`` and lowercase letters (41 symbols)."""

    def __init__(self, chars: str = "0123456789+-=?;abcdefghijklmnopqrstuvwxyz") -> None:
        if len(set(chars)) != len(chars) or not chars:
            raise ValueError("chars must be a non-empty string of distinct characters")
        self.chars = chars
        self.index = {c: i for i, c in enumerate(chars)}

    def __len__(self) -> int:
        return len(self.chars)

    def encode(self, text: str) -> list[int]:
        """text -> ids; a character outside the vocabulary is a ValueError."""
        try:
            return [self.index[c] for c in text]
        except KeyError as err:
            raise ValueError(f"character {err.args[0]!r} is not in the vocabulary "
                             f"{self.chars!r}") from None

    def decode(self, ids) -> str:
        return "".join(self.chars[int(i)] for i in ids)

    def stream(self, lines: list[str]) -> torch.Tensor:
        """Concatenated lines as one 1-D int64 token stream (for the kit's trainer)."""
        return torch.tensor(self.encode("".join(lines)), dtype=torch.int64)


VOCAB = CharVocab()


@dataclass(frozen=True)
class KVData:
    """The task's keys, values and splits; every split is a list of (prompt, answer) pairs."""

    keys: list[str]
    values: dict[str, int]
    train_keys: list[str]
    heldout_keys: list[str]
    kv_sub: list[tuple[str, str]]
    arith: list[tuple[str, str]]
    arith_test: list[tuple[str, str]]
    kv_arith_train: list[tuple[str, str]]
    kv_arith_test: list[tuple[str, str]]
    kv_arith_train_keys_test: list[tuple[str, str]]
    kv_context: list[tuple[str, str]] = field(default_factory=list)

    def memorisation(self) -> list[tuple[str, str]]:
        """m_A's training examples for every key: ``k=`` -> ``v;``, ``k?`` -> ``v;`` and the
        listing form ``k`` -> ``v;`` (key directly followed by its value), then the
        ``kv_context`` lines (empty prompt, the whole line as answer)."""
        facts = [(f"{k}{sep}", f"{self.values[k]};") for k in self.keys for sep in ("=", "?", "")]
        return facts + list(self.kv_context)

    def kv_sub_test(self, keys: list[str]) -> list[tuple[str, str]]:
        """KV-substitution queries ``k?`` -> ``v;`` for ``keys``."""
        return [(f"{k}?", f"{self.values[k]};") for k in keys]


def _expression(rng: np.random.Generator, operands: list, ops: str) -> tuple[str, list]:
    signs = [ops[int(rng.integers(len(ops)))] for _ in operands[1:]]
    text = str(operands[0]) + "".join(s + str(o) for s, o in zip(signs, operands[1:]))
    return text, signs


def _evaluate(values: list[int], signs: list[str]) -> int:
    total = values[0]
    for s, v in zip(signs, values[1:]):
        total = total + v if s == "+" else total - v
    return total


def kv_arithmetic_data(n_keys: int, value_range: tuple[int, int] = (0, 99),
                       n_operands: tuple[int, int] = (2, 3), train_key_frac: float = 0.2,
                       seed: int = 0, *, ops: str = "+-", n_arith: int = 2000,
                       n_kv_arith_train: int = 2000, n_test: int = 200,
                       key_length: tuple[int, int] = (3, 5), number_width: int = 1,
                       n_context: int = 0) -> KVData:
    """Draw the KV-arithmetic task.

    n_keys: number of keys K (>= 2·max operands); value_range: inclusive (low, high) >= 0;
    n_operands: inclusive (min, max) operands per expression (>= 2); train_key_frac: share of
    keys in D_C, in (0, 1); ops: operators drawn from ``+`` and ``-``. n_arith numeric training
    expressions, n_kv_arith_train D_C expressions, n_test items per test split. key_length:
    inclusive (min, max) letters per key (>= 1; there must be at least K distinct strings of
    those lengths); number_width: operands of numeric expressions are zero-padded to this many
    characters (1 = plain); n_context: in-context memorisation lines for m_A (``kv_context``).
    Returns :class:`KVData`; the same seed gives the same data (and, with the defaults, the
    same data as before ``key_length``/``number_width``/``n_context`` existed).
    """
    for name, v in (("n_keys", n_keys), ("n_arith", n_arith),
                    ("n_kv_arith_train", n_kv_arith_train), ("n_test", n_test),
                    ("number_width", number_width)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if isinstance(n_context, bool) or not isinstance(n_context, int) or n_context < 0:
        raise ValueError(f"n_context must be an int >= 0, got {n_context!r}")
    if not (isinstance(key_length, tuple) and len(key_length) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in key_length)
            and 1 <= key_length[0] <= key_length[1]):
        raise ValueError(f"key_length must be (min, max) ints with 1 <= min <= max, got "
                         f"{key_length!r}")
    n_strings = sum(26 ** n for n in range(key_length[0], key_length[1] + 1))
    if n_strings < n_keys:
        raise ValueError(f"key_length={key_length} allows only {n_strings} distinct keys, "
                         f"fewer than n_keys={n_keys}")
    lo, hi = value_range
    if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi):
        raise ValueError(f"value_range must be (low, high) ints with 0 <= low <= high, got "
                         f"{value_range!r}")
    kmin, kmax = n_operands
    if not (isinstance(kmin, int) and isinstance(kmax, int) and 2 <= kmin <= kmax):
        raise ValueError(f"n_operands must be (min, max) ints with 2 <= min <= max, got "
                         f"{n_operands!r}")
    if not 0.0 < train_key_frac < 1.0:
        raise ValueError(f"train_key_frac must be in (0, 1), got {train_key_frac!r}")
    if not ops or set(ops) - {"+", "-"}:
        raise ValueError(f"ops must be a non-empty string of '+' and '-', got {ops!r}")
    n_train_keys = round(train_key_frac * n_keys)
    if min(n_train_keys, n_keys - n_train_keys) < 1:
        raise ValueError(f"train_key_frac={train_key_frac} leaves no train or no held-out key "
                         f"among {n_keys}")
    rng = np.random.default_rng(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    keys: list[str] = []
    seen: set[str] = set()
    while len(keys) < n_keys:
        length = int(rng.integers(key_length[0], key_length[1] + 1))
        k = "".join(letters[i] for i in rng.integers(26, size=length))
        if k not in seen:
            seen.add(k)
            keys.append(k)
    values = {k: int(rng.integers(lo, hi + 1)) for k in keys}
    train_keys, heldout_keys = keys[:n_train_keys], keys[n_train_keys:]

    def numeric(n: int) -> list[tuple[str, str]]:
        out = []
        for _ in range(n):
            vals = [int(v) for v in rng.integers(lo, hi + 1, size=int(rng.integers(kmin,
                                                                                 kmax + 1)))]
            text, signs = _expression(rng, [str(v).zfill(number_width) for v in vals], ops)
            out.append((f"{text}=", f"{_evaluate(vals, signs)};"))
        return out

    def over_keys(pool: list[str], n: int) -> list[tuple[str, str]]:
        out = []
        for _ in range(n):
            ks = [pool[int(i)] for i in rng.integers(len(pool), size=int(rng.integers(kmin,
                                                                                    kmax + 1)))]
            text, signs = _expression(rng, ks, ops)
            out.append((f"{text}=", f"{_evaluate([values[k] for k in ks], signs)};"))
        return out

    def in_context(n: int) -> list[tuple[str, str]]:
        out = []
        for _ in range(n):
            ks = [keys[int(i)] for i in rng.integers(n_keys, size=int(rng.integers(kmin,
                                                                                 kmax + 1)))]
            shown = [k + str(values[k]) if rng.random() < 0.5 else k for k in ks]
            text, _ = _expression(rng, shown, ops)
            out.append(("", f"{text};"))
        return out

    arith = numeric(n_arith)
    arith_test = numeric(n_test)  # fresh draws; with small value ranges they overlap `arith`
    kv_sub = [(f"{k}{sep}", f"{values[k]};") for k in keys for sep in "=?"]
    kv_arith_train = over_keys(train_keys, n_kv_arith_train)
    kv_arith_test = over_keys(heldout_keys, n_test)
    kv_arith_train_keys_test = over_keys(train_keys, n_test)
    return KVData(keys=keys, values=values, train_keys=train_keys, heldout_keys=heldout_keys,
                  kv_sub=kv_sub, arith=arith, arith_test=arith_test,
                  kv_arith_train=kv_arith_train, kv_arith_test=kv_arith_test,
                  kv_arith_train_keys_test=kv_arith_train_keys_test,
                  kv_context=in_context(n_context))
