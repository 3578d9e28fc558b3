"""LTL(Mon) with counting terms: syntax, parser and reference semantics (paper Sec. 4-5).

Formulas are evaluated at positions 1..n of a word a_1..a_n:

- ``a`` (Q_a: letter a at the current position), a numerical predicate name (theta_n(i)),
  ``true`` / ``false``, ``!``, ``&``, ``|``, ``->``;
- strict until ``phi U psi`` at i: exists j > i with psi(j) and phi(k) for all i < k < j;
  strict since ``phi S psi``: the mirror image (j < i);
- derived: ``X phi = false U phi``, ``F phi = true U phi``, ``G phi = !F!phi`` and the past
  versions ``Y``, ``P``, ``H`` through S;
- counting atoms (the AHAT extension): ``{c_1 * #phi_1 + ... >= c_0}`` (also ``>``, ``<=``,
  ``<``, ``=``), where ``#phi`` is the number of positions of the *whole word* where phi holds;
  the atom has the same value at every position. ``#<phi`` counts positions j <= i only (a
  prefix count); it needs a causal attention mask, which the compiler does not provide (it
  raises an error saying so).

A word satisfies a formula when the formula holds at position 1. :func:`evaluate` implements
the definitions literally (each until/since by its quantifiers over (i, j) pairs, vectorised with
numpy); it is the reference the compiled encoders are checked against.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .predicates import NumericalPredicate, predicate_table

__all__ = [
    "And",
    "Const",
    "Count",
    "F",
    "Formula",
    "G",
    "H",
    "Letter",
    "Not",
    "Or",
    "P",
    "Pred",
    "Since",
    "Until",
    "X",
    "Y",
    "check_word",
    "evaluate",
    "formula_size",
    "holds",
    "implies",
    "letters_of",
    "parse",
    "subformulas",
]


@dataclass(frozen=True)
class Letter:
    letter: str

    def __str__(self) -> str:
        return self.letter


@dataclass(frozen=True)
class Pred:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Const:
    value: bool

    def __str__(self) -> str:
        return "true" if self.value else "false"


@dataclass(frozen=True)
class Not:
    arg: Formula

    def __str__(self) -> str:
        return f"!{_wrap(self.arg)}"


@dataclass(frozen=True)
class And:
    left: Formula
    right: Formula

    def __str__(self) -> str:
        return f"({self.left} & {self.right})"


@dataclass(frozen=True)
class Or:
    left: Formula
    right: Formula

    def __str__(self) -> str:
        return f"({self.left} | {self.right})"


@dataclass(frozen=True)
class Until:
    """Strict until: phi U psi."""

    left: Formula
    right: Formula

    def __str__(self) -> str:
        return f"({self.left} U {self.right})"


@dataclass(frozen=True)
class Since:
    """Strict since: phi S psi."""

    left: Formula
    right: Formula

    def __str__(self) -> str:
        return f"({self.left} S {self.right})"


@dataclass(frozen=True)
class Count:
    """sum_k coef_k * #phi_k >= threshold (``prefix``: counts over positions j <= i)."""

    terms: tuple[tuple[int, Formula], ...]
    threshold: int
    prefix: bool = False

    def __post_init__(self) -> None:
        if not self.terms:
            raise ValueError("a counting atom needs at least one #-term")
        for c, _ in self.terms:
            if isinstance(c, bool) or not isinstance(c, int):
                raise TypeError(f"counting coefficients must be ints, got {c!r}")
        if isinstance(self.threshold, bool) or not isinstance(self.threshold, int):
            raise TypeError(f"counting threshold must be an int, got {self.threshold!r}")

    def __str__(self) -> str:
        mark = "#<" if self.prefix else "#"
        body = ""
        for k, (c, f) in enumerate(self.terms):
            sign = ("-" if c < 0 else "") if k == 0 else (" - " if c < 0 else " + ")
            body += f"{sign}{abs(c)} * {mark}{_wrap(f)}"
        return f"{{{body} >= {self.threshold}}}"


Formula = Letter | Pred | Const | Not | And | Or | Until | Since | Count
_NODES = (Letter, Pred, Const, Not, And, Or, Until, Since, Count)


def _wrap(f: Formula) -> str:
    s = str(f)
    return s if isinstance(f, (Letter, Pred, Const, Not)) or s.startswith("(") else f"({s})"


def X(f: Formula) -> Formula:
    """Next: false U f."""
    return Until(Const(False), f)


def F(f: Formula) -> Formula:
    """Eventually (strictly later): true U f."""
    return Until(Const(True), f)


def G(f: Formula) -> Formula:
    """Always (strictly later): !F!f."""
    return Not(F(Not(f)))


def Y(f: Formula) -> Formula:
    """Yesterday: false S f."""
    return Since(Const(False), f)


def P(f: Formula) -> Formula:
    """Once (strictly earlier): true S f."""
    return Since(Const(True), f)


