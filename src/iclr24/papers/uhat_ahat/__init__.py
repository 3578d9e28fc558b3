"""Logical Languages Accepted by Transformer Encoders with Hard Attention (Barceló,
Kozachinskiy, Lin, Podolskii; ICLR 2024; arXiv 2310.03817; no official code: theory paper).

What the paper shows. Unique-hard-attention encoders (UHAT: each position attends to the
leftmost maximising position) recognise every language definable in first-order logic with
unary numerical predicates, FO(Mon) (via LTL(Mon), Kamp's theorem and one attention layer per
temporal operator); average-hard-attention encoders (AHAT: the mean over all maximisers) also
recognise FO(Mon) with counting terms, e.g. MAJORITY, outside AC^0. (The paper's negative result,
an AC^0 language no UHAT recognises, is a theorem and is not "reproduced" here.)

How the code maps to it.
- :mod:`.ltl`: LTL(Mon) + counting atoms: AST, :func:`ltl.parse`, reference semantics
  :func:`ltl.evaluate` / :func:`ltl.holds` (the definitions, literally).
- :mod:`.fo`: FO(Mon): :func:`fo.parse`, brute-force :func:`fo.holds`, and the guarded
  front-end :func:`fo.to_ltl`.
- :mod:`.predicates`: :class:`NumericalPredicate` (a function of i and n) and standard ones.
- :mod:`.encoder`: :class:`HardAttentionEncoder` with explicit rational weights, executed in
  exact ``Fraction`` or float64 arithmetic, with UHA / AHA / softmax attention; float64 is
  guaranteed up to ``FLOAT64_MAX_LENGTH`` (505) positions for until/since, beyond which
  ``accepts`` switches to exact arithmetic.
- :mod:`.compiler`: :func:`compile_uhat`, :func:`compile_ahat` (one register per subformula;
  gadgets in the module docstring).
- :mod:`.random_inputs`: :func:`random_formula`, :func:`random_words`.
- ``claims.py``: ``uhat_compiler_exact`` and ``ahat_counting``.

What differs from the paper: the gadgets for until/since and for counting are ours (stated and
proved in :mod:`.compiler`); acceptance reads the root register at position 1; the FO front-end
covers a guarded fragment, not Kamp's full translation. Prefix counts compile only behind an
explicit causal-mask extension.

Usage::

    from iclr24.papers.uhat_ahat import compile_uhat, ltl
    enc = compile_uhat("(a & X b) | F(prime & c)", alphabet="abc")
    enc.accepts("abca"), ltl.holds(enc.formula, "abca")     # the same, for every word
"""

from . import fo, ltl
from .compiler import EPSILON, FLOAT64_MAX_LENGTH, PositionalFeature, compile_ahat, compile_uhat
from .encoder import AttentionHead, EncoderLayer, FeedForward, HardAttentionEncoder, Linear
from .predicates import STANDARD_PREDICATES, NumericalPredicate
from .random_inputs import random_formula, random_words

__all__ = [
    "EPSILON",
    "FLOAT64_MAX_LENGTH",
    "STANDARD_PREDICATES",
    "AttentionHead",
    "EncoderLayer",
    "FeedForward",
    "HardAttentionEncoder",
    "Linear",
    "NumericalPredicate",
    "PositionalFeature",
    "compile_ahat",
    "compile_uhat",
    "fo",
    "ltl",
    "random_formula",
    "random_words",
]
