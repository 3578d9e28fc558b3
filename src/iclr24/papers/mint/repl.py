"""MINT's Python tool: a persistent interpreter the agent's code runs in (Wang et al., ICLR
2024, Sec. 2.1; official ``mint/tools/python_tool.py``, an IPython shell with a timeout).

:class:`PythonREPL` runs on the language-model kit's :class:`PythonSession` (a child process
with a wall-clock timeout, a temporary directory and memory/file limits; model code never runs
in the caller's process). As in the official tool:

- the namespace persists across turns, :meth:`PythonREPL.reset` starts a fresh one (between
  tasks), and tool functions are defined in every fresh interpreter by name;
- the observation is what the cell printed, then its traceback if it raised; an empty output
  reads ``[Executed Successfully with No Output]``; output over ``max_output_chars`` (2000
  officially) is cut and marked ``...\\n[Output Truncated]``;
- a final bare expression is echoed like IPython's ``Out[n]:`` (we print its ``repr`` without
  the ``Out[n]:`` prefix); a cell that runs past ``timeout_s`` is killed and the observation
  says so (the next cell gets a fresh interpreter, whose state is lost).

:class:`Tool` is a Python function given as source code (it must run in the child) with the
signature and description shown to the agent (:func:`toolset_description`, the official
``get_toolset_description``).
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Self

from iclr24.kits.language_models import PythonSession

__all__ = ["NO_OUTPUT", "TRUNCATED", "PythonREPL", "Tool", "toolset_description"]

NO_OUTPUT = "[Executed Successfully with No Output]"
TRUNCATED = "...\n[Output Truncated]"


@dataclass(frozen=True)
class Tool:
    """A tool function: ``name``, the ``signature`` and ``description`` shown to the agent, and
    the ``source`` that defines it in the interpreter."""

    name: str
    signature: str
    description: str
    source: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"Tool.name must be a Python identifier, got {self.name!r}")
        for attr in ("signature", "description", "source"):
            if not isinstance(getattr(self, attr), str):
                raise TypeError(f"Tool.{attr} must be a str")


def toolset_description(tools: Sequence[Tool]) -> str:
    """The official tool listing for the first prompt ("" when there are no tools)."""
    if not tools:
        return ""
    out = "Tool function available (already imported in <execute> environment):\n"
    for i, tool in enumerate(tools):
        out += f"[{i + 1}] {tool.signature}\n{tool.description}\n"
    return out


def _echo_last_expression(code: str) -> str:
    """Rewrite a final bare expression ``e`` to print ``repr(e)`` unless it is None (IPython's
    display of the last value). Code that does not parse is returned as is: the interpreter
    reports the SyntaxError."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return code
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        return code
    last = tree.body[-1]
    tail = ast.get_source_segment(code, last.value)
    if tail is None:
        return code
    lines = code.splitlines(keepends=True)
    start_line = lines[last.lineno - 1].encode("utf-8")[:last.col_offset].decode("utf-8")
    head = "".join(lines[:last.lineno - 1]) + start_line  # everything before the expression
    return (f"{head.rstrip().rstrip(';')}\n_mint_out = ({tail})\nif _mint_out is not None:\n"
            f"    print(repr(_mint_out))\n").lstrip("\n")


# deletes every user name of the namespace (the cell runs with the namespace as its globals)
_CLEAR = ("for _mint_name in [n for n in globals() if n not in ('__name__', '__builtins__')]:\n"
          "    del globals()[_mint_name]\n")


class PythonREPL:
    """A persistent Python namespace in a child process: ``run(code) -> observation``.

    timeout_s: wall-clock seconds per cell (the official tool uses 30 s; 10 s here).
    max_output_chars: the observation's length limit (official: 2000).
    tools: :class:`Tool` functions defined in every fresh interpreter.
    """

    def __init__(self, timeout_s: float = 10.0, max_output_chars: int = 2000, *,
                 tools: Sequence[Tool] = (), memory_mb: int = 1024) -> None:
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, (int, float)) \
                or not timeout_s > 0:
            raise ValueError(f"timeout_s must be a positive number of seconds, got {timeout_s!r}")
        if isinstance(max_output_chars, bool) or not isinstance(max_output_chars, int) \
                or max_output_chars < 1:
            raise ValueError(f"max_output_chars must be a positive int, got "
                             f"{max_output_chars!r}")
        tools = tuple(tools)
        if not all(isinstance(t, Tool) for t in tools):
            raise TypeError("tools must be a sequence of Tool")
        self.timeout_s, self.max_output_chars, self.tools = float(timeout_s), max_output_chars, tools
        preamble = "\n\n".join(t.source for t in tools)
        self._preamble, self._dead, self._used = preamble, False, False
        self._session = PythonSession(timeout=self.timeout_s, memory_mb=memory_mb,
                                      max_output=max(4 * max_output_chars, 20_000),
                                      preamble=preamble)

    def run(self, code: str) -> str:
        """Execute ``code`` in the persistent namespace; return the observation text."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        self._used = True
        res = self._session.run(_echo_last_expression(code))
        self._dead = res.timed_out or res.returncode == -1
        out = res.stdout + res.stderr
        if res.timed_out:  # the official shell shows a TimeoutError raised by its alarm
            out = (res.stdout + f"TimeoutError: Timed out after {self.timeout_s:g} seconds "
                   "(the interpreter was restarted; its state is lost).\n")
        if out == "":
            out = NO_OUTPUT
        if len(out) > self.max_output_chars:
            out = out[:self.max_output_chars] + TRUNCATED
        return out

    def reset(self) -> None:
        """A fresh, empty namespace (tools defined again) for the next task. The interpreter
        process is kept (starting one costs ~20 ms of CPU) unless it was stopped or died;
        modules it imported stay cached, as in a restarted IPython kernel's ``%reset``."""
        if not self._used:
            return
        self._used = False
        if self._dead:
            self._session.reset()
            self._dead = False
            return
        res = self._session.run(_CLEAR + self._preamble)
        if not res.ok:
            self._session.reset()

    def close(self) -> None:
        """Stop the child interpreter."""
        self._session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
