"""Runs claims: seeds every RNG, times each claim, shows progress, isolates failures.

An exception inside one claim becomes an ``error`` record carrying its traceback, and the run
goes on with the next claim. Ctrl-C stops the run after recording everything that finished
(each record is committed as soon as its claim ends). Every record is written to the store
before the next claim starts, so a killed process loses at most the claim it was running.
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

from rich.console import Console
from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from iclr24 import __version__
from iclr24.claims import Claim, Measurement, Scale
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
    """Versions that matter for reproducing a number (read without importing the packages)."""
    env = {"python": platform.python_version(), "platform": platform.platform(),
           "cpus": str(os.cpu_count())}
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


def run_one(paper: Paper, claim: Claim, scale: Scale, seed: int,
            progress: Callable[..., None] | None = None) -> Record:
    """Run a single claim and return its record (never raises for a failing claim)."""
    started = datetime.now(timezone.utc).isoformat(timespec="seconds")
    reference = {"text": claim.paper, "numbers": dict(claim.paper_numbers)}
    base = dict(paper=paper.slug, claim=claim.name, scale=scale.value, seed=seed,
                paper_reference=reference, started_at=started, package_version=__version__,
                git_commit=git_commit(), environment=environment())
    try:
        rule_text = claim.rule_text(scale)
    except Exception as exc:  # a claim without a rule for this scale is the claim's error
        return Record(verdict="error", metrics={}, rule="", duration_s=0.0, error=str(exc), **base)
    seed_everything(seed)
    t0 = time.perf_counter()
    try:
        measurement: Measurement = claim(scale, seed, progress=progress)
        duration = time.perf_counter() - t0
        holds = claim.verdict(measurement.metrics, scale)
        png = figure_to_png(measurement.figure)
    except KeyboardInterrupt:
        raise
    except Exception:
        return Record(verdict="error", metrics={}, rule=rule_text,
                      duration_s=time.perf_counter() - t0, error=traceback.format_exc(), **base)
    finally:
        _close_figures()
    return Record(verdict="holds" if holds else "fails", metrics=dict(measurement.metrics),
                  rule=rule_text, duration_s=duration, tables=_plain_tables(measurement.tables),
                  notes=measurement.notes, figure_png=png, **base)


def _plain_tables(tables: object) -> dict[str, list[dict]]:
    return {str(name): [dict(row) for row in rows] for name, rows in dict(tables).items()}


def _close_figures() -> None:
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


def run_claims(tasks: Sequence[tuple[Paper, Claim]], scale: Scale, seed: int,
               store: ResultStore, console: Console | None = None) -> RunOutcome:
    """Run each (paper, claim) in order, storing each record as soon as it exists."""
    console = console or Console(stderr=True)
    outcome = RunOutcome()
    columns = (SpinnerColumn(), TextColumn("[bold]{task.description}"), BarColumn(),
               TextColumn("{task.fields[note]}"), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as bar:
        overall = bar.add_task(f"{len(tasks)} claims at {scale.value}", total=len(tasks), note="")
        for paper, claim in tasks:
            label = f"{paper.slug}.{claim.name}"
            current = bar.add_task(label, total=1.0, note="")

            def progress(fraction: float, message: str = "", _task: int = current) -> None:
                bar.update(_task, completed=max(0.0, min(1.0, float(fraction))), note=message)

            try:
                record = run_one(paper, claim, scale, seed, progress=progress)
            except KeyboardInterrupt:
                bar.update(current, note="[yellow]interrupted")
                outcome.interrupted = True
                break
            store.add(record)
            outcome.records.append(record)
            colour = {"holds": "green", "fails": "yellow", "error": "red"}[record.verdict]
            bar.update(current, completed=1.0,
                       note=f"[{colour}]{record.verdict}[/] {record.duration_s:.1f}s")
            bar.advance(overall)
    return outcome
