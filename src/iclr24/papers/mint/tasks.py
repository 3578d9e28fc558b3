"""MINT's task types and their official success checks (Wang et al., ICLR 2024, Sec. 2.2;
official ``mint/tasks/reasoning.py`` and ``codegen.py``), plus a generator of laptop-scale
tasks with exact references.

Checks (kept with their quirks, for fidelity):

- :class:`NumericReasoningTask` (GSM8K / MATH / HotpotQA's ``ReasoningTask``): the answer is
  lower-cased and stripped; if reference and answer both parse as floats, correct iff
  ``|ref - ans| <= 0.05 |ref|``; otherwise correct iff the reference string is contained in the
  answer (generous: "1" is in "10"). :meth:`~NumericReasoningTask.exact_match` is the strict
  variant we also report (equal numbers, or equal strings).
- :class:`MultipleChoiceTask` (MMLU): the official letter extraction (which, as written, only
  ever tests for ``"a)"``), then the reference letter contained in the answer, then the option
  texts (a wrong option's text in the answer rejects it).
- :class:`CodeGenerationTask` (HumanEval / MBPP): the proposed code and the hidden tests run
  together in the kit's sandbox (child process, timeout); success iff it exits cleanly.

TheoremQA's normaliser and ALFWorld's environment are not implemented (no offline data).

:func:`make_mint_tasks` draws tasks that are hard "in the head" but trivial with Python
(products of 3-4-digit numbers, sums of 10-15 numbers, modular powers, rounded averages) and
tiny code tasks with hidden tests: stand-ins for MINT's 586 curated instances, which need the
original datasets (and Wikipedia for HotpotQA).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from iclr24.kits.language_models import run_python

from .examples import in_context_example

__all__ = [
    "CODE_FUNCTIONS",
    "NUMERIC_KINDS",
    "CodeGenerationTask",
    "MultipleChoiceTask",
    "NumericReasoningTask",
    "Task",
    "make_mint_tasks",
    "reasoning_success",
]


@runtime_checkable
class Task(Protocol):
    task_id: str
    kind: str
    prompt: str
    reference: str
    task_type: str  # "reasoning" or "code_generation": which in-context example

    def in_context_example(self, use_tool: bool, with_feedback: bool) -> str: ...

    def success(self, answer: str) -> bool: ...

    def exact_match(self, answer: str) -> bool: ...


def _as_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def reasoning_success(reference: str, answer: str) -> bool:
    """The official open-answer check (5% relative tolerance, else substring)."""
    ref, ans = str(reference).strip().lower(), str(answer).lower().strip()
    r, a = _as_float(ref), _as_float(ans)
    if r is not None and a is not None:
        return abs(r - a) <= 0.05 * abs(r)  # |ref - ans| <= 0.05 |ref|
    return ref in ans


def _check_text(name: str, value: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{name} must be a non-empty str, got {value!r}")
    return value


@dataclass(frozen=True)
class NumericReasoningTask:
    """An open-answer reasoning task with a reference answer (a number or a string)."""

    prompt: str
    reference: str
    kind: str = "numeric"
    task_id: str = ""
    task_type: str = "reasoning"

    def __post_init__(self) -> None:
        _check_text("prompt", self.prompt)
        _check_text("reference", self.reference)

    def in_context_example(self, use_tool: bool, with_feedback: bool) -> str:
        return in_context_example(self.task_type, use_tool, with_feedback)

    def success(self, answer: str) -> bool:
        return reasoning_success(self.reference, answer)

    def exact_match(self, answer: str) -> bool:
        ref, ans = self.reference.strip().lower(), str(answer).strip().lower()
        r, a = _as_float(ref), _as_float(ans)
        return r == a if r is not None and a is not None else ref == ans


@dataclass(frozen=True)
class MultipleChoiceTask:
    """A multiple-choice task: ``options`` maps letters ("a", "b", ...) to option texts; the
    prompt lists them; ``reference`` is the correct letter."""

    prompt: str
    options: Mapping[str, str]
    reference: str
    kind: str = "multiple_choice"
    task_id: str = ""
    task_type: str = "reasoning"

    def __post_init__(self) -> None:
        _check_text("prompt", self.prompt)
        if not isinstance(self.options, Mapping) or len(self.options) < 2:
            raise ValueError("options must map at least two letters to option texts")
        opts = {str(k).strip().lower(): str(v).strip().lower() for k, v in self.options.items()}
        ref = _check_text("reference", self.reference).strip().lower()
        if ref not in opts:
            raise ValueError(f"reference must be one of the option letters {sorted(opts)}, "
                             f"got {self.reference!r}")
        object.__setattr__(self, "options", opts)
        object.__setattr__(self, "reference", ref)

    def in_context_example(self, use_tool: bool, with_feedback: bool) -> str:
        return in_context_example(self.task_type, use_tool, with_feedback)

    @staticmethod
    def _extract(answer: str) -> str:
        text = str(answer).lower().strip()
        # the official loop returns on its first letter: only "a)" is ever extracted
        return "a" if "a)" in text or "a )" in text else text

    @staticmethod
    def _match(reference: str, answer: str) -> bool:
        if reference.isdigit() and answer.isdigit():
            return abs(float(reference) - float(answer)) <= 0.05 * float(reference)
        return reference in answer

    def success(self, answer: str) -> bool:
        ans = self._extract(answer)
        if self._match(self.reference, ans):
            return True
        correct = self.options[self.reference]
        wrong = [o for o in self.options.values() if o not in correct]
        if any(self._match(o, ans) or o in ans for o in wrong):
            return False
        return self._match(correct, ans) or correct in ans

    def exact_match(self, answer: str) -> bool:
        text = str(answer).strip().lower().strip("().")
        return text == self.reference or text == self.options[self.reference]


@dataclass(frozen=True)
class CodeGenerationTask:
    """Write a function; ``tests`` (hidden from the agent) are asserts run after the proposed
    code in the sandbox. ``reference`` is a correct solution (for ground-truth feedback)."""

    prompt: str
    tests: str
    reference: str
    entry_point: str = ""
    kind: str = "code"
    task_id: str = ""
    task_type: str = "code_generation"
    timeout_s: float = 5.0

    def __post_init__(self) -> None:
        _check_text("prompt", self.prompt)
        _check_text("tests", self.tests)
        _check_text("reference", self.reference)
        if not isinstance(self.timeout_s, (int, float)) or not self.timeout_s > 0:
            raise ValueError(f"timeout_s must be a positive number, got {self.timeout_s!r}")

    def in_context_example(self, use_tool: bool, with_feedback: bool) -> str:
        return in_context_example(self.task_type, use_tool, with_feedback)

    def success(self, answer: str) -> bool:
        res = run_python(str(answer) + "\n\n" + self.tests, timeout=self.timeout_s)
        return res.ok

    def exact_match(self, answer: str) -> bool:
        """Code has no exact form: the hidden tests decide (same as :meth:`success`)."""
        return self.success(answer)


# ----------------------------------------------------------------------------- generator

NUMERIC_KINDS = ("product", "sum", "modpow", "average")

# name -> (description, a correct solution, hidden tests)
CODE_FUNCTIONS: dict[str, tuple[str, str, str]] = {
    "second_largest": (
        "returns the second largest distinct element of the list of integers xs",
        "def second_largest(xs):\n    return sorted(set(xs))[-2]",
        ("assert second_largest([3, 1, 4, 1, 5]) == 4\nassert second_largest([2, 2, 7]) == 2\n"
         "assert second_largest([-5, -1, -3]) == -3\n")),
    "count_vowels": (
        "returns the number of vowels (a, e, i, o, u) in the lower-case string s",
        "def count_vowels(s):\n    return sum(c in 'aeiou' for c in s)",
        ("assert count_vowels('banana') == 3\nassert count_vowels('xyz') == 0\n"
         "assert count_vowels('queue') == 4\n")),
    "reverse_words": (
        "returns the string s with the order of its space-separated words reversed",
        "def reverse_words(s):\n    return ' '.join(s.split()[::-1])",
        ("assert reverse_words('a b c') == 'c b a'\nassert reverse_words('hello') == 'hello'\n"
         "assert reverse_words('one two') == 'two one'\n")),
    "is_palindrome": (
        "returns True if the string s reads the same forwards and backwards, else False",
        "def is_palindrome(s):\n    return s == s[::-1]",
        ("assert is_palindrome('level')\nassert not is_palindrome('mint')\n"
         "assert is_palindrome('')\n")),
}


def _numeric(kind: str, rng: np.random.Generator) -> tuple[str, str]:
    """(prompt, exact reference) of one numeric task."""
    if kind == "product":
        a = int(rng.integers(100, 10_000))
        b = int(rng.integers(100, 10_000))
        return f"What is {a} * {b}?", str(a * b)
    if kind == "sum":
        xs = [int(x) for x in rng.integers(10, 100, size=int(rng.integers(10, 16)))]
        return "What is the sum of " + ", ".join(map(str, xs)) + "?", str(sum(xs))
    if kind == "modpow":
        b, e, m = int(rng.integers(2, 100)), int(rng.integers(10, 100)), int(rng.integers(50, 1000))
        return f"What is {b} ** {e} mod {m}?", str(pow(b, e, m))
    if kind == "average":
        xs = [int(x) for x in rng.integers(10, 1000, size=int(rng.integers(4, 8)))]
        value = round(sum(xs) / len(xs), 2)
        return ("What is the average of " + ", ".join(map(str, xs))
                + ", rounded to 2 decimal places?", repr(value))
    raise ValueError(f"unknown numeric task kind {kind!r}; expected one of {NUMERIC_KINDS}")


def make_mint_tasks(n: int, kinds: Sequence[str] = NUMERIC_KINDS, seed: int = 0
                    ) -> list[NumericReasoningTask | CodeGenerationTask]:
    """``n`` tasks cycling through ``kinds`` (any of :data:`NUMERIC_KINDS` and ``"code"``),
    drawn by a seeded generator. Numeric references are exact (averages: Python's
    ``round(mean, 2)``); code tasks carry hidden asserts."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    kinds = list(kinds)
    valid = set(NUMERIC_KINDS) | {"code"}
    if not kinds or any(k not in valid for k in kinds):
        raise ValueError(f"kinds must be a non-empty sequence of {sorted(valid)}, got {kinds!r}")
    rng = np.random.default_rng(seed)
    names = list(CODE_FUNCTIONS)
    out: list[NumericReasoningTask | CodeGenerationTask] = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        if kind == "code":
            name = names[int(rng.integers(len(names)))]
            desc, solution, tests = CODE_FUNCTIONS[name]
            out.append(CodeGenerationTask(
                prompt=f"Write a Python function {name} that {desc}.", tests=tests,
                reference=solution, entry_point=name, task_id=f"code-{i}"))
        else:
            prompt, reference = _numeric(kind, rng)
            out.append(NumericReasoningTask(prompt, reference, kind=kind, task_id=f"{kind}-{i}"))
    return out
