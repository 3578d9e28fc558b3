"""Compile LTL(Mon) (+ counting) formulas into hard-attention encoders (paper Thms. 1-2 via
Kamp's theorem for LTL(Mon); the gadgets are ours where marked).

One register per non-negation subformula, filled bottom-up; subformulas are scheduled as early
as their inputs allow, so the depth follows the nesting of temporal / counting operators.

1. Q_a: the letter's one-hot register. theta: its positional bit theta_n(i). Every subformula
   is an affine form over registers, so negation is free (!a = 1 - a, folded into whatever reads
   it); & and | are FFN gates on {0, 1}: a & b = ReLU(a + b - 1), a | b = a + b - ReLU(a + b - 1).
2. phi U psi (UHAT; our gadget, not the paper's). An FFN forms P_j = psi_j | !phi_j and the
   bounded products P_j e_j, P_j f_j with e_j = eps^j, f_j = (j/n) eps^j (eps = 1/4) from the PE.
   Query (1, -c_i) with c_i = (i + 1/2)/n and key (P_j f_j, P_j e_j) give
   s_ij = P_j eps^j (j - i - 1/2)/n: positive exactly at P-positions after i and strictly
   decreasing in j there, so the maximiser is the first P-position after i (if any); the value
   (P_j, psi_j) then decides, guarded by !last_i. The same holds under average attention: in
   the "exists" case the maximiser is unique, otherwise every maximiser has P = psi = 0.
3. phi S psi: the mirror (e_j = eps^(n-j), c'_i = (i - 1/2)/n, guard !first_i).
4. Counting atom sum_k c_k #phi_k >= c_0 (AHAT only): a uniform AHA head (all scores 0)
   averages phi_k into r_k = #phi_k / n; an FFN forms y_i = sum_k c_k r_k - (c_0 - 1/2)/n
   (never 0; y > 0 iff the atom holds); a second AHA head with score y_i * kappa_j
   (kappa_1 = +1, kappa_j = -1 else) and value first_j returns 1 iff y > 0. For n = 1 an FFN
   clamp of y + 1/2, gated by the PE bit [n = 1], takes over.
5. Prefix counts #<phi (positions j <= i) need attention restricted to j <= i, which unmasked
   bilinear hard attention cannot express in fixed width; they compile only with
   ``causal_extension=True`` (a causally masked averaging head; an extension of the paper's
   model, labelled as such).

Every n-dependent quantity (eps^j, c_i, 1/n, predicate bits) comes from the positional encoding;
FFN and attention weights do not depend on n.

float64 limit (ours; the paper's model is exact). Every quantity an until/since head handles, and
every gap it must resolve, is at least eps^n / (8n): products and scores >= eps^n / (2n), and the
first P-position's score beats the next one's by >= 1/4 of itself (ratio <= 3 eps). While that is
a normal float64 (>= 2^-1022) each operation has relative error <= 2^-53, so the float scores keep
the exact signs, ties and order (the error, ~7 * 2^-53 eps^j, is far below eps^j / (8n) for any
n < 10^13). ``FLOAT64_MAX_LENGTH`` is the largest n with eps^n / (8n) >= 2^-1022: 505 for
eps = 1/4. Beyond it the guarantee is gone (subnormals, then eps^538 rounds to 0: "a U b" on
a^537 b is then rejected, "F(a & X b)" on a^536 b already from n = 537); encoders with until/since
carry it as ``float64_max_length``. Counting heads need no such limit (their smallest quantity,
1/(2n), is normal for every practical n).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from . import ltl
from .encoder import AttentionHead, EncoderLayer, FeedForward, HardAttentionEncoder, Linear
from .predicates import NumericalPredicate, predicate_table

if TYPE_CHECKING:
    from .fo import FOFormula

__all__ = ["EPSILON", "FLOAT64_MAX_LENGTH", "PositionalFeature", "compile_ahat", "compile_uhat"]

EPSILON = Fraction(1, 4)
_SMALLEST_NORMAL = Fraction(1, 2**1022)  # smallest positive normal float64


def _float64_max_length(eps: Fraction) -> int:
    """Largest n with eps^n / (8n) >= 2^-1022 (see the module docstring)."""
    n = 1
    while eps ** (n + 1) / (8 * (n + 1)) >= _SMALLEST_NORMAL:
        n += 1
    return n


FLOAT64_MAX_LENGTH = _float64_max_length(EPSILON)
_ONE, _HALF = Fraction(1), Fraction(1, 2)

_FEATURES = {
    "first": lambda i, n: Fraction(int(i == 1)),
    "last": lambda i, n: Fraction(int(i == n)),
    "e_fwd": lambda i, n: EPSILON**i,  # eps^j
    "f_fwd": lambda i, n: Fraction(i, n) * EPSILON**i,  # (j/n) eps^j
    "c_fwd": lambda i, n: (i + _HALF) / n,  # (i + 1/2)/n
    "e_bwd": lambda i, n: EPSILON ** (n - i),  # eps^(n-j)
    "f_bwd": lambda i, n: Fraction(i, n) * EPSILON ** (n - i),  # (j/n) eps^(n-j)
    "c_bwd": lambda i, n: (i - _HALF) / n,  # (i - 1/2)/n
    "inv_n": lambda i, n: Fraction(1, n),
    "inv_i": lambda i, n: Fraction(1, i),
    "kappa": lambda i, n: _ONE if i == 1 else -_ONE,
    "n_is_1": lambda i, n: Fraction(int(n == 1)),
}


@dataclass(frozen=True)
class PositionalFeature:
    """One coordinate of the positional encoding, a function of (i, n): a fixed feature by
    ``name`` or the bit of a numerical ``predicate``."""

    name: str
    predicate: NumericalPredicate | None = None

    def __call__(self, i: int, n: int) -> Fraction:
        if self.predicate is not None:
            return Fraction(int(self.predicate(i, n)))
        return _FEATURES[self.name](i, n)


def _lin(bias=0, *terms) -> Linear:
    return Linear(Fraction(bias), tuple((r, Fraction(c)) for r, c in terms))


def _combine(bias, *parts) -> Linear:
    """bias + sum_k coef_k * part_k, where a part is an affine form (a Linear over registers)
    or a register index; terms keep their order of first appearance (booleans before the tiny
    positional terms, which the float64 executor relies on) and equal registers are merged."""
    total, coefs = Fraction(bias), {}
    for part, coef in parts:
        coef = Fraction(coef)
        if isinstance(part, Linear):
            total += coef * part.bias
            items = part.terms
        else:
            items = ((part, Fraction(1)),)
        for reg, c in items:
            coefs[reg] = coefs.get(reg, Fraction(0)) + coef * c
    return Linear(total, tuple((r, c) for r, c in coefs.items() if c != 0))


def _registers(aff: Linear) -> list[int]:
    return [r for r, _ in aff.terms]


class _Builder:
    """Each subformula becomes an affine form over registers (negation is free: 1 - a), ready
    after some sublayer slot (even slot 2l: attention of layer l; odd 2l + 1: its FFN)."""

    def __init__(self, alphabet: tuple[str, ...], predicates, attention: str,
                 causal_extension: bool):
        self.alphabet, self.attention, self.causal = alphabet, attention, causal_extension
        self.registers: list[str] = [f"letter:{a}" for a in alphabet]
        self.predicates = predicates
        self.positional: list = []
        self.pe_reg: dict[str, int] = {}
        self.slots: dict[int, list] = {}
        self.done: dict[ltl.Formula, tuple[Linear, int]] = {}  # formula -> (affine, ready slot)

    def pe(self, name: str) -> int:
        if name not in self.pe_reg:
            self.pe_reg[name] = self.new(f"pe:{name}")
            pred = self.predicates[name[5:]] if name.startswith("pred:") else None
            self.positional.append((self.pe_reg[name], PositionalFeature(name, pred)))
        return self.pe_reg[name]

    def new(self, name: str) -> int:
        self.registers.append(name)
        return len(self.registers) - 1

    @staticmethod
    def ffn_slot(after: int) -> int:
        s = after + 1
        return s if s % 2 == 1 else s + 1

    @staticmethod
    def attn_slot(after: int) -> int:
        s = after + 1
        return s if s % 2 == 0 else s + 1

    def add_ffn(self, slot: int, hidden: list[Linear], outputs: list[tuple[int, Linear]]):
        self.slots.setdefault(slot, []).append((hidden, outputs))

    def add_head(self, slot: int, head: AttentionHead):
        self.slots.setdefault(slot, []).append(head)

    def build(self, f: ltl.Formula) -> tuple[Linear, int]:
        if f in self.done:
            return self.done[f]
        if isinstance(f, ltl.Letter):
            out = (_lin(0, (self.alphabet.index(f.letter), 1)), -1)
        elif isinstance(f, ltl.Pred):
            out = (_lin(0, (self.pe("pred:" + f.name), 1)), -1)
        elif isinstance(f, ltl.Const):
            out = (_lin(int(f.value)), -1)
        elif isinstance(f, ltl.Not):
            a, ra = self.build(f.arg)
            out = (_combine(1, (a, -1)), ra)  # !a = 1 - a: affine, no layer needed
        elif isinstance(f, (ltl.And, ltl.Or)):
            (a, ra), (b, rb) = self.build(f.left), self.build(f.right)
            s, reg = self.ffn_slot(max(ra, rb)), self.new(str(f))
            both = _combine(-1, (a, 1), (b, 1))
            if isinstance(f, ltl.And):  # a & b = ReLU(a + b - 1)
                self.add_ffn(s, [both], [(reg, _lin(0, (0, 1)))])
            else:  # a | b = a + b - ReLU(a + b - 1)
                self.add_ffn(s, [a, b, both], [(reg, _lin(0, (0, 1), (1, 1), (2, -1)))])
            out = (_lin(0, (reg, 1)), s)
        elif isinstance(f, (ltl.Until, ltl.Since)):
            out = self.temporal(f)
        elif isinstance(f, ltl.Count):
            out = self.count(f)
        else:
            raise TypeError(f"not an LTL formula node: {f!r}")
        self.done[f] = out
        return out

    def temporal(self, f) -> tuple[Linear, int]:
        (phi, rphi), (psi, rpsi) = self.build(f.left), self.build(f.right)
        fwd = isinstance(f, ltl.Until)
        e, g = (self.pe("e_fwd"), self.pe("f_fwd")) if fwd else (self.pe("e_bwd"), self.pe("f_bwd"))
        c = self.pe("c_fwd" if fwd else "c_bwd")
        guard = self.pe("last" if fwd else "first")
        s1 = self.ffn_slot(max(rphi, rpsi))
        P, Pe, Pf = (self.new(f"{tag}[{f}]") for tag in ("P", "Pe", "Pf"))
        hidden = [
            psi, phi, _combine(0, (psi, 1), (phi, -1)),
            # P e = ReLU(psi - 1 + e) + ReLU(-psi - phi + e): booleans first, e last
            _combine(-1, (psi, 1), (e, 1)), _combine(0, (psi, -1), (phi, -1), (e, 1)),
            _combine(-1, (psi, 1), (g, 1)), _combine(0, (psi, -1), (phi, -1), (g, 1)),
        ]
        outputs = [(P, _lin(1, (0, 1), (1, -1), (2, -1))),  # P = psi | !phi
                   (Pe, _lin(0, (3, 1), (4, 1))), (Pf, _lin(0, (5, 1), (6, 1)))]
        self.add_ffn(s1, hidden, outputs)
        aP = self.new(f"attP[{f}]")
        copies = {r: self.new(f"att{r}[{f}]") for r in _registers(psi)}
        if fwd:  # s_ij = P_j eps^j (j/n - (i + 1/2)/n)
            query, key = (_lin(1), _lin(0, (c, -1))), (_lin(0, (Pf, 1)), _lin(0, (Pe, 1)))
        else:  # s_ij = P_j eps^(n-j) ((i - 1/2)/n - j/n)
            query, key = (_lin(0, (c, 1)), _lin(-1)), (_lin(0, (Pe, 1)), _lin(0, (Pf, 1)))
        kind = "average" if self.attention == "average" else "unique"
        values = ((P, aP), *copies.items())
        self.add_head(s1 + 1, AttentionHead(query, key, values, kind))
        psi_at = Linear(psi.bias, tuple((copies[r], c) for r, c in psi.terms))  # psi_{j*}
        reg = self.new(str(f))
        # result = psi_{j*} & P_{j*} & !guard_i
        self.add_ffn(s1 + 2, [_combine(-1, (aP, 1), (psi_at, 1), (guard, -1))],
                     [(reg, _lin(0, (0, 1)))])
        return _lin(0, (reg, 1)), s1 + 2

    def count(self, f: ltl.Count) -> tuple[Linear, int]:
        if self.attention != "average":
            raise ValueError(f"counting atom {f} needs average hard attention: use compile_ahat")
        if f.prefix and not self.causal:
            raise ValueError(f"prefix-count term in {f} needs the explicit causal-mask extension "
                             "(compile_ahat(..., causal_extension=True)); unmasked hard "
                             "attention cannot restrict itself to j <= i")
        built = [(c, *self.build(h)) for c, h in f.terms]
        a1 = self.attn_slot(max(r for _, _, r in built))
        regs = list(dict.fromkeys(r for _, aff, _ in built for r in _registers(aff)))
        avg = {r: self.new(f"avg{r}[{f}]") for r in regs}
        zero = (_lin(0),)
        self.add_head(a1, AttentionHead(zero, zero, tuple(avg.items()),
                                        "causal_average" if f.prefix else "average"))
        inv = self.pe("inv_i" if f.prefix else "inv_n")
        n1 = self.pe("n_is_1")
        # r_k = (averaged phi_k) = #phi_k / n;  y = sum_k c_k r_k - (c_0 - 1/2) / n
        ratios = [(Linear(aff.bias, tuple((avg[r], cc) for r, cc in aff.terms)), c)
                  for c, aff, _ in built]
        y_aff = _combine(0, *ratios, (inv, -(f.threshold - _HALF)))
        big = sum(abs(c) * (abs(aff.bias) + sum(abs(cc) for _, cc in aff.terms))
                  for c, aff, _ in built) + abs(f.threshold) + 2  # > |y| + 1/2
        y, clamp = self.new(f"y[{f}]"), self.new(f"clamp[{f}]")
        hidden = [y_aff, _combine(0, (y_aff, -1)),
                  # clamp(y + 1/2, 0, 1) gated by [n = 1]: ReLU(y + 1/2 - B(1 - n1)) - ReLU(...)
                  _combine(_HALF - big, (n1, big), (y_aff, 1)),
                  _combine(-_HALF - big, (n1, big), (y_aff, 1))]
        self.add_ffn(a1 + 1, hidden, [(y, _lin(0, (0, 1), (1, -1))),
                                      (clamp, _lin(0, (2, 1), (3, -1)))])
        t = self.new(f"threshold[{f}]")
        self.add_head(a1 + 2, AttentionHead((_lin(0, (y, 1)),), (_lin(0, (self.pe("kappa"), 1)),),
                                            ((self.pe("first"), t),), "average"))
        reg = self.new(str(f))
        self.add_ffn(a1 + 3, [_lin(0, (t, 1), (n1, -1)), _lin(0, (clamp, 1))],
                     [(reg, _lin(0, (0, 1), (1, 1)))])
        return _lin(0, (reg, 1)), a1 + 3

    def layers(self) -> list[EncoderLayer]:
        if not self.slots:
            return []
        out = []
        for layer in range(max(self.slots) // 2 + 1):
            heads = tuple(self.slots.get(2 * layer, []))
            parts = self.slots.get(2 * layer + 1, [])
            ffn = None
            if parts:
                hidden, outputs = [], []
                for h, o in parts:
                    base = len(hidden)
                    hidden.extend(h)
                    outputs.extend((dst, Linear(lin.bias, tuple((base + k, c) for k, c in lin.terms)))
                                   for dst, lin in o)
                ffn = FeedForward(tuple(hidden), tuple(outputs))
            out.append(EncoderLayer(heads, ffn))
        return out


def _compile(formula, alphabet, predicates, attention, causal_extension) -> HardAttentionEncoder:
    from . import fo

    table = predicate_table(predicates)
    if isinstance(formula, str):
        formula = ltl.parse(formula, table)
    elif isinstance(formula, fo.FO_NODES):
        formula = fo.to_ltl(formula)
    if isinstance(alphabet, str):
        alphabet = tuple(alphabet)
    if not isinstance(alphabet, Sequence) or not alphabet or not all(
            isinstance(a, str) and a for a in alphabet) or len(set(alphabet)) != len(alphabet):
        raise ValueError(f"alphabet must be a non-empty sequence of distinct letters, got {alphabet!r}")
    alphabet = tuple(alphabet)
    subs = ltl.subformulas(formula)
    for g in subs:
        if isinstance(g, ltl.Letter) and g.letter not in alphabet:
            raise ValueError(f"formula uses letter {g.letter!r}, which is not in the alphabet "
                             f"{list(alphabet)}")
        if isinstance(g, ltl.Pred) and g.name not in table:
            raise ValueError(f"formula uses predicate {g.name!r}, which is not defined; known: "
                             f"{sorted(table)}")
    b = _Builder(alphabet, table, attention, causal_extension)
    out, _ = b.build(formula)
    temporal = any(isinstance(g, (ltl.Until, ltl.Since)) for g in subs)
    return HardAttentionEncoder(alphabet=alphabet, registers=b.registers, positional=b.positional,
                                layers=b.layers(), output=out,
                                attention="average" if attention == "average" else "unique",
                                formula=formula, readout_of={g: r for g, (r, _) in b.done.items()},
                                float64_max_length=FLOAT64_MAX_LENGTH if temporal else None)


def compile_uhat(formula: str | ltl.Formula | FOFormula, alphabet: Sequence[str],
                 predicates: Mapping[str, NumericalPredicate] | None = None) -> HardAttentionEncoder:
    """Compile an LTL(Mon) formula (text, LTL node, or guarded FO formula) into a UHAT encoder
    (unique hard attention, leftmost maximiser). Counting atoms are rejected."""
    return _compile(formula, alphabet, predicates, "unique", False)


def compile_ahat(formula: str | ltl.Formula | FOFormula, alphabet: Sequence[str],
                 predicates: Mapping[str, NumericalPredicate] | None = None,
                 causal_extension: bool = False) -> HardAttentionEncoder:
    """Compile LTL(Mon) + counting atoms into an AHAT encoder (average hard attention).
    ``causal_extension=True`` allows prefix counts ``#<phi`` through a causally masked
    averaging head (an extension of the paper's unmasked model)."""
    return _compile(formula, alphabet, predicates, "average", causal_extension)
