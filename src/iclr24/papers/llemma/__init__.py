"""Llemma: an open language model for mathematics (Z. Azerbayev, H. Schoelkopf, K. Paster,
M. Dos Santos, S. McAleer, A. Q. Jiang, J. Deng, S. Biderman, S. Welleck; ICLR 2024; arXiv
2310.10631; official code EleutherAI/math-lm, evaluation in wellecks/lm-evaluation-harness).

What the paper does. Llemma continues pretraining Code Llama (7B for 200B tokens, 34B for 50B)
on Proof-Pile-2 (arXiv papers, OpenWebMath, AlgebraicStack; 55B tokens) mixed 2:4:1 with ~5%
general data, and evaluates few-shot with Minerva's protocol: a 4-shot prompt of worked
solutions ending in "Final Answer: The final answer is $X$. I hope it is correct.", answer
extraction, Minerva's normaliser, SymPy equivalence, majority voting over sampled solutions
(maj@k), and PAL-style Python tool use. MATH 4-shot greedy: Llemma-7B 18.0%, 34B 25.0% (Code
Llama 4.5% / 12.2%); maj@256: 33.5% / 43.1%.

How the code maps to it (a harness that runs on any text backend, plus the recipe in miniature).
- :mod:`.answers`: :func:`extract_final_answer` (sentinel :data:`INVALID_ANSWER`),
  :func:`extract_boxed_answer` (the gold answer of a MATH reference solution),
  :func:`normalize_tex` (Minerva appendix D, in its order; the lists checked against the fork).
- :mod:`.equivalence`: :func:`is_equiv` (string match, then SymPy ``parse_latex`` +
  ``simplify`` under timeouts in a child process), :class:`SympyEquivalence`,
  :func:`math_verify_equiv` (Hugging Face math-verify, the independent reference).
- :mod:`.voting`: :func:`majority_vote` -> :class:`VoteResult` (acc, pass_rate, votes).
- :mod:`.program_aided`: :func:`run_python` (the kit's sandbox), :func:`extract_program`,
  :func:`program_answer`.
- :mod:`.evaluator`: :class:`MathEvaluator` (few-shot maj@k over a ``TextBackend``: a tiny local
  model, SmolLM2-135M-Instruct, a user's checkpoint, an OpenAI-compatible server),
  :func:`minerva_prompt`, :func:`maj_at_k`, :data:`MINERVA_MATH_FEWSHOT` (Minerva's 4-shot MATH
  prompt, for real MATH problems), :data:`MINERVA_ARITHMETIC_FEWSHOT` (the same layout over
  the synthetic arithmetic task).
- :mod:`.mixture`: :class:`MixtureSampler`, :func:`continue_pretraining`,
  :data:`LLEMMA_WEIGHTS` (the official data weights).
- :mod:`.synthetic_math`: worked solutions, LaTeX derivations and Python solutions of the kit's
  arithmetic problems (stand-ins for MATH and Proof-Pile-2's sources).
- :mod:`.checker_pairs`: 142 answer pairs we wrote and labelled by hand.
- ``claims.py``: ``minerva_checker``, ``majority_voting`` (tiny model), ``majority_voting_smollm2``
  (SmolLM2-135M-Instruct, the paper's prompt format), ``mixture_pretraining``.

What is out of reach and what differs. Llemma's training (Code Llama 7B/34B, Proof-Pile-2, 256
A100s) and its real benchmarks (MATH, GSM8k, OCW, MMLU-STEM, SAT; no offline copy) are out of
reach: the claims use the kit's synthetic arithmetic problems rendered in the exact Minerva
format, tiny byte-level transformers and SmolLM2-135M-Instruct. k is at most 16-32 here (256 in
the paper). Formal theorem proving (Isabelle/Lean) is not implemented. Faithful quirks of the
official checker are kept: a reference that parses to zero is equivalent only by string match;
``"a "`` and unit words are deleted anywhere in an answer; a thousands-comma rule also joins
lists of digits ("1,2,3" -> "123").

Usage::

    from iclr24.kits.language_models import LocalTextModel, load_smollm2
    from iclr24.papers.llemma import MathEvaluator, MINERVA_ARITHMETIC_FEWSHOT
    ev = MathEvaluator(LocalTextModel(load_smollm2()), MINERVA_ARITHMETIC_FEWSHOT, k=8,
                       temperature=0.6, top_p=0.95)
    df = ev.evaluate([("What is 12 + 30?", "42")], ks=[1, 8])   # acc, pass_rate, acc@1, acc@8

    # MATH itself (a user's copy): Minerva's 4-shot prompt, gold from the reference solution
    from iclr24.papers.llemma import MINERVA_MATH_FEWSHOT, extract_boxed_answer
    ev = MathEvaluator(my_lm, MINERVA_MATH_FEWSHOT, max_new_tokens=512)
    df = ev.evaluate([(r["problem"], extract_boxed_answer(r["solution"])) for r in records])
"""

from .answers import (
    END_OF_SOLUTION,
    INVALID_ANSWER,
    REMOVED_EXPRESSIONS,
    SUBSTITUTIONS,
    extract_boxed_answer,
    extract_final_answer,
    format_final_answer,
    normalize_tex,
)
from .checker_pairs import ANSWER_PAIRS, AnswerPair
from .equivalence import EquivalenceResult, SympyEquivalence, is_equiv, math_verify_equiv
from .evaluator import (
    MINERVA_ARITHMETIC_FEWSHOT,
    MINERVA_MATH_FEWSHOT,
    MathEvaluator,
    MathProblem,
    maj_at_k,
    minerva_prompt,
)
from .mixture import LLEMMA_WEIGHTS, MixtureSampler, PretrainingReport, continue_pretraining
from .program_aided import ExecResult, extract_program, program_answer, run_python
from .synthetic_math import latex_derivation, python_solution, solution_steps, worked_solution
from .voting import VoteResult, majority_vote

__all__ = [
    "ANSWER_PAIRS",
    "END_OF_SOLUTION",
    "INVALID_ANSWER",
    "LLEMMA_WEIGHTS",
    "MINERVA_ARITHMETIC_FEWSHOT",
    "MINERVA_MATH_FEWSHOT",
    "REMOVED_EXPRESSIONS",
    "SUBSTITUTIONS",
    "AnswerPair",
    "EquivalenceResult",
    "ExecResult",
    "MathEvaluator",
    "MathProblem",
    "MixtureSampler",
    "PretrainingReport",
    "SympyEquivalence",
    "VoteResult",
    "continue_pretraining",
    "extract_boxed_answer",
    "extract_final_answer",
    "extract_program",
    "format_final_answer",
    "is_equiv",
    "latex_derivation",
    "maj_at_k",
    "majority_vote",
    "math_verify_equiv",
    "minerva_prompt",
    "normalize_tex",
    "program_answer",
    "python_solution",
    "run_python",
    "solution_steps",
    "worked_solution",
]
