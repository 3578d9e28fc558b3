"""Runs claims: seeds every RNG, times each claim, shows progress, isolates failures.

An exception inside one claim becomes an ``error`` record carrying its traceback, and the run
goes on with the next claim. Ctrl-C stops the run after recording everything that finished
(each record is committed as soon as its claim ends), so a killed process loses at most the
claims it was running. Claims run in this process (``jobs=1``), in spawned worker processes
(``jobs>1``) or on Ray (see :mod:`iclr24.executors`); the records are written here either way.
"""

from __future__ import annotations

import io
import os
import platform
import random
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import cache
from importlib import metadata
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from iclr24 import __version__
from iclr24.claims import Claim, Measurement, Scale
from iclr24.executors import ClaimTask, LocalPool, RayExecutor, RegistryLocation, execute
from iclr24.provenance import code_hash, machine
from iclr24.registry import Paper
from iclr24.store import Record, ResultStore


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and (if loaded) PyTorch's global RNGs.

    Claims should still draw randomness from explicit generators built from ``seed``; this
    catches library code that reaches for the global state. JAX has no global RNG: papers build
    ``jax.random.PRNGKey(seed)`` themselves.
    """
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    import numpy as np

    np.random.seed(seed % 2**32)
    if "torch" in sys.modules:
        import torch

        torch.manual_seed(seed)


@cache
def environment() -> dict[str, str]:
    """Versions that matter for reproducing a number (read without importing the packages),
    and the machine (CPU model, cores, memory, GPU)."""
    env = {"python": platform.python_version(), "platform": platform.platform(),
           "cpus": str(os.cpu_count()), **machine()}
    for dist in ("numpy", "torch", "jax", "scipy", "scikit-learn", "pot", "torch-geometric"):
        try:
            env[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    return env


@cache
def git_commit() -> str:
    """The commit of the source tree when it is a git checkout with a clean HEAD, else ''."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=here, capture_output=True,
                             text=True, timeout=5)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    if out.returncode != 0:
        return ""
    return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")


def figure_to_png(figure: object) -> bytes | None:
    """Render a matplotlib Figure to PNG bytes (None passes through)."""
    if figure is None:
        return None
    if not hasattr(figure, "savefig"):
        raise TypeError(f"Measurement.figure must be a matplotlib Figure, got {type(figure)}")
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    if figure.canvas is None or not hasattr(figure.canvas, "print_png"):
        FigureCanvasAgg(figure)
    buf = io.BytesIO()
    figure.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return buf.getvalue()


@dataclass
class RunOutcome:
    """What a run did: its records, and whether Ctrl-C cut it short."""

    records: list[Record] = field(default_factory=list)
    interrupted: bool = False

    @property
    def errored(self) -> bool:
        return any(r.verdict == "error" for r in self.records)

    def slowest(self, k: int = 5) -> list[Record]:
        """The ``k`` records that took the longest wall time, slowest first."""
        return sorted(self.records, key=lambda r: r.duration_s, reverse=True)[:k]


def run_one(paper: Paper, claim: Claim, scale: Scale | str, seed: int,
            progress: Callable[..., None] | None = None) -> Record:
    """Run a single claim and return its record (never raises for a failing claim)."""
    scale = Scale.parse(scale)
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    reference = {"text": claim.paper, "numbers": dict(claim.paper_numbers)}
    base = dict(paper=paper.slug, claim=claim.name, scale=scale.value, seed=seed,
                paper_reference=reference, started_at=started, package_version=__version__,
                git_commit=git_commit(), environment=environment(),
                code_hash=_code_hash_of(claim))  # before the run: the code that ran
    try:
        rule_text = claim.rule_text(scale)
        base["control"] = claim.control_text(scale)
    except Exception as exc:  # a claim without a rule for this scale is the claim's error
        return Record(verdict="error", metrics={}, rule="", duration_s=0.0, error=str(exc), **base)
    seed_everything(seed)
    t0, c0 = time.perf_counter(), cpu_seconds()
    try:
        measurement: Measurement = claim(scale, seed, progress=progress)
        _reap_worker_pools()
        duration, cpu = time.perf_counter() - t0, cpu_seconds() - c0
        judgement = claim.judge(measurement.metrics, scale)
        png = figure_to_png(measurement.figure)
    except KeyboardInterrupt:
        raise
    except Exception:
        _reap_worker_pools()
        return Record(verdict="error", metrics={}, rule=rule_text,
                      duration_s=time.perf_counter() - t0, cpu_s=cpu_seconds() - c0,
                      error=traceback.format_exc(), **base)
    finally:
        _close_figures()
    return Record(verdict=judgement.verdict, reason=judgement.reason,
                  metrics=dict(measurement.metrics), rule=rule_text,
                  duration_s=duration, cpu_s=cpu, tables=_plain_tables(measurement.tables),
                  notes=measurement.notes, figure_png=png, **base)


