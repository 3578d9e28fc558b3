"""Input-shallow judges: the null arms a sceptic tries first against a trained judge (not in
Li et al., ICLR 2024; our controls for the laptop-scale claims).

A judge that reads no meaning can still score on a testbed whose bad responses are shorter
(empty, truncated) than its good ones, and a judge that always says "Tie" is perfectly
consistent. The claims measure these beside the trained judge, on the same pairs and
candidates:

- :func:`length_verdicts`: "the longer response is better" (a tie when equally long), a
  deterministic, symmetric verdict, so it is consistent in both orders by construction;
- :func:`length_ratings`: the length as a rating, so best-of-N keeps the longest candidate.

The constant-"Tie" judge and a seeded uniform-random judge need no function
(``np.full(n, TIE)``, ``rng.integers(0, 3, n)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .parsing import TIE

__all__ = ["length_ratings", "length_verdicts"]


def _texts(values: Sequence[str], name: str) -> list[str]:
    if isinstance(values, str):
        raise TypeError(f"{name} must be a sequence of str, not one str")
    out = list(values)
    if not all(isinstance(v, str) for v in out):
        raise TypeError(f"{name} must hold only str")
    return out


def length_ratings(responses: Sequence[str]) -> np.ndarray:
    """(n,) float ratings: the length in characters of each stripped response."""
    return np.array([len(r.strip()) for r in _texts(responses, "responses")], dtype=np.float64)


def length_verdicts(responses_1: Sequence[str], responses_2: Sequence[str]) -> np.ndarray:
    """(n,) int verdicts of "the longer response is better": 0 when Response 1 is longer
    (stripped, in characters), 1 when Response 2 is, 2 (tie) when both are equally long."""
    a = length_ratings(_texts(responses_1, "responses_1"))
    b = length_ratings(_texts(responses_2, "responses_2"))
    if a.shape != b.shape:
        raise ValueError(f"responses_1 and responses_2 must have one entry per pair, got "
                         f"{a.size} and {b.size}")
    return np.where(a > b, 0, np.where(b > a, 1, TIE)).astype(np.int64)
