r"""Hand-labelled answer pairs for the ``minerva_checker`` claim, written and labelled by us.

Each :class:`AnswerPair` holds a *prediction* as :func:`~.answers.extract_final_answer` returns
it from a model's "Final Answer: The final answer is ... . I hope it is correct." line (TeX
delimiters, units and words included), a MATH-style *gold* answer (the content of the
reference solution's ``\boxed{}``), whether the two are truly the same answer (our label, as a
careful human grader of MATH would decide: exact values, units and order of ordered tuples
matter; "enter all solutions" lists are sets; a rounded decimal is not the exact value) and a
category. The labels were fixed before any checker was run on them.

The table covers the cases of the Minerva normaliser (fractions and their shorthands,
decimals, radicals, units, thousands separators, ``\boxed{}``, ``x = 3``, reordered sums and
products, intervals, tuples, lists, text answers, degrees, percentages, zero) and near misses
that are not equivalent (sign, inversion, rounding, wrong units, swapped interval ends).

Two near misses are in the table on purpose to show the normaliser's documented lossiness
(Minerva appendix D deletes unit words and joins digit lists): "5 feet" vs "5 inches" and
"123" vs "1,2,3". The official procedure accepts both; their ``known_limit`` says why.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ANSWER_PAIRS", "AnswerPair"]


@dataclass(frozen=True)
class AnswerPair:
    """``known_limit`` names the documented rule of the Minerva procedure that makes the pair
    a false positive by design ("" for every other pair)."""

    pred: str
    gold: str
    equivalent: bool
    category: str
    known_limit: str = ""


_UNIT_WORDS = "lossy normaliser: unit words are deleted even when they differ"
_THOUSANDS = "lossy normaliser: the thousands-comma rule joins a list of digits"


_T, _F = True, False

ANSWER_PAIRS: tuple[AnswerPair, ...] = tuple(AnswerPair(*row) for row in (
    # fractions and decimals
    (r"$\frac{1}{2}$", r"\frac{1}{2}", _T, "fraction"),
    (r"$\frac12$", r"\frac{1}{2}", _T, "fraction"),
    (r"$0.5$", r"\frac{1}{2}", _T, "fraction"),
    (r"$1/2$", r"\frac{1}{2}", _T, "fraction"),
    (r"$\dfrac{1}{2}$", r"\frac{1}{2}", _T, "fraction"),
    (r"$\frac{2}{4}$", r"\frac{1}{2}", _T, "fraction"),
    (r"$-\frac{2}{3}$", r"-\frac{2}{3}", _T, "fraction"),
    (r"$\frac{-2}{3}$", r"-\frac{2}{3}", _T, "fraction"),
    (r"$-\frac23$", r"-\frac{2}{3}", _T, "fraction"),
    (r"$\frac{2}{3}$", r"-\frac{2}{3}", _F, "near_miss"),
    (r"$\frac{3}{2}$", r"\frac{2}{3}", _F, "near_miss"),
    (r"$0.67$", r"\frac{2}{3}", _F, "near_miss"),
    (r"$\frac{7}{4}$", r"1\frac{3}{4}", _T, "fraction"),
    (r"$\frac{10}{4}$", r"\frac{5}{2}", _T, "fraction"),
    (r"$2.5$", r"\frac{5}{2}", _T, "fraction"),
    (r"$\frac{5}{2}$", r"2.5", _T, "fraction"),
    (r"$\frac{1}{3}$", r"0.\overline{3}", _T, "fraction"),
    (r"$\frac{1}{4}$", r"\frac{1}{5}", _F, "near_miss"),
    (r"$\frac{12}{5}$", r"\frac{5}{12}", _F, "near_miss"),
    (r"$0.25$", r"\frac{1}{4}", _T, "fraction"),
    (r"$\frac{9}{3}$", r"3", _T, "fraction"),
    (r"$1\frac{1}{2}$", r"\frac{3}{2}", _T, "fraction"),
    (r"$\frac{3}{2}$", r"1.5", _T, "fraction"),
    (r"$\frac{x}{2}$", r"0.5x", _T, "fraction"),
    # integers, separators, numerals
    (r"$1,000$", r"1000", _T, "thousands"),
    (r"$1000$", r"1000", _T, "thousands"),
    (r"$10{,}000$", r"10000", _T, "thousands"),
    (r"$1,000,000$", r"1000000", _T, "thousands"),
    (r"$100$", r"1000", _F, "near_miss"),
    (r"$-7$", r"-7", _T, "integer"),
    (r"$7$", r"-7", _F, "near_miss"),
    (r"$007$", r"7", _T, "integer"),
    (r"$12.0$", r"12", _T, "integer"),
    (r"$12.5$", r"12", _F, "near_miss"),
    (r"$3.0$", r"3", _T, "integer"),
    (r"$3.01$", r"3", _F, "near_miss"),
    (r"$2.50$", r"2.5", _T, "integer"),
    (r"$1.5\times 10^3$", r"1500", _T, "integer"),
    (r"$2^{10}$", r"1024", _T, "integer"),
    (r"$10!$", r"3628800", _T, "integer"),
    (r"$\binom{5}{2}$", r"10", _T, "integer"),
    (r"$6\cdot 7$", r"42", _T, "integer"),
    (r"$2^3\cdot3$", r"24", _T, "integer"),
    (r"$\log_2 8$", r"3", _T, "integer"),
    (r"$15$", r"16", _F, "near_miss"),
    (r"$123$", r"1,2,3", _F, "near_miss", _THOUSANDS),
    # zero (the reference parses to a falsy SymPy zero)
    (r"$0$", r"0", _T, "zero"),
    (r"$0.0$", r"0", _T, "zero"),
    (r"$-0$", r"0", _T, "zero"),
    (r"$\frac{0}{5}$", r"0", _T, "zero"),
    (r"$1$", r"0", _F, "near_miss"),
    # units and words
    (r"$5$ inches", r"5", _T, "units"),
    (r"$5\text{ inches}$", r"5", _T, "units"),
    (r"$12$ dollars", r"12", _T, "units"),
    (r"$\$12$", r"12", _T, "units"),
    (r"$\$12.50$", r"12.50", _T, "units"),
    (r"$12.5$", r"\$12.50", _T, "units"),
    (r"$45$ degrees", r"45", _T, "units"),
    (r"$6$ feet", r"6", _T, "units"),
    (r"$3$ hours", r"3", _T, "units"),
    (r"$60$ mph", r"60", _T, "units"),
    (r"$25$ cents", r"25", _T, "units"),
    (r"$8\text{ cm}^2$", r"8", _T, "units"),
    (r"$20\%$", r"20", _T, "units"),
    (r"$5$ apples", r"5", _T, "units"),
    (r"5 apples", r"5", _T, "units"),
    (r"$5$ units", r"5", _T, "units"),
    (r"$30$ square units", r"30", _T, "units"),
    (r"$30$", r"30\text{ square units}", _T, "units"),
    (r"$15$ ways", r"15", _T, "units"),
    (r"$5$ feet", r"5\text{ inches}", _F, "near_miss", _UNIT_WORDS),
    # degrees
    (r"$90^\circ$", r"90", _T, "degrees"),
    (r"$90^{\circ}$", r"90^\circ", _T, "degrees"),
    # equations
    (r"$x=3$", r"3", _T, "equation"),
    (r"$x = 3$", r"3", _T, "equation"),
    (r"$y=2x+1$", r"2x+1", _T, "equation"),
    (r"$k=-4$", r"-4", _T, "equation"),
    (r"$a+b=5$", r"5", _T, "equation"),
    (r"$x=3$", r"4", _F, "near_miss"),
    (r"$x=3$ or $x=5$", r"3,5", _T, "equation"),
    # boxed
    (r"$\boxed{24}$", r"24", _T, "boxed"),
    (r"$\boxed{\frac{1}{2}}$", r"\frac{1}{2}", _T, "boxed"),
    (r"\boxed{7}", r"7", _T, "boxed"),
    (r"$\boxed{24}$", r"25", _F, "near_miss"),
    # radicals
    (r"$\sqrt{2}$", r"\sqrt{2}", _T, "radical"),
    (r"$\sqrt2$", r"\sqrt{2}", _T, "radical"),
    (r"$\frac{\sqrt{2}}{2}$", r"\frac{1}{\sqrt{2}}", _T, "radical"),
    (r"$\sqrt{8}$", r"2\sqrt{2}", _T, "radical"),
    (r"$2\sqrt2$", r"2\sqrt{2}", _T, "radical"),
    (r"$\sqrt{3}/3$", r"\frac{\sqrt{3}}{3}", _T, "radical"),
    (r"$\sqrt{3}$", r"\sqrt{2}", _F, "near_miss"),
    (r"$1.414$", r"\sqrt{2}", _F, "near_miss"),
    (r"$\sqrt{12}$", r"2\sqrt{3}", _T, "radical"),
    (r"$3\sqrt{2}$", r"\sqrt{18}", _T, "radical"),
    (r"$\sqrt[3]{8}$", r"2", _T, "radical"),
    (r"$\frac{\sqrt{5}-1}{2}$", r"\frac{-1+\sqrt{5}}{2}", _T, "radical"),
    (r"$\frac{1+\sqrt{5}}{2}$", r"\frac{1-\sqrt{5}}{2}", _F, "near_miss"),
    # reordered sums and products, expressions
    (r"$x+1$", r"1+x", _T, "expression"),
    (r"$2x+3$", r"3+2x", _T, "expression"),
    (r"$x^2-1$", r"(x-1)(x+1)", _T, "expression"),
    (r"$(x+1)^2$", r"x^2+2x+1", _T, "expression"),
    (r"$x^2+1$", r"x^2-1", _F, "near_miss"),
    (r"$3x^2+2x$", r"x(3x+2)", _T, "expression"),
    (r"$a^2b$", r"ba^2", _T, "expression"),
    (r"$x^3$", r"x^2", _F, "near_miss"),
    (r"$-x+5$", r"5-x", _T, "expression"),
    (r"$x^{2}$", r"x^2", _T, "expression"),
    (r"$\frac{x+1}{x-1}$", r"\frac{x-1}{x+1}", _F, "near_miss"),
    (r"$3+2i$", r"2i+3", _T, "expression"),
    (r"$3-2i$", r"3+2i", _F, "near_miss"),
    (r"$4\pi$", r"4\pi", _T, "pi"),
    (r"$\pi r^2$", r"r^2\pi", _T, "pi"),
    (r"$12.566$", r"4\pi", _F, "near_miss"),
    (r"$2\pi$", r"\pi", _F, "near_miss"),
    (r"$\frac{\pi}{2}$", r"\frac{1}{2}\pi", _T, "pi"),
    (r"$\infty$", r"\infty", _T, "expression"),
    (r"$\pm 3$", r"\pm3", _T, "expression"),
    # intervals, tuples, lists
    (r"$[2,5)$", r"[2,5)", _T, "interval"),
    (r"$[2, 5)$", r"[2,5)", _T, "interval"),
    (r"$(2,5]$", r"[2,5)", _F, "near_miss"),
    (r"$(-\infty, 3)$", r"(-\infty,3)", _T, "interval"),
    (r"$(0,\infty)$", r"(0,\infty)", _T, "interval"),
    (r"$x \in [2,5)$", r"[2,5)", _T, "interval"),
    (r"$(-\infty,0)\cup(0,\infty)$", r"(-\infty,0)\cup(0,\infty)", _T, "interval"),
    (r"$[1,4]$", r"[1,4)", _F, "near_miss"),
    (r"$(1,2)$", r"(1,2)", _T, "tuple"),
    (r"$\left(1,2\right)$", r"(1,2)", _T, "tuple"),
    (r"$(2,1)$", r"(1,2)", _F, "near_miss"),
    (r"$3, 2, 1$", r"1,2,3", _T, "list"),
    (r"$1,2,3$", r"1,2,3", _T, "list"),
    (r"$-2, 3$", r"3, -2", _T, "list"),
    (r"$2$ and $3$", r"2,3", _T, "list"),
    (r"$2\text{ and }3$", r"2,3", _T, "list"),
    # matrices
    (r"$\begin{pmatrix} 1 \\ 2 \end{pmatrix}$", r"\begin{pmatrix}1\\2\end{pmatrix}", _T, "matrix"),
    (r"$\begin{pmatrix} 2 \\ 1 \end{pmatrix}$", r"\begin{pmatrix}1\\2\end{pmatrix}", _F,
     "near_miss"),
    # text answers
    (r"$\text{(B)}$", r"\text{(B)}", _T, "text"),
    (r"(B)", r"\text{(B)}", _T, "text"),
    (r"$\text{(C)}$", r"\text{(B)}", _F, "near_miss"),
    (r"Monday", r"\text{Monday}", _T, "text"),
    (r"$\text{Tuesday}$", r"\text{Monday}", _F, "near_miss"),
    (r"$\text{odd}$", r"\text{odd}", _T, "text"),
    (r"even", r"\text{odd}", _F, "near_miss"),
))
