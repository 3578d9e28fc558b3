"""FO(Mon): first-order logic over positions with letter atoms, order and unary numerical
predicates (paper Sec. 3), its brute-force semantics, and a guarded front-end to LTL(Mon).

Syntax: ``a(x)`` (letter a at x), ``x < y``, ``x = y``, ``prime(x)`` (any predicate name),
``!``, ``&``, ``|``, ``->``, ``exists y. phi``, ``forall y. phi``. A sentence is accepted by a
word when it is true; a formula with one free variable is read at position 1 (the LTL
convention).

:func:`to_ltl` translates the *guarded* fragment with one free variable x (full Kamp
translation is non-elementary and out of scope):

- ``exists y. (x < y & psi(y))``  ->  F psi;   ``exists y. (y < x & psi(y))``  ->  P psi;
- ``exists y. (x < y & psi(y) & forall z. ((x < z & z < y) -> chi(z)))``  ->  chi U psi
  (and the mirror, -> chi S psi);
- ``exists y. psi(y)``  ->  P psi | psi | F psi;  ``forall`` as ``!exists!``;
- Boolean connectives, letters and predicates of x.

Anything else raises ValueError naming the offending subformula.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from . import ltl
from .predicates import NumericalPredicate, predicate_table

__all__ = [
    "FO_NODES",
    "Equal",
    "Exists",
    "FAnd",
    "FNot",
    "FOFormula",
    "FOr",
    "Less",
    "LetterAt",
    "PredAt",
    "free_variables",
    "holds",
    "parse",
    "to_ltl",
]


@dataclass(frozen=True)
class LetterAt:
    letter: str
    var: str

    def __str__(self) -> str:
        return f"{self.letter}({self.var})"


@dataclass(frozen=True)
class PredAt:
    name: str
    var: str

    def __str__(self) -> str:
        return f"{self.name}({self.var})"


@dataclass(frozen=True)
class Less:
    left: str
    right: str

    def __str__(self) -> str:
        return f"{self.left} < {self.right}"


@dataclass(frozen=True)
class Equal:
    left: str
    right: str

    def __str__(self) -> str:
        return f"{self.left} = {self.right}"


@dataclass(frozen=True)
class FNot:
    arg: FOFormula

    def __str__(self) -> str:
        return f"!({self.arg})"


@dataclass(frozen=True)
class FAnd:
    left: FOFormula
    right: FOFormula

    def __str__(self) -> str:
        return f"({self.left} & {self.right})"


@dataclass(frozen=True)
class FOr:
    left: FOFormula
    right: FOFormula

    def __str__(self) -> str:
        return f"({self.left} | {self.right})"


@dataclass(frozen=True)
class Exists:
    var: str
    body: FOFormula

    def __str__(self) -> str:
        return f"(exists {self.var}. {self.body})"


FOFormula = LetterAt | PredAt | Less | Equal | FNot | FAnd | FOr | Exists
FO_NODES = (LetterAt, PredAt, Less, Equal, FNot, FAnd, FOr, Exists)


def _forall(var: str, body: FOFormula) -> FOFormula:
    return FNot(Exists(var, FNot(body)))


_TOKEN = re.compile(r"\s*(->|[()!~&|<=.]|[A-Za-z_][A-Za-z0-9_]*)")


class _Parser:
    def __init__(self, text: str):
        self.text, self.tokens, pos = text, [], 0
        stripped = text.rstrip()
        while pos < len(stripped):
            m = _TOKEN.match(stripped, pos)
            if not m:
                raise ValueError(f"cannot parse FO formula at position {pos}: "
                                 f"{stripped[pos:pos + 10]!r}")
            self.tokens.append(m.group(1))
            pos = m.end()
        self.pos = 0

    def peek(self, k: int = 0):
        j = self.pos + k
        return self.tokens[j] if j < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise ValueError(f"FO formula {self.text!r}: expected {expected or 'more input'!r}, "
                             f"got {'end of input' if tok is None else repr(tok)}")
        self.pos += 1
        return tok

    def formula(self) -> FOFormula:
        left = self.disjunction()
        if self.peek() == "->":
            self.take()
            return FOr(FNot(left), self.formula())
        return left

    def disjunction(self):
        f = self.conjunction()
        while self.peek() == "|":
            self.take()
            f = FOr(f, self.conjunction())
        return f

    def conjunction(self):
        f = self.unary()
        while self.peek() == "&":
            self.take()
            f = FAnd(f, self.unary())
        return f

    def unary(self):
        tok = self.peek()
        if tok in ("!", "~"):
            self.take()
            return FNot(self.unary())
        if tok in ("exists", "forall"):
            self.take()
            var = self.take()
            self.take(".")
            body = self.formula()  # a quantifier's scope extends as far right as possible
            return Exists(var, body) if tok == "exists" else _forall(var, body)
        if tok == "(":
            self.take()
            f = self.formula()
            self.take(")")
            return f
        name = self.take()
        if self.peek() == "(":
            self.take()
            var = self.take()
            self.take(")")
            return ("atom", name, var)  # resolved to a letter or predicate in parse()
        op = self.take()
        if op not in ("<", "="):
            raise ValueError(f"FO formula {self.text!r}: expected '<' or '=' after {name!r}")
        return Less(name, self.take()) if op == "<" else Equal(name, self.take())


def _resolve(f, predicates: set[str]):
    if isinstance(f, tuple):
        _, name, var = f
        return PredAt(name, var) if name in predicates else LetterAt(name, var)
    if isinstance(f, FNot):
        return FNot(_resolve(f.arg, predicates))
    if isinstance(f, (FAnd, FOr)):
        return type(f)(_resolve(f.left, predicates), _resolve(f.right, predicates))
    if isinstance(f, Exists):
        return Exists(f.var, _resolve(f.body, predicates))
    return f


def parse(text: str, predicates: Mapping[str, NumericalPredicate] | None = None) -> FOFormula:
    """Parse an FO(Mon) formula, e.g.
    ``"exists x. (a(x) & exists y. (x < y & b(y)))"``. ``name(v)`` is a predicate when
    ``name`` is a known predicate (default: the standard ones), otherwise a letter."""
    if not isinstance(text, str):
        raise TypeError(f"FO formula text must be a string, got {type(text).__name__}")
    p = _Parser(text)
    f = p.formula()
    if p.peek() is not None:
        raise ValueError(f"FO formula {text!r}: unexpected {p.peek()!r}")
    return _resolve(f, set(predicate_table(predicates)))


def free_variables(f: FOFormula) -> set[str]:
    if isinstance(f, (LetterAt, PredAt)):
        return {f.var}
    if isinstance(f, (Less, Equal)):
        return {f.left, f.right}
    if isinstance(f, FNot):
        return free_variables(f.arg)
    if isinstance(f, (FAnd, FOr)):
        return free_variables(f.left) | free_variables(f.right)
    if isinstance(f, Exists):
        return free_variables(f.body) - {f.var}
    raise TypeError(f"not an FO formula node: {f!r}")


def holds(f: FOFormula, word: str | Sequence[str], assignment: Mapping[str, int] | None = None,
          predicates: Mapping[str, NumericalPredicate] | None = None,
          alphabet: Sequence[str] | None = None) -> bool:
    """Brute-force truth of ``f`` on ``word`` (positions 1..n) under ``assignment``
    (variable -> position); free variables not assigned are read at position 1."""
    letters = ltl.check_word(word, alphabet)
    table = predicate_table(predicates)
    n = len(letters)
    env = {v: 1 for v in free_variables(f)}
    env.update(assignment or {})
    for v, i in env.items():
        if not 1 <= i <= n:
            raise ValueError(f"variable {v!r} assigned position {i}, outside 1..{n}")

    def ev(g, env) -> bool:
        if isinstance(g, LetterAt):
            return letters[env[g.var] - 1] == g.letter
        if isinstance(g, PredAt):
            if g.name not in table:
                raise ValueError(f"FO formula uses predicate {g.name!r}, which is not defined")
            return table[g.name](env[g.var], n)
        if isinstance(g, Less):
            return env[g.left] < env[g.right]
        if isinstance(g, Equal):
            return env[g.left] == env[g.right]
        if isinstance(g, FNot):
            return not ev(g.arg, env)
        if isinstance(g, FAnd):
            return ev(g.left, env) and ev(g.right, env)
        if isinstance(g, FOr):
            return ev(g.left, env) or ev(g.right, env)
        if isinstance(g, Exists):
            return any(ev(g.body, {**env, g.var: j}) for j in range(1, n + 1))
        raise TypeError(f"not an FO formula node: {g!r}")

    return ev(f, env)


def _conjuncts(f: FOFormula) -> list[FOFormula]:
    """Top-level conjuncts, pushing negations through | and !! (so guards written with
    ``->`` or ``forall`` are found)."""
    if isinstance(f, FAnd):
        return _conjuncts(f.left) + _conjuncts(f.right)
    if isinstance(f, FNot) and isinstance(f.arg, FOr):
        return _conjuncts(FNot(f.arg.left)) + _conjuncts(FNot(f.arg.right))
    if isinstance(f, FNot) and isinstance(f.arg, FNot):
        return _conjuncts(f.arg.arg)
    return [f]


def _and_all(parts: list[FOFormula]) -> FOFormula | None:
    out = None
    for p in parts:
        out = p if out is None else FAnd(out, p)
    return out


def _between(g: FOFormula, x: str, y: str):
    """Match forall z. ((x < z & z < y) -> chi(z)), i.e. !exists z. (x < z & z < y & !chi):
    return (z, chi) or None."""
    if not (isinstance(g, FNot) and isinstance(g.arg, Exists)):
        return None
    z = g.arg.var
    parts = _conjuncts(g.arg.body)
    guards = {Less(x, z), Less(z, y)}
    if not guards <= set(parts):
        return None
    rest = [p for p in parts if p not in guards]
    if not rest:
        return z, None  # "no position between x and y": chi = false
    body = _and_all(rest)
    # forall z (x < z < y -> chi)  ==  !exists z (x < z & z < y & !chi)
    chi = body.arg if isinstance(body, FNot) else FNot(body)
    return z, chi


def to_ltl(f: FOFormula, var: str | None = None) -> ltl.Formula:
    """Translate a guarded FO(Mon) formula with at most one free variable into LTL(Mon).

    ``var`` names the free variable (inferred when there is one). A sentence is translated so
    that the LTL formula at position 1 is equivalent to it."""
    if not isinstance(f, FO_NODES):
        raise TypeError(f"to_ltl needs an FO formula (fo.parse), got {type(f).__name__}")
    free = free_variables(f)
    if len(free) > 1:
        raise ValueError(f"FO formula {f} has free variables {sorted(free)}; the guarded "
                         "fragment allows at most one")
    x = var or (next(iter(free)) if free else "_x")
    return _translate(f, x)


def _outside(g, why: str):
    raise ValueError(f"subformula {g} is outside the guarded fragment: {why}")


def _translate(g: FOFormula, x: str) -> ltl.Formula:
    if free_variables(g) - {x}:
        _outside(g, f"it has free variables other than {x!r}")
    if isinstance(g, LetterAt):
        return ltl.Letter(g.letter)
    if isinstance(g, PredAt):
        return ltl.Pred(g.name)
    if isinstance(g, Equal) and g.left == g.right:
        return ltl.Const(True)
    if isinstance(g, Less) and g.left == g.right:
        return ltl.Const(False)
    if isinstance(g, (Less, Equal)):
        _outside(g, "an order atom must be a guard of a quantifier")
    if isinstance(g, FNot):
        return ltl.Not(_translate(g.arg, x))
    if isinstance(g, FAnd):
        return ltl.And(_translate(g.left, x), _translate(g.right, x))
    if isinstance(g, FOr):
        return ltl.Or(_translate(g.left, x), _translate(g.right, x))
    if isinstance(g, Exists):
        y = g.var
        if y == x:
            _outside(g, f"it rebinds the free variable {x!r}")
        parts = _conjuncts(g.body)
        later, earlier = Less(x, y), Less(y, x)
        for guard, op, past in ((later, ltl.Until, False), (earlier, ltl.Since, True)):
            if guard not in parts:
                continue
            rest = [p for p in parts if p != guard]
            chi_ltl: ltl.Formula = ltl.Const(True)  # no between-clause: F psi / P psi
            for p in rest:
                m = _between(p, y, x) if past else _between(p, x, y)
                if m is not None:
                    z, chi = m
                    chi_ltl = ltl.Const(False) if chi is None else _translate_in(chi, z, g)
                    rest = [q for q in rest if q != p]
                    break
            psi = _and_all(rest)
            psi_ltl = ltl.Const(True) if psi is None else _translate_in(psi, y, g)
            return op(chi_ltl, psi_ltl)  # chi U psi / chi S psi
        if any(isinstance(p, (Less, Equal)) and x in (p.left, p.right) for p in parts):
            _outside(g, "a guard relating the bound and the free variable must be x < y or y < x")
        psi = _translate_in(g.body, y, g)
        return ltl.Or(ltl.Or(ltl.P(psi), psi), ltl.F(psi))  # P psi | psi | F psi
    raise TypeError(f"not an FO formula node: {g!r}")


def _translate_in(body: FOFormula, y: str, context: FOFormula) -> ltl.Formula:
    if free_variables(body) - {y}:
        _outside(context, f"the quantified body must only mention {y!r} after its guard, "
                          f"but {body} mentions {sorted(free_variables(body) - {y})}")
    return _translate(body, y)
