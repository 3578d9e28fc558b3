"""The MATH-style evaluation loop of Llemma (Sec. 3.1-3.2) over any text backend.

:class:`MathEvaluator` prompts a :class:`~iclr24.kits.language_models.TextBackend` with a
few-shot context followed by ``Problem:\\n<problem>\\n\\nSolution:`` (the Minerva layout the
Llemma fork uses), samples ``k`` solutions (greedy when ``temperature == 0``, which is how the
paper reports maj@1), stops each at the end-of-solution marker, extracts and normalises each
final answer (:mod:`.answers`) and votes (:func:`~.voting.majority_vote`) with the Minerva /
SymPy checker (:mod:`.equivalence`). With ``tool="python"`` (MATH+Python, GSM8k+Python) the
completion is a program instead: it runs in the sandbox (:mod:`.program_aided`) and its last
printed line is the answer, checked the same way.

Out of reach here: Llemma itself (7B/34B), MATH and GSM8k (no offline copy), the paper's k
(256 on MATH); the harness runs unchanged on a user's own checkpoint
(:func:`~iclr24.kits.language_models.load_hf_checkpoint` + ``LocalTextModel``) or on an
OpenAI-compatible server (:class:`~iclr24.kits.language_models.OpenAICompatibleClient`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .answers import END_OF_SOLUTION, INVALID_ANSWER, extract_final_answer, normalize_tex
from .equivalence import is_equiv as _minerva_equiv
from .program_aided import extract_program, program_answer, run_python
from .voting import majority_vote

__all__ = ["MINERVA_ARITHMETIC_FEWSHOT", "MINERVA_MATH_FEWSHOT", "MathEvaluator", "MathProblem",
           "maj_at_k", "minerva_prompt"]

_STOPS = (END_OF_SOLUTION, "\n\nProblem:")
_PYTHON_STOPS = ("```\n", "\n\nProblem:")


@dataclass(frozen=True)
class MathProblem:
    """A problem statement and its gold answer (a TeX string; an int is written as digits)."""

    problem: str
    answer: str


def minerva_prompt(problem: str, fewshot: str = "", *, tool: str = "none") -> str:
    """``fewshot`` + ``Problem:\\n{problem}\\n\\nSolution:`` (+ an opened ```python fence for
    the Python tool)."""
    head = f"{fewshot}\n\n" if fewshot else ""
    tail = "\n```python\n" if tool == "python" else ""
    return f"{head}Problem:\n{problem}\n\nSolution:{tail}"


def _as_problem(p, i: int) -> MathProblem:
    if isinstance(p, MathProblem):
        return p
    if hasattr(p, "question") and hasattr(p, "answer"):  # the kit's ArithmeticProblem
        return MathProblem(str(p.question), str(p.answer))
    if isinstance(p, tuple) and len(p) == 2:
        return MathProblem(str(p[0]), str(p[1]))
    raise TypeError(f"problems[{i}] must be a MathProblem, an (problem, answer) pair or have "
                    f".question/.answer, got {type(p).__name__}")


def maj_at_k(answers: Sequence[str], gold: str, ks: Sequence[int],
             is_equiv: Callable[[str, str], bool] = _minerva_equiv) -> dict[int, tuple[int, float]]:
    """{k: (acc, pass_rate)} of majority voting over the first k of ``answers`` (the usual way
    to read maj@k for several k from one set of samples)."""
    out = {}
    for k in ks:
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= len(answers):
            raise ValueError(f"ks must be ints in [1, {len(answers)}], got {k!r}")
        v = majority_vote(answers[:k], gold, is_equiv=is_equiv)
        out[k] = (v.acc, v.pass_rate)
    return out


class MathEvaluator:
    """Few-shot maj@k evaluation of a text backend ``lm`` (see the module docstring).

    fewshot: the worked examples placed before each problem ("" for a model trained on the
    format). k / temperature / top_p: samples per problem (the fork's maj@k defaults are
    temperature 0.6, top-p 0.95; ``temperature=0`` with ``k=1`` is greedy maj@1). tool:
    ``"none"`` or ``"python"``. is_equiv: the checker (default Minerva + SymPy), memoised per
    evaluator. batch_size: prompts per ``generate`` call.
    """

    def __init__(self, lm, fewshot: str = "", k: int = 1, temperature: float = 0.0,
                 top_p: float = 1.0, tool: str = "none", *, max_new_tokens: int = 256,
                 seed: int = 0, batch_size: int = 16, timeout: float = 5.0,
                 is_equiv: Callable[[str, str], bool] | None = None) -> None:
        if not callable(getattr(lm, "generate", None)) or not getattr(lm, "supports_generate",
                                                                        True):
            raise TypeError(f"lm must be a TextBackend that can generate, got {type(lm).__name__}")
        if not isinstance(fewshot, str):
            raise TypeError(f"fewshot must be a str, got {type(fewshot).__name__}")
        for name, v in (("k", k), ("max_new_tokens", max_new_tokens), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        if not temperature >= 0 or not 0 < top_p <= 1:
            raise ValueError(f"temperature must be >= 0 and top_p in (0, 1], got {temperature}, "
                             f"{top_p}")
        if temperature == 0 and k > 1:
            raise ValueError("k > 1 needs temperature > 0 (greedy samples are all the same)")
        if tool not in ("none", "python"):
            raise ValueError(f"tool must be 'none' or 'python', got {tool!r}")
        self.lm, self.fewshot, self.k = lm, fewshot, k
        self.temperature, self.top_p, self.tool = float(temperature), float(top_p), tool
        self.max_new_tokens, self.seed, self.batch_size = max_new_tokens, int(seed), batch_size
        self.timeout = float(timeout)
        equiv = is_equiv or functools.partial(_minerva_equiv, timeout=timeout)
        self.is_equiv = functools.lru_cache(maxsize=65536)(equiv)

    def answer_of(self, completion: str) -> str:
        """The normalised answer of one completion (program output for the Python tool)."""
        if self.tool == "python":
            raw = program_answer(run_python(extract_program(completion), timeout=self.timeout))
        else:
            raw = extract_final_answer(completion)
        return raw if raw == INVALID_ANSWER else normalize_tex(raw)

    def evaluate(self, problems: Sequence, ks: Sequence[int] | None = None):
        """One row per problem (a pandas DataFrame): problem, gold, completions, answers,
        elected, acc (maj@k), pass_rate, n_invalid, and ``acc@j`` / ``pass@j`` for each j in
        ``ks`` (maj@j over the first j samples)."""
        import pandas as pd

        probs = [_as_problem(p, i) for i, p in enumerate(problems)]
        if not probs:
            raise ValueError("problems must be non-empty")
        ks = sorted(set(ks or [self.k]))
        stops = list(_PYTHON_STOPS if self.tool == "python" else _STOPS)
        rows = []
        for start in range(0, len(probs), self.batch_size):
            chunk = probs[start:start + self.batch_size]
            prompts = [minerva_prompt(p.problem, self.fewshot, tool=self.tool) for p in chunk]
            outs = self.lm.generate(prompts, self.max_new_tokens, temperature=self.temperature,
                                    top_p=self.top_p, n=self.k, stop=stops,
                                    seed=self.seed + start)
            for p, completions in zip(chunk, outs):
                gold = normalize_tex(p.answer)
                answers = [self.answer_of(c) for c in completions]
                vote = majority_vote(answers, gold, is_equiv=self.is_equiv)
                row = {"problem": p.problem, "gold": gold, "completions": completions,
                       "answers": answers, "elected": vote.elected, "acc": vote.acc,
                       "pass_rate": vote.pass_rate,
                       "n_invalid": sum(a == INVALID_ANSWER for a in answers)}
                for j, (acc, pr) in maj_at_k(answers, gold, ks, self.is_equiv).items():
                    row[f"acc@{j}"], row[f"pass@{j}"] = acc, pr
                rows.append(row)
        return pd.DataFrame(rows)


# Four worked arithmetic examples in the layout of the Minerva/Llemma 4-shot MATH prompt (the
# MATH examples themselves are about other problems; ours match the synthetic task).
MINERVA_ARITHMETIC_FEWSHOT = "\n\n".join(
    f"Problem:\n{q}\n\nSolution:\n{s}\nFinal Answer: The final answer is ${a}$. "
    f"I hope it is correct."
    for q, s, a in (
        ("What is 23 + 58?", "23 + 58 = 81.", "81"),
        ("What is 7 * 9 - 15?", "7 * 9 = 63. 63 - 15 = 48.", "48"),
        ("What is 64 - 27 + 5?", "64 - 27 = 37. 37 + 5 = 42.", "42"),
        ("What is 15 * 6?", "15 * 6 = 90.", "90"),
    ))

# Minerva's 4-shot MATH prompt (Lewkowycz et al. 2022, App. D), which the Llemma fork and
# EleutherAI's minerva_math task place before every MATH problem; kept character for
# character, including the stray "}" after the first problem, since the paper's numbers were
# measured with it. Use it for MATH-style problems (``MathEvaluator(lm, MINERVA_MATH_FEWSHOT)``,
# gold answers from :func:`~.answers.extract_boxed_answer`).
MINERVA_MATH_FEWSHOT = r"""Problem:
Find the domain of the expression  $\frac{\sqrt{x-2}}{\sqrt{5-x}}$.}

Solution:
The expressions inside each square root must be non-negative. Therefore, $x-2 \ge 0$, so $x\ge2$, and $5 - x \ge 0$, so $x \le 5$. Also, the denominator cannot be equal to zero, so $5-x>0$, which gives $x<5$. Therefore, the domain of the expression is $\boxed{[2,5)}$.
Final Answer: The final answer is $[2,5)$. I hope it is correct.

Problem:
If $\det \mathbf{A} = 2$ and $\det \mathbf{B} = 12,$ then find $\det (\mathbf{A} \mathbf{B}).$

Solution:
We have that $\det (\mathbf{A} \mathbf{B}) = (\det \mathbf{A})(\det \mathbf{B}) = (2)(12) = \boxed{24}.$
Final Answer: The final answer is $24$. I hope it is correct.

Problem:
Terrell usually lifts two 20-pound weights 12 times. If he uses two 15-pound weights instead, how many times must Terrell lift them in order to lift the same total weight?

Solution:
If Terrell lifts two 20-pound weights 12 times, he lifts a total of $2\cdot 12\cdot20=480$ pounds of weight.  If he lifts two 15-pound weights instead for $n$ times, he will lift a total of $2\cdot15\cdot n=30n$ pounds of weight.  Equating this to 480 pounds, we can solve for $n$:
\begin{align*}
30n&=480\\
\Rightarrow\qquad n&=480/30=\boxed{16}
\end{align*}
Final Answer: The final answer is $16$. I hope it is correct.

Problem:
If the system of equations

\begin{align*}
6x-4y&=a,\\
6y-9x &=b.
\end{align*}has a solution $(x, y)$ where $x$ and $y$ are both nonzero,
find $\frac{a}{b},$ assuming $b$ is nonzero.

Solution:
If we multiply the first equation by $-\frac{3}{2}$, we obtain

$$6y-9x=-\frac{3}{2}a.$$Since we also know that $6y-9x=b$, we have

$$-\frac{3}{2}a=b\Rightarrow\frac{a}{b}=\boxed{-\frac{2}{3}}.$$
Final Answer: The final answer is $-\frac{2}{3}$. I hope it is correct."""
