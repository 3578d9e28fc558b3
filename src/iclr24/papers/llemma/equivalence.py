"""Answer equivalence as Llemma's MATH evaluation decides it (Minerva's procedure, as in the
Llemma fork of the evaluation harness, ``SymbolicMathMixin.is_tex_equiv``), with SymPy out of
process.

``is_equiv(pred, gold)`` on two *normalised* answers (:func:`~.answers.normalize_tex`):

1. equal strings -> equivalent (no SymPy);
2. else parse ``gold`` with ``sympy.parsing.latex.parse_latex`` (``timeout`` s): if it fails,
   or gives a falsy object (zero, as the official ``if not parsed_x2`` test does), not
   equivalent; parse ``pred`` (a failure -> not equivalent);
3. ``sympy.simplify(pred - gold) == 0`` (``timeout`` s) decides.

SymPy runs in a child process (:mod:`.sympy_worker`), kept alive between calls: ``simplify``
can hang in C-level code that no signal inside a thread interrupts, so the parent waits at most
``3 * timeout`` plus a start-up allowance and then kills and restarts the child (the pair counts
as not equivalent, status ``"killed"``). :class:`SympyEquivalence` owns one such child; the
function :func:`is_equiv` uses a process-wide default one, started on first use.

``math_verify_equiv`` asks the same child to run Hugging Face's ``math-verify`` on the *raw*
answers (its own normalisation), the independent reference of the ``minerva_checker`` claim.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Self

__all__ = ["EquivalenceResult", "SympyEquivalence", "is_equiv", "math_verify_equiv"]

_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]*)")  # canonical only: parse_latex rejects "007"
_WORKER = Path(__file__).with_name("sympy_worker.py")
_START_TIMEOUT = 120.0  # importing SymPy + ANTLR on a loaded 2-core machine


@dataclass(frozen=True)
class EquivalenceResult:
    """``equivalent`` and why: ``string_match``, ``sympy_equal``, ``sympy_different``,
    ``gold_unparsable``, ``gold_zero``, ``gold_timeout``, ``pred_unparsable``, ``pred_timeout``,
    ``simplify_timeout``, ``simplify_error``, ``killed`` (math-verify: ``verified``,
    ``not_verified``, ``error``)."""

    equivalent: bool
    status: str


def _check_pair(pred: str, gold: str) -> None:
    for name, v in (("pred", pred), ("gold", gold)):
        if not isinstance(v, str):
            raise TypeError(f"{name} must be a str (a normalised TeX answer), got "
                            f"{type(v).__name__}")


def _check_timeout(timeout: float) -> float:
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    return float(timeout)


class SympyEquivalence:
    """A SymPy child process that judges answer pairs (see the module docstring).

    Use as a context manager or call :meth:`close`; a killed child is restarted on the next
    call. Thread-safe (one request at a time).
    """

    def __init__(self, timeout: float = 5.0) -> None:
        self.timeout = _check_timeout(timeout)
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self.restarts = 0

    def _start(self) -> subprocess.Popen:
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONIOENCODING="utf-8")
        proc = subprocess.Popen([sys.executable, str(_WORKER)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env, bufsize=1)
        line = self._read(proc, _START_TIMEOUT)
        if line is None or not json.loads(line).get("ready"):
            err = ""
            if proc.poll() is not None:
                err = proc.stderr.read()[-2000:]
            proc.kill()
            raise RuntimeError("the SymPy worker did not start (is antlr4-python3-runtime 4.11 "
                               f"installed? sympy.parsing.latex needs it): {err.strip()}")
        return proc

    @staticmethod
    def _read(proc: subprocess.Popen, timeout: float) -> str | None:
        box: list[str] = []
        reader = threading.Thread(target=lambda: box.append(proc.stdout.readline()), daemon=True)
        reader.start()
        reader.join(timeout)
        return box[0] if box and box[0] else None

    def _ask(self, op: str, pred: str, gold: str) -> EquivalenceResult:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._proc = self._start()
            self._proc.stdin.write(json.dumps({"op": op, "pred": pred, "gold": gold,
                                               "timeout": self.timeout}) + "\n")
            self._proc.stdin.flush()
            line = self._read(self._proc, 3 * self.timeout + 5.0)
            if line is None:  # hung past every in-child alarm: kill, restart on the next call
                self._proc.kill()
                self._proc.wait()
                self._proc = None
                self.restarts += 1
                return EquivalenceResult(False, "killed")
            reply = json.loads(line)
            return EquivalenceResult(bool(reply["equivalent"]), str(reply["status"]))

    def check(self, pred: str, gold: str) -> EquivalenceResult:
        """Minerva's decision on normalised ``pred`` vs ``gold``, with the reason."""
        _check_pair(pred, gold)
        if pred == gold:
            return EquivalenceResult(True, "string_match")
        if _INTEGER.fullmatch(pred) and _INTEGER.fullmatch(gold):
            # parse_latex gives Integers here and Integer arithmetic is exact, so SymPy's answer
            # is known without asking it (a zero gold is falsy: not equivalent, as there)
            g = int(gold)
            if g == 0:
                return EquivalenceResult(False, "gold_zero")
            same = int(pred) == g
            return EquivalenceResult(same, "sympy_equal" if same else "sympy_different")
        return self._ask("minerva", pred, gold)

    def __call__(self, pred: str, gold: str) -> bool:
        return self.check(pred, gold).equivalent

    def math_verify(self, pred: str, gold: str) -> EquivalenceResult:
        """``math_verify.verify(parse(gold), parse(pred))`` on raw answers, in the child."""
        _check_pair(pred, gold)
        return self._ask("math_verify", pred, gold)

    def close(self) -> None:
        with self._lock:
            if self._proc is not None:
                if self._proc.poll() is None:
                    self._proc.stdin.close()
                    try:
                        self._proc.wait(timeout=5)
                    except subprocess.TimeoutExpired:
                        self._proc.kill()
                        self._proc.wait()
                self._proc = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_default: dict[float, SympyEquivalence] = {}
_default_lock = threading.Lock()


def _checker(timeout: float) -> SympyEquivalence:
    timeout = _check_timeout(timeout)
    with _default_lock:
        if timeout not in _default:
            _default[timeout] = SympyEquivalence(timeout)
        return _default[timeout]


@atexit.register
def _close_defaults() -> None:
    for checker in _default.values():
        checker.close()


def is_equiv(pred: str, gold: str, timeout: float = 5.0) -> bool:
    """Minerva / Llemma equivalence of two normalised answers (module docstring), SymPy in a
    shared child process with ``timeout`` seconds per parse and per simplification (two integer
    literals are compared without it: SymPy's answer there is exact integer equality)."""
    return _checker(timeout).check(pred, gold).equivalent


def math_verify_equiv(pred: str, gold: str, timeout: float = 5.0) -> bool:
    """Hugging Face ``math-verify`` on raw answers (an independent checker, not the paper's)."""
    return _checker(timeout).math_verify(pred, gold).equivalent
