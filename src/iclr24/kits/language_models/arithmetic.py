"""Synthetic arithmetic questions with exact answers: the computable truth behind the LLM
evaluation papers' claims (confidence elicitation, MINT's tool use, Llemma's majority voting).

An expression of ``n_terms`` integers (each with a digit count drawn from ``digits``) joined by
operators from ``ops`` is evaluated with Python's integer arithmetic and the usual precedence
(``*`` before ``+``/``-``), so answers are exact at any size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["ArithmeticProblem", "arithmetic_problems"]

_OPS = ("+", "-", "*")


@dataclass(frozen=True)
class ArithmeticProblem:
    """``question`` (natural language), ``expression`` (Python syntax) and its ``answer``."""

    question: str
    expression: str
    answer: int


def _value(tokens: list[str]) -> int:
    """Evaluate ints and + - * with precedence, without eval."""
    terms: list[int] = [int(tokens[0])]
    signs: list[str] = []
    for op, num in zip(tokens[1::2], tokens[2::2]):
        if op == "*":
            terms[-1] *= int(num)
        else:
            signs.append(op)
            terms.append(int(num))
    total = terms[0]
    for op, v in zip(signs, terms[1:]):
        total = total + v if op == "+" else total - v
    return total


def arithmetic_problems(n: int, *, seed: int = 0, ops: Sequence[str] = _OPS,
                        digits: tuple[int, int] = (1, 2), n_terms: tuple[int, int] = (2, 3),
                        template: str = "What is {expression}?") -> list[ArithmeticProblem]:
    """``n`` seeded problems. digits / n_terms: inclusive (low, high) ranges."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be a non-negative int, got {n!r}")
    ops = tuple(ops)
    if not ops or any(o not in _OPS for o in ops):
        raise ValueError(f"ops must be a non-empty subset of {_OPS}, got {ops!r}")
    for name, (lo, hi) in (("digits", digits), ("n_terms", n_terms)):
        if not (isinstance(lo, int) and isinstance(hi, int) and 1 <= lo <= hi):
            raise ValueError(f"{name} must be an inclusive range (low, high) with 1 <= low <= "
                             f"high, got {(lo, hi)!r}")
    if n_terms[0] < 2:
        raise ValueError("n_terms must start at 2 or more (an expression needs an operator)")
    if "{expression}" not in template:
        raise ValueError("template must contain '{expression}'")
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(rng.integers(n_terms[0], n_terms[1] + 1))
        nums = []
        for _ in range(k):
            d = int(rng.integers(digits[0], digits[1] + 1))
            nums.append(str(int(rng.integers(10 ** (d - 1) if d > 1 else 0, 10 ** d))))
        tokens = [nums[0]]
        for num in nums[1:]:
            tokens += [ops[int(rng.integers(len(ops)))], num]
        expr = " ".join(tokens)
        out.append(ArithmeticProblem(template.format(expression=expr), expr, _value(tokens)))
    return out