def H(f: Formula) -> Formula:
    """Historically (strictly earlier): !P!f."""
    return Not(P(Not(f)))


def implies(a: Formula, b: Formula) -> Formula:
    return Or(Not(a), b)


_UNARY = {"!": Not, "~": Not, "X": X, "F": F, "G": G, "Y": Y, "P": P, "H": H}
_TOKEN = re.compile(r"\s*(->|#<|>=|<=|==|[()!~&|{}#+\-*<>=]|\d+|[A-Za-z_][A-Za-z0-9_]*)")


def _tokenize(text: str) -> list[str]:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError(f"cannot parse formula at position {pos}: {text[pos:pos + 10]!r}")
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


class _Parser:
    def __init__(self, text: str, predicates: set[str]):
        self.text, self.tokens, self.pos, self.predicates = text, _tokenize(text), 0, predicates

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            want = f"{expected!r}" if expected else "more input"
            raise ValueError(f"formula {self.text!r}: expected {want}, got "
                             f"{'end of input' if tok is None else repr(tok)}")
        self.pos += 1
        return tok

    def formula(self) -> Formula:
        left = self.disjunction()
        if self.peek() == "->":
            self.take()
            return implies(left, self.formula())
        return left

    def disjunction(self) -> Formula:
        f = self.conjunction()
        while self.peek() == "|":
            self.take()
            f = Or(f, self.conjunction())
        return f

    def conjunction(self) -> Formula:
        f = self.binary()
        while self.peek() == "&":
            self.take()
            f = And(f, self.binary())
        return f

    def binary(self) -> Formula:
        f = self.unary()
        if self.peek() in ("U", "S"):
            op = Until if self.take() == "U" else Since
            return op(f, self.binary())
        return f

    def unary(self) -> Formula:
        tok = self.peek()
        if tok in _UNARY:
            self.take()
            return _UNARY[tok](self.unary())
        return self.atom()

    def atom(self) -> Formula:
        tok = self.take()
        if tok == "(":
            f = self.formula()
            self.take(")")
            return f
        if tok == "{":
            f = self.counting()
            self.take("}")
            return f
        if tok in ("true", "false"):
            return Const(tok == "true")
        if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tok) and tok not in ("U", "S"):
            return Pred(tok) if tok in self.predicates else Letter(tok)
        raise ValueError(f"formula {self.text!r}: unexpected {tok!r}")

    # counting atoms: {lin cmp lin}
    def linear(self) -> tuple[dict[Formula, int], int, bool | None]:
        terms: dict[Formula, int] = {}
        const, prefix, sign = 0, None, 1
        if self.peek() == "-":
            self.take()
            sign = -1
        while True:
            coef = 1
            if self.peek() is not None and self.peek().isdigit():
                coef = int(self.take())
                if self.peek() == "*":
                    self.take()
                else:
                    const += sign * coef
                    coef = None
            if coef is not None:
                mark = self.take()
                if mark not in ("#", "#<"):
                    raise ValueError(f"formula {self.text!r}: expected a #-term, got {mark!r}")
                is_prefix = mark == "#<"
                if prefix is not None and prefix != is_prefix:
                    raise ValueError("a counting atom cannot mix # and #< terms")
                prefix = is_prefix
                f = self.unary()
                terms[f] = terms.get(f, 0) + sign * coef
            if self.peek() in ("+", "-"):
                sign = 1 if self.take() == "+" else -1
            else:
                return terms, const, prefix

    def counting(self) -> Formula:
        lt, lc, lp = self.linear()
        op = self.take()
        if op not in (">=", ">", "<=", "<", "=", "=="):
            raise ValueError(f"formula {self.text!r}: expected a comparison, got {op!r}")
        rt, rc, rp = self.linear()
        if lp is not None and rp is not None and lp != rp:
            raise ValueError("a counting atom cannot mix # and #< terms")
        prefix = bool(lp if lp is not None else rp)
        diff = dict(lt)
        for f, c in rt.items():
            diff[f] = diff.get(f, 0) - c
        terms = tuple((c, f) for f, c in diff.items() if c != 0)
        if not terms:
            raise ValueError(f"formula {self.text!r}: counting atom without #-terms")
        k = rc - lc  # sum_k c_k #phi_k  (op)  k
        neg = tuple((-c, f) for c, f in terms)
        if op == ">=":
            return Count(terms, k, prefix)
        if op == ">":
            return Count(terms, k + 1, prefix)
        if op == "<=":
            return Count(neg, -k, prefix)
        if op == "<":
            return Count(neg, -k + 1, prefix)
        return And(Count(terms, k, prefix), Count(neg, -k, prefix))


