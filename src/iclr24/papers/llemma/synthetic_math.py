"""Synthetic stand-ins for Proof-Pile-2's three sources and for MATH, over the kit's arithmetic
problems (exact integer answers), for the tiny-model claims.

- :func:`worked_solution` - a Minerva-format worked solution (the evaluation format, and the
  "web math" source): ``Problem:\\n... \\n\\nSolution:\\n37 * 24 = 888. 888 + 5 = 893.\\n``
  ``Final Answer: The final answer is $893$. I hope it is correct.``
- :func:`latex_derivation` - an arXiv-like paragraph deriving the same value in LaTeX.
- :func:`python_solution` - AlgebraicStack-like code computing it.
- general text: the kit's offline English corpus (CPython's pydoc topics).

Steps follow the usual precedence: products left to right, then sums and differences left to
right, one intermediate result per step.
"""

from __future__ import annotations

from iclr24.kits.language_models import ArithmeticProblem

from .answers import format_final_answer

__all__ = ["latex_derivation", "python_solution", "solution_steps", "worked_solution"]


def solution_steps(expression: str) -> list[tuple[str, int]]:
    """[(step expression, value), ...] evaluating ``expression`` ("37 * 24 + 5")."""
    tokens = expression.split()
    if len(tokens) < 3 or len(tokens) % 2 == 0:
        raise ValueError(f"expression must be 'a op b [op c ...]' with spaces, got {expression!r}")
    steps: list[tuple[str, int]] = []
    terms, ops = [int(tokens[0])], []
    for op, num in zip(tokens[1::2], tokens[2::2]):
        if op not in "+-*" or len(op) != 1:
            raise ValueError(f"unknown operator {op!r} in {expression!r}")
        if op == "*":
            value = terms[-1] * int(num)
            steps.append((f"{terms[-1]} * {num}", value))
            terms[-1] = value
        else:
            ops.append(op)
            terms.append(int(num))
    total = terms[0]
    for op, v in zip(ops, terms[1:]):
        new = total + v if op == "+" else total - v
        steps.append((f"{total} {op} {v}", new))
        total = new
    return steps


def worked_solution(problem: ArithmeticProblem, *, with_problem: bool = True) -> str:
    """The Minerva-format solution text (optionally preceded by its ``Problem:`` block)."""
    steps = solution_steps(problem.expression)
    body = " ".join(f"{e} = {v}." for e, v in steps)
    solution = f"{body}\n{format_final_answer(str(problem.answer))}"
    if not with_problem:
        return solution
    return f"Problem:\n{problem.question}\n\nSolution:\n{solution}"


def latex_derivation(problem: ArithmeticProblem) -> str:
    """An arXiv-style paragraph: ``We evaluate $...$. We have $...$. Hence $... = v$.``"""
    steps = solution_steps(problem.expression)
    tex = problem.expression.replace("*", "\\cdot")
    lines = [f"We evaluate ${tex}$."]
    lines += [f"We have ${e.replace('*', chr(92) + 'cdot')} = {v}$." for e, v in steps]
    lines.append(f"Hence ${tex} = {problem.answer}$.")
    return " ".join(lines)


def python_solution(problem: ArithmeticProblem) -> str:
    """A small Python function computing the answer, one line per step."""
    steps = solution_steps(problem.expression)
    lines = [f"# {problem.question}", "def solve():"]
    lines += [f"    t{i} = {e}  # {v}" for i, (e, v) in enumerate(steps)]
    lines.append(f"    return t{len(steps) - 1}")
    return "\n".join(lines)
