"""Random LTL(Mon) formulas and random words, for property tests and the claims."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from . import ltl

__all__ = ["random_formula", "random_words"]

_UNARY_OPS = (ltl.Not, ltl.X, ltl.F, ltl.G, ltl.Y, ltl.P, ltl.H)
_BINARY_OPS = (ltl.And, ltl.Or, ltl.Until, ltl.Since)


def _rng(rng) -> np.random.Generator:
    return rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)


def random_formula(depth: int, alphabet: Sequence[str], predicates: Sequence[str] = (),
                   rng: np.random.Generator | int | None = None,
                   leaf_probability: float = 0.2) -> ltl.Formula:
    """A random formula of operator depth <= ``depth``: leaves are letters (60%), predicate
    names (30%, if any) and true/false; inner nodes are drawn uniformly from
    ! X F G Y P H & | U S. Below the root a node becomes a leaf with ``leaf_probability``."""
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 0:
        raise ValueError(f"depth must be an int >= 0, got {depth!r}")
    if not alphabet:
        raise ValueError("alphabet must be non-empty")
    if not 0 <= leaf_probability <= 1:
        raise ValueError(f"leaf_probability must be in [0, 1], got {leaf_probability!r}")
    rng = _rng(rng)
    preds = list(predicates)

    def leaf() -> ltl.Formula:
        u = rng.random()
        if u < 0.6 or (not preds and u < 0.9):
            return ltl.Letter(str(alphabet[rng.integers(len(alphabet))]))
        if u < 0.9:
            return ltl.Pred(preds[rng.integers(len(preds))])
        return ltl.Const(bool(rng.integers(2)))

    def grow(d: int, root: bool) -> ltl.Formula:
        if d == 0 or (not root and rng.random() < leaf_probability):
            return leaf()
        k = rng.integers(len(_UNARY_OPS) + len(_BINARY_OPS))
        if k < len(_UNARY_OPS):
            return _UNARY_OPS[k](grow(d - 1, False))
        op = _BINARY_OPS[k - len(_UNARY_OPS)]
        return op(grow(d - 1, False), grow(d - 1, False))

    return grow(depth, True)


def random_words(alphabet: Sequence[str], n_max: int, count: int,
                 rng: np.random.Generator | int | None = None, n_min: int = 1) -> list[str]:
    """``count`` words with lengths uniform in [n_min, n_max] and letters uniform over
    ``alphabet`` (one-character letters; words are strings)."""
    for name, v in (("n_max", n_max), ("count", count), ("n_min", n_min)):
        if isinstance(v, bool) or not isinstance(v, int) or v < (0 if name == "count" else 1):
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if n_min > n_max:
        raise ValueError(f"n_min ({n_min}) must be <= n_max ({n_max})")
    if not alphabet or not all(isinstance(a, str) and len(a) == 1 for a in alphabet):
        raise ValueError(f"alphabet must be one-character letters, got {alphabet!r}")
    rng = _rng(rng)
    letters = np.array(list(alphabet))
    return ["".join(letters[rng.integers(len(letters), size=rng.integers(n_min, n_max + 1))])
            for _ in range(count)]
