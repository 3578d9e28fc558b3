"""Where claims run: in this process, in spawned worker processes (``--jobs N``), or on Ray.

All three take the same work items, :class:`ClaimTask` (a paper slug, a claim name, scale,
seed, what the claim asks for, and where the registry finds papers), and hand every finished
:class:`~iclr24.store.Record` back to the caller as soon as it exists, so the parent writes each
record to the store the moment its claim ends.

- :class:`LocalPool` runs claims in ``jobs`` worker processes started with *spawn* (not fork:
  torch and JAX start clean in each). The cores are divided between the workers (torch, BLAS
  and XLA threads are capped in each), and a claim declaring ``resources={"cpus": c}`` takes
  ``c`` of the ``jobs`` slots. A worker that dies (segfault, OOM kill) becomes an ``error``
  record naming the signal, and a fresh worker takes its place. Ctrl-C stops the workers.
- :class:`RayExecutor` submits each claim as a Ray task (Ray's scheduler places it; the claim's
  ``resources`` become ``num_cpus``/``num_gpus``) to an existing cluster, or to a local one when
  no address is given. A task lost with its node becomes an ``error`` record (no retries: a
  claim that ran twice would not be the run that was asked for).

Workers resolve the claim by name through the registry themselves, so the parent never imports
a paper (and its torch/JAX) to schedule it.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from multiprocessing.connection import Connection, wait
from typing import Any

from iclr24.store import Record

THREAD_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
               "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")

OnRecord = Callable[["ClaimTask", Record], None]
OnProgress = Callable[["ClaimTask", float, str], None]
OnStart = Callable[["ClaimTask"], None]


@dataclass(frozen=True)
class RegistryLocation:
    """Where the registry reads papers from (tests point it at fake papers)."""

    papers_dir: str
    catalog_path: str
    package: str

    @classmethod
    def current(cls) -> RegistryLocation:
        from iclr24 import registry

        return cls(str(registry.PAPERS_DIR), str(registry.CATALOG_PATH), registry.PAPERS_PACKAGE)

    def apply(self) -> None:
        """Point this process's registry here (and make the papers package importable)."""
        from pathlib import Path

        from iclr24 import registry

        top = Path(self.papers_dir)
        for _ in self.package.split(".")[1:]:
            top = top.parent
        if str(top.parent) not in sys.path and self.package.split(".")[0] != "iclr24":
            sys.path.insert(0, str(top.parent))
        registry.PAPERS_DIR = Path(self.papers_dir)
        registry.CATALOG_PATH = Path(self.catalog_path)
        registry.PAPERS_PACKAGE = self.package


@dataclass(frozen=True)
class ClaimTask:
    """One claim execution to run somewhere."""

    paper: str
    claim: str
    scale: str
    seed: int
    cpus: int = 1
    gpus: float = 0.0
    location: RegistryLocation | None = None
    index: int = 0  # position in the plan, for stable ordering of results

    @property
    def label(self) -> str:
        return f"{self.paper}.{self.claim}"


def cpu_count() -> int:
    """Cores this process may use (affinity-aware)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def thread_env(threads: int) -> dict[str, str]:
    """Environment that caps torch/OpenMP, BLAS and XLA's CPU threads at ``threads``."""
    env = {var: str(threads) for var in THREAD_VARS}
    if threads == 1:
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_cpu_multi_thread_eigen" not in flags:
            flags = (flags + " --xla_cpu_multi_thread_eigen=false "
                     "intra_op_parallelism_threads=1").strip()
        env["XLA_FLAGS"] = flags
    return env


def _limit_threads(threads: int) -> None:
    """Cap threads for the next claim in this process (libraries not yet loaded read the
    environment; torch, if loaded, is told directly)."""
    os.environ.update({var: str(threads) for var in THREAD_VARS})
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


def error_record(task: ClaimTask, message: str, duration_s: float = 0.0) -> Record:
    """An ``error`` record for a claim that could not produce its own (its process died,
    its node was lost, its paper failed to import)."""
    from iclr24 import __version__
    from iclr24.runner import environment, git_commit

    return Record(paper=task.paper, claim=task.claim, scale=task.scale, seed=task.seed,
                  verdict="error", metrics={}, rule="",
                  paper_reference={"text": "", "numbers": {}}, duration_s=duration_s,
                  started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
                  error=message, package_version=__version__, git_commit=git_commit(),
                  environment=environment())


def execute(task: ClaimTask, progress: Callable[..., None] | None = None) -> Record:
    """Resolve the task's claim through the registry and run it (never raises for a failing
    claim or a paper that fails to import: both become ``error`` records)."""
    from iclr24 import registry
    from iclr24.runner import run_one

    if task.location is not None:
        task.location.apply()
    try:
        paper = registry.get(task.paper)
        (claim,) = registry.select_claims(paper, [task.claim])
    except Exception:
        return error_record(task, "the paper's claims module failed to import:\n"
                            + traceback.format_exc())
    return run_one(paper, claim, task.scale, task.seed, progress=progress)


# --- local worker processes -----------------------------------------------------------------

