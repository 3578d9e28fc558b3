"""Program-aided answers (Llemma Sec. 3.2, "MATH+Python" / "GSM8k+Python"): the model writes a
Python program whose printed result is the answer; the program runs in a separate process with
a timeout (PAL, Gao et al. 2023), and the printed value is compared by the same checker.

:func:`run_python` runs code through the language-model kit's sandbox
(:func:`iclr24.kits.language_models.run_python`: child interpreter, temporary directory,
memory/CPU/file limits, process group killed at the timeout). :func:`extract_program` takes the
program from a completion (a fenced ```python block, else the text up to the stop marker), and
:func:`program_answer` the answer (the last non-empty line printed).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from iclr24.kits.language_models import run_python as _sandbox_run

from .answers import INVALID_ANSWER

__all__ = ["ExecResult", "extract_program", "program_answer", "run_python"]

_FENCE = re.compile(r"```(?:python|py)?[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)


@dataclass(frozen=True)
class ExecResult:
    """What a program printed and, when it failed, why (``None`` on success): the last
    traceback line, ``"timeout"`` or ``"exit code N"``."""

    stdout: str
    error: str | None


def run_python(code: str, timeout: float = 5.0, *, memory_mb: int = 1024) -> ExecResult:
    """Run model-written ``code`` in the kit's sandbox (a child process, killed at ``timeout``)."""
    res = _sandbox_run(code, timeout=timeout, memory_mb=memory_mb)
    if res.timed_out:
        return ExecResult(res.stdout, "timeout")
    if res.returncode != 0:
        lines = [ln for ln in res.stderr.strip().splitlines() if ln.strip()]
        return ExecResult(res.stdout, lines[-1] if lines else f"exit code {res.returncode}")
    return ExecResult(res.stdout, None)


def extract_program(completion: str) -> str:
    """The program in a completion: the first fenced ```python block, else the whole text."""
    if not isinstance(completion, str):
        raise TypeError(f"completion must be a str, got {type(completion).__name__}")
    m = _FENCE.search(completion)
    return m.group(1) if m else completion


def program_answer(result: ExecResult) -> str:
    """The last non-empty printed line, or :data:`~.answers.INVALID_ANSWER` when the program
    failed or printed nothing."""
    if result.error is not None:
        return INVALID_ANSWER
    lines = [ln.strip() for ln in result.stdout.splitlines() if ln.strip()]
    return lines[-1] if lines else INVALID_ANSWER