def parse(text: str, predicates: Mapping[str, NumericalPredicate] | None = None) -> Formula:
    """Parse an LTL(Mon) formula, e.g. ``"(a & X b) | F(prime & c)"`` or ``"{#a > #b}"``.

    Identifiers that name a predicate (default: the standard ones, see
    :data:`~.predicates.STANDARD_PREDICATES`) are predicates; any other identifier is a letter.
    Precedence, loosest first: ``->`` (right), ``|``, ``&``, ``U``/``S`` (right), prefix
    operators ``! X F G Y P H``.
    """
    if not isinstance(text, str):
        raise TypeError(f"formula text must be a string, got {type(text).__name__}")
    names = set(predicate_table(predicates))
    p = _Parser(text, names)
    f = p.formula()
    if p.peek() is not None:
        raise ValueError(f"formula {text!r}: unexpected {p.peek()!r} after a complete formula")
    return f


def subformulas(f: Formula) -> list[Formula]:
    """All distinct subformulas, children before parents."""
    out: dict[Formula, None] = {}

    def visit(g: Formula) -> None:
        if g in out:
            return
        if isinstance(g, Not):
            visit(g.arg)
        elif isinstance(g, (And, Or, Until, Since)):
            visit(g.left)
            visit(g.right)
        elif isinstance(g, Count):
            for _, h in g.terms:
                visit(h)
        elif not isinstance(g, (Letter, Pred, Const)):
            raise TypeError(f"not an LTL formula node: {g!r}")
        out[g] = None

    visit(f)
    return list(out)


def formula_size(f: Formula) -> int:
    """Number of distinct subformulas (the DAG size)."""
    return len(subformulas(f))


def letters_of(f: Formula) -> set[str]:
    return {g.letter for g in subformulas(f) if isinstance(g, Letter)}


def check_word(word: str | Sequence[str], alphabet: Sequence[str] | None) -> list[str]:
    """Validate a non-empty word (a string of one-character letters or a sequence of letters)."""
    if isinstance(word, (str, Sequence)):
        letters = list(word)
    else:
        raise TypeError(f"word must be a string or a sequence of letters, got {type(word).__name__}")
    if not letters:
        raise ValueError("word must be non-empty (positions start at 1)")
    if alphabet is not None:
        allowed = set(alphabet)
        for pos, a in enumerate(letters, start=1):
            if a not in allowed:
                raise ValueError(f"word has letter {a!r} at position {pos}, outside the alphabet "
                                 f"{sorted(allowed)}")
    return letters


def evaluate(f: Formula, word: str | Sequence[str],
             predicates: Mapping[str, NumericalPredicate] | None = None,
             alphabet: Sequence[str] | None = None) -> np.ndarray:
    """Truth value of ``f`` at every position: bool array (n,), index i - 1 for position i."""
    letters = check_word(word, alphabet)
    table = predicate_table(predicates)
    n = len(letters)
    idx = np.arange(n)
    vals: dict[Formula, np.ndarray] = {}
    for g in subformulas(f):
        if isinstance(g, Letter):
            v = np.array([a == g.letter for a in letters])
        elif isinstance(g, Pred):
            if g.name not in table:
                raise ValueError(f"formula uses predicate {g.name!r}, which is not defined")
            v = np.array([table[g.name](i, n) for i in range(1, n + 1)])
        elif isinstance(g, Const):
            v = np.full(n, g.value)
        elif isinstance(g, Not):
            v = ~vals[g.arg]
        elif isinstance(g, And):
            v = vals[g.left] & vals[g.right]
        elif isinstance(g, Or):
            v = vals[g.left] | vals[g.right]
        elif isinstance(g, (Until, Since)):
            phi, psi = vals[g.left], vals[g.right]
            bad = np.concatenate([[0], np.cumsum(~phi)])  # bad[k] = #{!phi at indices < k}
            i, j = idx[:, None], idx[None, :]
            if isinstance(g, Until):  # exists j > i: psi(j) and phi(k) for i < k < j
                between_ok = (bad[np.maximum(j, i + 1)] - bad[np.minimum(i + 1, j)]) == 0
                v = np.any((j > i) & psi[None, :] & between_ok, axis=1)
            else:  # exists j < i: psi(j) and phi(k) for j < k < i
                between_ok = (bad[np.maximum(i, j + 1)] - bad[np.minimum(j + 1, i)]) == 0
                v = np.any((j < i) & psi[None, :] & between_ok, axis=1)
        elif isinstance(g, Count):
            if g.prefix:  # counts over positions 1..i
                total = sum(c * np.cumsum(vals[h]) for c, h in g.terms)
            else:
                total = np.full(n, sum(c * int(vals[h].sum()) for c, h in g.terms))
            v = total >= g.threshold
        vals[g] = np.asarray(v, dtype=bool)
    return vals[f]


def holds(f: Formula, word: str | Sequence[str], i: int = 1,
          predicates: Mapping[str, NumericalPredicate] | None = None,
          alphabet: Sequence[str] | None = None) -> bool:
    """Does ``f`` hold at position ``i`` (1-based) of ``word``? (i = 1: the word is accepted.)"""
    v = evaluate(f, word, predicates, alphabet)
    if isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= v.size:
        raise ValueError(f"i must be a position in 1..{v.size}, got {i!r}")
    return bool(v[i - 1])
