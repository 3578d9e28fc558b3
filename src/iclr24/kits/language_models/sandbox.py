"""Run model-written Python in a child process with a timeout, a temporary working directory
and resource limits (the tool of MINT's agents, Llemma's program-aided answers).

:func:`run_python` writes the code to ``main.py`` in a fresh temporary directory (removed
afterwards) and starts ``python -I`` there (isolated: no user site, no ``PYTHON*`` variables),
in its own process group; the child first sets POSIX limits on address space, CPU seconds, file
size and open files, then runs ``main.py``. When the wall-clock timeout passes the whole group
is killed and the result says ``timed_out``; nothing the code does can block the caller longer
than the timeout plus a grace second.

:class:`PythonSession` is the persistent variant (a REPL): one child interpreter, started the
same way, runs cell after cell in one namespace, so a variable defined in one turn is there in
the next (MINT's tool-using agents). Each cell has its own wall-clock timeout; a cell that
passes it kills the child, and the next cell starts a fresh interpreter (the result says so).

This is containment against accidents (infinite loops, runaway memory, stray files), not a
security boundary: the child runs as the same user, can read files and, where the machine has
one, use the network. Use an OS sandbox (containers, seccomp) for untrusted code.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Self

__all__ = ["PythonSession", "SandboxResult", "run_python"]


@dataclass(frozen=True)
class SandboxResult:
    """What a :func:`run_python` call gave: output streams (decoded, truncated to
    ``max_output`` characters), exit code (negative: killed by that signal; None: timed out),
    whether the timeout fired, and the wall time."""

    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool
    seconds: float

    @property
    def ok(self) -> bool:
        """True when the code ran to the end without an error."""
        return self.returncode == 0 and not self.timed_out


# The child sets its own limits, then runs main.py (so tracebacks name main.py and its lines);
# no preexec_fn, which is unsafe in a threaded parent.
_PRELUDE = """\
import resource as _r
for _k, _v in ((_r.RLIMIT_AS, {mem}), (_r.RLIMIT_CPU, {cpu}), (_r.RLIMIT_FSIZE, {fsize}),
               (_r.RLIMIT_NOFILE, 64)):
    _r.setrlimit(_k, (_v, _v))
del _r, _k, _v
with open("main.py", encoding="utf-8") as _f:
    _code = compile(_f.read(), "main.py", "exec")