def _worker_main(conn: Connection, threads: int) -> None:
    """A spawned worker: run tasks sent by the parent until it sends None."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent owns Ctrl-C and stops us
    os.environ.update(thread_env(threads))
    while True:
        try:
            task = conn.recv()
        except EOFError:
            return
        if task is None:
            return
        _limit_threads(task.cpus)

        def progress(fraction: float, message: str = "") -> None:
            conn.send(("progress", float(fraction), str(message)))

        record = execute(task, progress=progress)
        conn.send(("done", record))


@dataclass
class _Worker:
    process: Any
    conn: Connection
    task: ClaimTask | None = None
    started: float = 0.0


def _death_message(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        how = f"was killed by {name}"
        if name == "SIGKILL":
            how += " (often the kernel's out-of-memory killer)"
    else:
        how = f"exited with code {exitcode}"
    return (f"the worker process running this claim {how}; the claim left no record of its "
            "own. Run it alone with `--jobs 1` to see it fail in the foreground.")


@dataclass
class LocalPool:
    """``jobs`` spawned worker processes sharing this machine's cores."""

    jobs: int
    cores: int = field(default_factory=cpu_count)

    def __post_init__(self) -> None:
        if isinstance(self.jobs, bool) or not isinstance(self.jobs, int) or self.jobs < 1:
            raise ValueError(f"jobs must be a positive int, got {self.jobs!r}")

    @property
    def threads_per_worker(self) -> int:
        return max(1, self.cores // self.jobs)

    def _spawn(self) -> _Worker:
        ctx = mp.get_context("spawn")
        parent, child = ctx.Pipe(duplex=True)
        # not a daemon: claims may start processes of their own (gloo ranks, DeepSpeed), which
        # daemonic processes may not; a worker whose parent died exits on its broken pipe
        process = ctx.Process(target=_worker_main, args=(child, self.threads_per_worker),
                              daemon=False, name="iclr24-worker")
        process.start()
        child.close()
        return _Worker(process, parent)

    def run(self, tasks: Sequence[ClaimTask], on_record: OnRecord, on_progress: OnProgress,
            on_start: OnStart) -> None:
        pending = list(tasks)
        idle: list[_Worker] = []
        busy: list[_Worker] = []
        free = self.jobs
        gpu_busy = False
        try:
            while pending or busy:
                # start every pending task that fits the free CPU slots (first fit, in order)
                for task in list(pending):
                    need = min(task.cpus, self.jobs)
                    if need > free or (task.gpus > 0 and gpu_busy):
                        continue
                    worker = idle.pop() if idle else self._spawn()
                    worker.task, worker.started = task, time.perf_counter()
                    worker.conn.send(task)
                    busy.append(worker)
                    pending.remove(task)
                    free -= need
                    gpu_busy = gpu_busy or task.gpus > 0
                    on_start(task)
                ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
                for worker in list(busy):
                    record = self._collect(worker, ready, on_progress)
                    if record is None:
                        continue
                    busy.remove(worker)
                    free += min(worker.task.cpus, self.jobs)
                    gpu_busy = gpu_busy and not worker.task.gpus > 0
                    task, worker.task = worker.task, None
                    if worker.process.is_alive():
                        idle.append(worker)
                    on_record(task, record)
        finally:
            self._stop(idle, busy)

    def _collect(self, worker: _Worker, ready: list, on_progress: OnProgress) -> Record | None:
        """Read what the worker sent; its record when it finished (or died), else None."""
        task = worker.task
        try:
            while worker.conn.poll():
                kind, *payload = worker.conn.recv()
                if kind == "progress":
                    on_progress(task, *payload)
                else:
                    return payload[0]
        except (EOFError, OSError):
            pass  # the pipe broke: the process is gone; its exit code tells why
        if worker.process.sentinel in ready or not worker.process.is_alive():
            worker.process.join(timeout=5)
            return error_record(task, _death_message(worker.process.exitcode),
                                time.perf_counter() - worker.started)
        return None

    @staticmethod
    def _stop(idle: list[_Worker], busy: list[_Worker]) -> None:
        for worker in idle:
            try:
                worker.conn.send(None)
            except OSError:
                pass
        for worker in busy:  # interrupted mid-claim: nothing to keep from them
            worker.process.kill()
        for worker in idle + busy:
            worker.process.join(timeout=10)
            if worker.process.is_alive():
                worker.process.kill()
                worker.process.join()
            worker.conn.close()


# --- Ray ------------------------------------------------------------------------------------

def _ray_execute(task: ClaimTask) -> Record:
    """The body of one Ray task: cap threads at what the task was given, run the claim."""
    os.environ.update(thread_env(task.cpus))
    _limit_threads(task.cpus)
    return execute(task)


@dataclass
class RayExecutor:
    """Runs each claim as a Ray task on the cluster at ``address`` (a local instance when
    None). Needs the ``ray`` extra: ``pip install 'iclr24[ray]'``."""

    address: str | None = None
    init_kwargs: dict[str, Any] = field(default_factory=dict)

    def run(self, tasks: Sequence[ClaimTask], on_record: OnRecord, on_progress: OnProgress,
            on_start: OnStart) -> None:
        try:
            import ray
        except ImportError:
            raise RuntimeError("--executor ray needs Ray: pip install 'iclr24[ray]' "
                               "(make installs it)") from None
        started_here = not ray.is_initialized()
        if started_here:
            ray.init(address=self.address, include_dashboard=False, log_to_driver=False,
                     **self.init_kwargs)
        remote = ray.remote(max_retries=0)(_ray_execute)
        refs: dict[Any, tuple[ClaimTask, float]] = {}
        try:
            for task in tasks:
                ref = remote.options(num_cpus=task.cpus, num_gpus=task.gpus).remote(task)
                refs[ref] = (task, time.perf_counter())
                on_start(task)
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                task, t0 = refs.pop(done[0])
                try:
                    record = ray.get(done[0])
                except ray.exceptions.RayError as exc:  # worker or node lost, task cancelled
                    record = error_record(task, f"the Ray task running this claim was lost: "
                                          f"{type(exc).__name__}: {exc}",
                                          time.perf_counter() - t0)
                on_record(task, record)
        except KeyboardInterrupt:
            for ref in refs:
                ray.cancel(ref, force=True)
            raise
        finally:
            if started_here:
                ray.shutdown()
