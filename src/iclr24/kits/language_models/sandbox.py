"""Run model-written Python in a child process with a timeout, a temporary working directory
and resource limits (the tool of MINT's agents, Llemma's program-aided answers).

:func:`run_python` writes the code to ``main.py`` in a fresh temporary directory (removed
afterwards) and starts ``python -I`` there (isolated: no user site, no ``PYTHON*`` variables),
in its own process group; the child first sets POSIX limits on address space, CPU seconds, file
size and open files, then runs ``main.py``. When the wall-clock timeout passes the whole group
is killed and the result says ``timed_out``; nothing the code does can block the caller longer
than the timeout plus a grace second.

This is containment against accidents (infinite loops, runaway memory, stray files), not a
security boundary: the child runs as the same user, can read files and, where the machine has
one, use the network. Use an OS sandbox (containers, seccomp) for untrusted code.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

__all__ = ["SandboxResult", "run_python"]


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


def run_python(code: str, *, timeout: float = 5.0, memory_mb: int = 1024, file_mb: int = 16,
               stdin: str = "", max_output: int = 20_000) -> SandboxResult:
    """Run ``code`` as a script in a child interpreter and return its :class:`SandboxResult`.

    timeout:   wall-clock seconds before the process group is killed.
    memory_mb: address-space limit (RLIMIT_AS); a larger allocation raises MemoryError there.
    file_mb:   the largest file the code may write (in its temporary directory or elsewhere).
    """
    if not isinstance(code, str):
        raise TypeError(f"code must be a str, got {type(code).__name__}")
    if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or not timeout > 0:
        raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
    for name, v in (("memory_mb", memory_mb), ("file_mb", file_mb), ("max_output", max_output)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    cpu_s = max(1, int(timeout) + 1)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "PYTHONIOENCODING": "utf-8",
           "OMP_NUM_THREADS": "1", "HOME": ""}
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="iclr24-sandbox-") as tmp:
        env["HOME"] = tmp
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
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            out, err = proc.communicate(timeout=1.0)
            timed_out = True
    seconds = time.perf_counter() - t0

    def text(b: bytes) -> str:
        return b.decode("utf-8", errors="replace")[:max_output]

    return SandboxResult(stdout=text(out), stderr=text(err),
                         returncode=None if timed_out else proc.returncode,
                         timed_out=timed_out, seconds=seconds)