del _f
exec(_code, {{"__name__": "__main__", "__builtins__": __builtins__}})
"""


def _check_limits(timeout: float, memory_mb: int, file_mb: int, max_output: int) -> None:
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    for name, v in (("memory_mb", memory_mb), ("file_mb", file_mb), ("max_output", max_output)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def _child_env(home: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONIOENCODING": "utf-8",
            "OMP_NUM_THREADS": "1", "HOME": home}


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def run_python(code: str, *, timeout: float = 5.0, memory_mb: int = 1024, file_mb: int = 16,
               stdin: str = "", max_output: int = 20_000) -> SandboxResult:
    """Run ``code`` as a script in a child interpreter and return its :class:`SandboxResult`.

    timeout:   wall-clock seconds before the process group is killed.
    memory_mb: address-space limit (RLIMIT_AS); a larger allocation raises MemoryError there.
    file_mb:   the largest file the code may write (in its temporary directory or elsewhere).
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be a str, got {type(code).__name__}")
    _check_limits(timeout, memory_mb, file_mb, max_output)
    cpu_s = max(1, int(timeout) + 1)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="iclr24-sandbox-") as tmp:
        env = _child_env(tmp)
        with open(os.path.join(tmp, "main.py"), "w", encoding="utf-8") as fh:
            fh.write(code)
        prelude = _PRELUDE.format(mem=memory_mb << 20, cpu=cpu_s, fsize=file_mb << 20)
        proc = subprocess.Popen(
            [sys.executable, "-I", "-c", prelude], cwd=tmp, env=env, stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        try:
            out, err = proc.communicate(stdin.encode(), timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            out, err = proc.communicate(timeout=1.0)
            timed_out = True
    seconds = time.perf_counter() - t0

    def text(b: bytes) -> str:
        return b.decode("utf-8", errors="replace")[:max_output]

    return SandboxResult(stdout=text(out), stderr=text(err),
                         returncode=None if timed_out else proc.returncode,
                         timed_out=timed_out, seconds=seconds)


# The REPL child: limits, then a loop reading length-prefixed cells on stdin and writing one
# length-prefixed JSON result per cell on the protocol pipe (fd given as argv[1]); a cell's own
# prints go to a buffer, so nothing it writes can break the protocol.
_REPL = """\
import contextlib as _c, io as _io, json as _j, os as _o, resource as _r, sys as _s, traceback as _t
for _k, _v in ((_r.RLIMIT_AS, {mem}), (_r.RLIMIT_FSIZE, {fsize}), (_r.RLIMIT_NOFILE, 64)):
    _r.setrlimit(_k, (_v, _v))
_out = _o.fdopen(int(_s.argv[1]), "wb")
_inp = _s.stdin.buffer
_ns = {{"__name__": "__main__", "__builtins__": __builtins__}}
while True:
    _h = _inp.read(8)
    if len(_h) < 8:
        break
    _src = _inp.read(int(_h)).decode("utf-8")
    _so, _se, _rc = _io.StringIO(), _io.StringIO(), 0
    with _c.redirect_stdout(_so), _c.redirect_stderr(_se):
        try:
            exec(compile(_src, "<cell>", "exec"), _ns)
        except BaseException as _e:
            _rc = 1
            _tb = _e.__traceback__.tb_next  # drop this loop's frame: the trace starts in the cell
            _se.write("".join(_t.format_exception(type(_e), _e, _tb)))
    _msg = _j.dumps({{"stdout": _so.getvalue(), "stderr": _se.getvalue(), "rc": _rc}}).encode()
    _out.write(b"%08d" % len(_msg) + _msg)
    _out.flush()
"""


class PythonSession:
    """A persistent Python interpreter in a child process: :meth:`run` executes one cell in a
    namespace kept across cells, like a notebook kernel.

    The child runs ``python -I`` in a temporary directory (removed by :meth:`close`) with the
    address-space, file-size and open-file limits of :func:`run_python`; ``preamble`` (e.g. the
    definitions of an agent's tool functions) runs first in every fresh interpreter. A cell that
    runs past ``timeout`` seconds has the child's process group killed; the next cell starts a
    fresh interpreter, and its result's ``stderr`` begins with a note that the state was lost.
    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, *, timeout: float = 5.0, memory_mb: int = 1024, file_mb: int = 16,
                 max_output: int = 20_000, preamble: str = "") -> None:
        _check_limits(timeout, memory_mb, file_mb, max_output)
        if not isinstance(preamble, str):
            raise TypeError(f"preamble must be a str, got {type(preamble).__name__}")
        self.timeout, self.max_output, self.preamble = float(timeout), max_output, preamble
        self._script = _REPL.format(mem=memory_mb << 20, fsize=file_mb << 20)
        self._tmp: tempfile.TemporaryDirectory | None = None
        self._proc: subprocess.Popen | None = None
        self._pipe: int | None = None
        self._lost = False  # the previous interpreter was killed mid-session

    def _start(self) -> None:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="iclr24-repl-")
        read_fd, write_fd = os.pipe()
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-c", self._script, str(write_fd)], cwd=self._tmp.name,
                env=_child_env(self._tmp.name), stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(write_fd,),
                start_new_session=True)
        finally:
            os.close(write_fd)
        self._pipe = read_fd
        if self.preamble:
            pre = self._cell(self.preamble)
            if not pre.ok:
                self.close()
                raise ValueError(f"preamble failed in the fresh interpreter:\n{pre.stderr}")

    def _read(self, n: int, deadline: float) -> bytes | None:
        buf = b""
        while len(buf) < n:
            left = deadline - time.perf_counter()
            if left <= 0 or not select.select([self._pipe], [], [], left)[0]:
                return None
            chunk = os.read(self._pipe, n - len(buf))
            if not chunk:  # the child died (a crash, or a limit it hit)
                return b""
            buf += chunk
        return buf

    def _cell(self, code: str) -> SandboxResult:
        assert self._proc is not None and self._proc.stdin is not None
        t0 = time.perf_counter()
        deadline = t0 + self.timeout
        data = code.encode("utf-8")
        try:
            self._proc.stdin.write(b"%08d" % len(data) + data)
            self._proc.stdin.flush()
            head = self._read(8, deadline)
            body = self._read(int(head), deadline) if head else head
        except (BrokenPipeError, ValueError):
            body = b""
        seconds = time.perf_counter() - t0
        if body:
            msg = json.loads(body)
            return SandboxResult(stdout=msg["stdout"][:self.max_output],
                                 stderr=msg["stderr"][:self.max_output],
                                 returncode=msg["rc"], timed_out=False, seconds=seconds)
        timed_out = body is None
        self._stop()
        self._lost = True
        why = (f"timed out after {self.timeout:g} s" if timed_out else
               "the interpreter died (a crash, or a memory/file limit)")
        return SandboxResult(stdout="", stderr=f"{why}; its state is lost",
                             returncode=None if timed_out else -1, timed_out=timed_out,
                             seconds=seconds)

    def run(self, code: str) -> SandboxResult:
        """Execute one cell; ``stdout`` is what it printed, ``stderr`` its traceback (starting
        at the cell) if it raised, ``returncode`` 0 or 1 (None on timeout, -1 if the child
        died)."""
        if not isinstance(code, str):
            raise TypeError(f"code must be a str, got {type(code).__name__}")
        note = ""
        if self._proc is None:
            if self._lost:
                note = "(a fresh interpreter: the previous one was stopped, its state is lost)\n"
                self._lost = False
            self._start()
        res = self._cell(code)
        if note:
            res = SandboxResult(res.stdout, (note + res.stderr)[:self.max_output],
                                res.returncode, res.timed_out, res.seconds)
        return res

    def reset(self) -> None:
        """A fresh, empty namespace (the preamble runs again on the next cell)."""
        self._stop()
        self._lost = False

    def _stop(self) -> None:
        if self._proc is not None:
            _kill_group(self._proc)
            self._proc.wait()
            if self._proc.stdin is not None:
                self._proc.stdin.close()
            self._proc = None
        if self._pipe is not None:
            os.close(self._pipe)
            self._pipe = None

    def close(self) -> None:
        """Stop the interpreter and remove its working directory."""
        self._stop()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        # at interpreter shutdown, modules the cleanup uses may already be gone
        with contextlib.suppress(OSError, AttributeError, TypeError, ImportError):
            self.close()
