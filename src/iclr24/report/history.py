"""A claim's key metric across the runs in the store: rows for the terminal, a plot for the page."""

from __future__ import annotations

import io
from collections.abc import Sequence

from iclr24.claims import Estimate
from iclr24.store import Record

from .views import fmt, key_metric

MAX_RUNS = 30  # the plot shows the most recent runs
VERDICT_COLOURS = {"holds": "#1a7f37", "fails": "#b35900", "inconclusive": "#0b6bcb",
                   "error": "#c62828"}


def history_rows(records: Sequence[Record]) -> list[dict[str, object]]:
    """One row per record (oldest first): when, commit, scale, seed, verdict, key metric."""
    rows = []
    for rec in sorted(records, key=lambda r: r.id or 0):
        name = key_metric(rec)
        value = rec.metrics.get(name) if name else None
        rows.append({"id": rec.id, "paper": rec.paper, "claim": rec.claim,
                     "started_at": rec.started_at, "commit": rec.git_commit[:12],
                     "scale": rec.scale, "seed": rec.seed, "verdict": rec.verdict,
                     "metric": name or "", "value": "" if value is None else fmt(value),
                     "duration_s": round(rec.duration_s, 2)})
    return rows


def history_png(records: Sequence[Record]) -> bytes | None:
    """PNG of the key metric per run (the last ``MAX_RUNS``; error bars for estimates, colour = verdict, one marker
    shape per scale); None when fewer than two runs have a value to plot."""
    points = []
    recent = sorted(records, key=lambda r: r.id or 0)[-MAX_RUNS:]
    for i, rec in enumerate(recent):
        name = key_metric(rec)
        if name is None or name not in rec.metrics:
            continue
        points.append((i, rec, name, rec.metrics[name]))
    if len(points) < 2:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(5.0, 2.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    markers = {"smoke": "o", "small": "s", "full": "D"}
    for i, rec, _name, value in points:
        colour = VERDICT_COLOURS.get(rec.verdict, "grey")
        if isinstance(value, Estimate):
            ax.errorbar([i], [value.value], yerr=[[value.value - value.low],
                                                  [value.high - value.value]],
                        fmt=markers.get(rec.scale, "o"), color=colour, capsize=3, ms=5)
        else:
            ax.plot([i], [value], markers.get(rec.scale, "o"), color=colour, ms=5)
    ax.set_xticks([p[0] for p in points],
                  [f"{p[1].started_at[5:16].replace('T', ' ')}\n{p[1].scale} s{p[1].seed}"
                   for p in points], fontsize=6)
    names = sorted({p[2] for p in points})
    ax.set_ylabel(", ".join(names), fontsize=7)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_title("key metric per run (colour: verdict; o smoke, s small, D full)", fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    return buf.getvalue()
