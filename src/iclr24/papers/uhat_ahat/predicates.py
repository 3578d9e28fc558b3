"""Unary numerical predicates (paper Sec. 2: FO(Mon)), the way positional encodings enter.

A unary numerical predicate is a family theta = (theta_n)_n with theta_n a subset of {1..n}: it
depends on the position i *and* the length n (e.g. "i = n", "n even and i <= n/2"), which is why
the encoder's positional encoding receives both.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

__all__ = ["STANDARD_PREDICATES", "NumericalPredicate", "predicate_table"]


@dataclass(frozen=True)
class NumericalPredicate:
    """theta(i, n) -> bool for 1 <= i <= n. ``name`` is how formulas refer to it."""

    name: str
    fn: Callable[[int, int], bool]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"predicate name must be an identifier, got {self.name!r}")
        if self.name in _RESERVED:
            raise ValueError(f"predicate name {self.name!r} is reserved by the formula syntax")
        if not callable(self.fn):
            raise TypeError(f"predicate {self.name!r}: fn must be callable (i, n) -> bool")

    def __call__(self, i: int, n: int) -> bool:
        if not 1 <= i <= n:
            raise ValueError(f"predicate {self.name!r} needs 1 <= i <= n, got i = {i}, n = {n}")
        return bool(self.fn(i, n))


_RESERVED = {"X", "F", "G", "U", "S", "Y", "P", "H", "true", "false", "exists", "forall"}


def _is_prime(i: int) -> bool:
    if i < 2:
        return False
    k = 2
    while k * k <= i:
        if i % k == 0:
            return False
        k += 1
    return True


STANDARD_PREDICATES: dict[str, NumericalPredicate] = {
    p.name: p
    for p in (
        NumericalPredicate("odd", lambda i, n: i % 2 == 1),
        NumericalPredicate("even", lambda i, n: i % 2 == 0),
        NumericalPredicate("prime", lambda i, n: _is_prime(i)),
        NumericalPredicate("mod3", lambda i, n: i % 3 == 0),
        NumericalPredicate("first", lambda i, n: i == 1),
        NumericalPredicate("last", lambda i, n: i == n),
        NumericalPredicate("first_half", lambda i, n: n % 2 == 0 and 2 * i <= n),
    )
}


def predicate_table(predicates: Mapping[str, NumericalPredicate] | Iterable[NumericalPredicate]
                    | None) -> dict[str, NumericalPredicate]:
    """Normalise a mapping / iterable of predicates (None -> the standard ones)."""
    if predicates is None:
        return dict(STANDARD_PREDICATES)
    items = predicates.values() if isinstance(predicates, Mapping) else predicates
    out = {}
    for p in items:
        if not isinstance(p, NumericalPredicate):
            raise TypeError(f"predicates must be NumericalPredicate objects, got {p!r}")
        out[p.name] = p
    return out
