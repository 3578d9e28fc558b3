"""Writes the report folder: ``index.html``, ``papers/<slug>.html``, ``figures/``, ``report.md``.

Static files only, no JavaScript framework and nothing fetched from a network: the folder works
from ``file://``, can be zipped, mailed or served by any static server. The index's filters are
a few lines of plain JavaScript; with JavaScript off the page shows every paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from iclr24.store import VERDICTS, Record

from .history import history_png
from .markdown import markdown_report
from .views import PaperView, build_views, counts, fmt, table_columns

TEMPLATES = Path(__file__).resolve().parent / "templates"


def _environment():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(TEMPLATES)),
                             autoescape=jinja2.select_autoescape(["html", "j2"]),
                             undefined=jinja2.StrictUndefined, trim_blocks=True,
                             lstrip_blocks=True)
    env.globals.update(fmt=fmt, table_columns=table_columns)
    return env


def _write_figures(views: Sequence[PaperView], figures_dir: Path
                   ) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    """Each claim's figure and history plot as PNG files; (slug, anchor) -> file name."""
    figures, histories = {}, {}
    for v in views:
        for c in v.claims:
            if c.latest is None:
                continue
            if c.latest.figure_png:
                name = f"{v.slug}__{c.name}__{c.latest.scale}.png"
                (figures_dir / name).write_bytes(c.latest.figure_png)
                figures[(v.slug, c.anchor)] = name
            if len(c.history) > 1:
                png = history_png(c.history)
                if png:
                    name = f"history__{v.slug}__{c.name}.png"
                    (figures_dir / name).write_bytes(png)
                    histories[(v.slug, c.anchor)] = name
    return figures, histories


def write_report(records: Sequence[Record], out_dir: str | Path) -> list[Path]:
    """Write the site and report.md for ``records`` (every record of the store, oldest first:
    the latest per claim and scale is shown, the rest makes the history)."""
    out = Path(out_dir)
    figures_dir, papers_dir = out / "figures", out / "papers"
    figures_dir.mkdir(parents=True, exist_ok=True)
    papers_dir.mkdir(parents=True, exist_ok=True)
    views = build_views(records)
    tally = counts(views)
    n_results = sum(tally.values())
    n_implemented = sum(v.paper.implemented for v in views)
    headline = (f"{n_implemented} of {len(views)} papers implemented; {n_results} claim results: "
                f"{tally['holds']} hold, {tally['fails']} not reproduced, "
                f"{tally['inconclusive']} inconclusive, {tally['error']} errors.")
    figures, histories = _write_figures(views, figures_dir)
    env = _environment()
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    areas = sorted({v.paper.area for v in views if v.paper.area})
    index = env.get_template("index.html.j2").render(
        root="", views=views, counts=tally, verdicts=VERDICTS, n_results=n_results,
        n_implemented=n_implemented, n_papers=len(views), areas=areas, generated=generated)
    (out / "index.html").write_text(index, encoding="utf-8")
    page = env.get_template("paper.html.j2")
    for v in views:
        html = page.render(
            root="../", p=v.paper, view=v,
            figures={a: f for (s, a), f in figures.items() if s == v.slug},
            histories={a: f for (s, a), f in histories.items() if s == v.slug})
        (papers_dir / f"{v.slug}.html").write_text(html, encoding="utf-8")
    md_path = out / "report.md"
    md_path.write_text(markdown_report(views, headline, figures), encoding="utf-8")
    return [out / "index.html", md_path, papers_dir, figures_dir]