def _code_hash_of(claim: Claim) -> str:
    """The content hash of the package the claim's module lives in (and what it imports)."""
    module = sys.modules.get(claim.module)
    path = getattr(module, "__file__", None)
    return code_hash(Path(path).parent) if path else ""


def cpu_seconds() -> float:
    """CPU seconds (user + system) of this process and of every child it has waited for.

    A claim that starts processes of its own (DeepSpeed's gloo ranks, a sandbox) spends its CPU
    there; ``time.process_time`` alone would report the parent's few seconds. Children still
    running are not counted until they are reaped: :func:`run_one` shuts down joblib's
    reusable pool after each claim for that reason.
    """
    try:
        import resource
    except ImportError:  # not POSIX: this process only
        return time.process_time()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _reap_worker_pools() -> None:
    """Shut down joblib's reusable process pool if a claim started one: its workers outlive
    the claim otherwise, and their CPU would never reach the claim's ``cpu_s``."""
    loky = sys.modules.get("joblib.externals.loky.reusable_executor")
    executor = getattr(loky, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True)


def _plain_tables(tables: object) -> dict[str, list[dict]]:
    return {str(name): [dict(row) for row in rows] for name, rows in dict(tables).items()}


def _close_figures() -> None:
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


VERDICT_COLOURS = {"holds": "green", "fails": "yellow", "inconclusive": "cyan", "error": "red"}


def plan_tasks(claims: Sequence[tuple[Paper, str]], scale: Scale | str, seed: int
               ) -> list[ClaimTask]:
    """(paper, claim name) pairs -> tasks carrying what each claim asks for at ``scale``."""
    scale = Scale.parse(scale)
    location = RegistryLocation.current()
    tasks = []
    for index, (paper, name) in enumerate(claims):
        wants = paper.resources_for(name, scale.value)
        tasks.append(ClaimTask(paper=paper.slug, claim=name, scale=scale.value, seed=seed,
                               cpus=int(wants["cpus"]), gpus=float(wants["gpus"]),
                               location=location, index=index))
    return tasks


class _InProcess:
    """The sequential executor: each claim in this process, one after another."""

    def run(self, tasks, on_record, on_progress, on_start) -> None:
        for task in tasks:
            on_start(task)
            record = execute(task, progress=lambda f, m="", _t=task: on_progress(_t, f, m))
            on_record(task, record)


def run_claims(claims: Sequence[tuple[Paper, str]], scale: Scale | str, seed: int,
               store: ResultStore, console: Console | None = None, *, jobs: int = 1,
               executor: str = "local", address: str | None = None) -> RunOutcome:
    """Run each (paper, claim name) and store each record as soon as it exists.

    ``jobs=1`` runs in this process, in order; ``jobs>1`` in that many spawned workers;
    ``executor="ray"`` as Ray tasks on the cluster at ``address`` (local when None).
    """
    scale = Scale.parse(scale)
    if executor not in ("local", "ray"):
        raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")
    tasks = plan_tasks(claims, scale, seed)
    if executor == "ray":
        engine = RayExecutor(address=address)
    elif jobs == 1:
        engine = _InProcess()
    else:
        engine = LocalPool(jobs=jobs)
    console = console or Console(stderr=True)
    outcome = RunOutcome()
    columns = (SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
               TextColumn("{task.fields[note]}"), TimeElapsedColumn())
    where = {"ray": f"on Ray ({address or 'local'})", "local": f"in {jobs} workers"}[executor]
    title = f"{len(tasks)} claims at {scale.value}" + ("" if engine.__class__ is _InProcess
                                                       else f" {where}")
    with Progress(*columns, console=console, transient=False) as bar:
        overall = bar.add_task(title, total=len(tasks), note="")
        rows: dict[int, int] = {}

        def on_start(task: ClaimTask) -> None:
            rows[task.index] = bar.add_task(task.label, total=1.0, note="")

        def on_progress(task: ClaimTask, fraction: float, message: str = "") -> None:
            bar.update(rows[task.index], completed=max(0.0, min(1.0, float(fraction))),
                       note=message)

        def on_record(task: ClaimTask, record: Record) -> None:
            store.add(record)
            outcome.records.append(record)
            # at smoke a claim ran or raised: its rule's verdict there is not evidence
            word = ("ran" if scale is Scale.SMOKE and record.verdict != "error"
                    else record.verdict)
            colour = VERDICT_COLOURS.get(word, "default")
            bar.update(rows[task.index], completed=1.0,
                       note=f"[{colour}]{word}[/] {record.duration_s:.1f}s")
            bar.advance(overall)

        try:
            engine.run(tasks, on_record, on_progress, on_start)
        except KeyboardInterrupt:
            for row in rows.values():
                if not bar.tasks[row].finished:
                    bar.update(row, note="[yellow]interrupted")
            outcome.interrupted = True
    order = {(t.paper, t.claim): t.index for t in tasks}  # report in plan order, not finish order
    outcome.records.sort(key=lambda r: order.get((r.paper, r.claim), len(order)))
    return outcome
