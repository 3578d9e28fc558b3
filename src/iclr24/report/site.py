"""Writes the report folder: ``index.html``, ``papers/<slug>.html``, ``figures/``, ``report.md``.

Static files only, no JavaScript framework and nothing fetched from a network: the folder works
from ``file://``, can be zipped, mailed or served by any static server. The index's filters are
a few lines of plain JavaScript; with JavaScript off the page shows every paper.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from iclr24.headline import HEADLINE_KEYS, NOT_MEASURED, scales_of
from iclr24.store import Record

from .history import history_png
from .markdown import markdown_report
from .views import PaperView, build_views, counts, fmt, smoke_counts, table_columns

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
    """Each headline's figure and each claim's history plot as PNG files; (slug, anchor) ->
    file name."""
    figures, histories = {}, {}
    for v in views:
        for c in v.claims:
            if c.latest is not None and c.latest.figure_png:
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


def headline_text(views: Sequence[PaperView]) -> str:
    """The report's first sentence: headline counts, then the smoke checks apart."""
    tally, smoke = counts(views), smoke_counts(views)
    n_claims = sum(len(v.claims) for v in views)
    n_implemented = sum(v.paper.implemented for v in views)
    heads = [c.head for v in views for c in v.claims]
    return (f"{n_implemented} of {len(views)} papers implemented, {n_claims} claims. Headline "
            f"verdicts ({scales_of(heads)}, current): {tally['holds']} hold, {tally['fails']} "
            f"not reproduced, {tally['inconclusive']} inconclusive; {tally['stale']} stale; "
            f"{tally[NOT_MEASURED]} not yet measured. Smoke checks here: {smoke['ran']} ran, "
            f"{smoke['error']} errors, {smoke['not run']} not run.")


def write_report(records: Sequence[Record], out_dir: str | Path,
                 reference: Sequence[Record] = ()) -> list[Path]:
    """Write the site and report.md for ``records`` (every record of the store, oldest first)
    and ``reference`` (the repository's reference results, figures loaded): each claim shows
    its headline, the smoke check beside it, and its history."""
    out = Path(out_dir)
    figures_dir, papers_dir = out / "figures", out / "papers"
    figures_dir.mkdir(parents=True, exist_ok=True)
    papers_dir.mkdir(parents=True, exist_ok=True)
    views = build_views(records, reference)
    tally = counts(views)
    n_claims = sum(len(v.claims) for v in views)
    n_implemented = sum(v.paper.implemented for v in views)
    headline = headline_text(views)
    figures, histories = _write_figures(views, figures_dir)
    env = _environment()
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    areas = sorted({v.paper.area for v in views if v.paper.area})
    index = env.get_template("index.html.j2").render(
        root="", views=views, counts=tally, kinds=HEADLINE_KEYS, n_claims=n_claims,
        smoke=smoke_counts(views), scales=scales_of(c.head for v in views for c in v.claims),
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
