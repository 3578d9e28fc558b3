"""The report: Markdown and HTML views of the latest results, with one PNG per claim.

Layout of ``OUT``: ``report.md``, ``report.html``, ``figures/<paper>__<claim>__<scale>.png``.
The summary table covers all 57 catalogue papers (planned ones included, so the report also
shows what is missing); then every claim's duration (wall and CPU, slowest first: the smoke
budget is 30 s per claim and 20 s of CPU per paper); then one section per paper with results:
for every claim the verdict, the rule, our numbers beside the paper's (an estimate as
``value [low, high] (n=...)``), the notes, any tables, and the figure.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from pathlib import Path

from iclr24 import registry
from iclr24.claims import Estimate
from iclr24.store import VERDICTS, Record


def _fmt(value: object) -> str:
    if isinstance(value, Estimate):
        return format(value, ".4g")
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        return f"{value:.4g}"
    if value is None:
        return "—"
    return str(value)


def _metric_rows(rec: Record) -> list[tuple[str, str, str]]:
    """(metric, ours, paper) rows: every measured metric, plus paper numbers we did not measure."""
    theirs = rec.paper_reference.get("numbers", {})
    rows = [(k, _fmt(v), _fmt(theirs[k]) if k in theirs else "") for k, v in rec.metrics.items()]
    rows += [(k, "", _fmt(v)) for k, v in theirs.items() if k not in rec.metrics]
    return rows


def _figure_name(rec: Record) -> str:
    return f"{rec.paper}__{rec.claim}__{rec.scale}.png"


def _md_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    def cell(x: object) -> str:
        return _fmt(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def _html_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_fmt(c))}</td>" for c in row) + "</tr>"
                   for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _table_columns(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(k for row in rows for k in row))


def write_report(records: Sequence[Record], out_dir: str | Path) -> list[Path]:
    """Write report.md, report.html and figures for ``records`` (latest per claim and scale)."""
    out = Path(out_dir)
    figures = out / "figures"
    figures.mkdir(parents=True, exist_ok=True)
    by_paper: dict[str, list[Record]] = {}
    for rec in records:
        by_paper.setdefault(rec.paper, []).append(rec)
    papers = registry.papers()
    catalog_slugs = {p.slug for p in papers}

    counts = {v: sum(r.verdict == v for r in records) for v in VERDICTS}
    headline = (f"{sum(p.implemented for p in papers)} of {len(papers)} papers implemented; "
                f"{len(records)} claim results: {counts['holds']} hold, {counts['fails']} "
                f"not reproduced, {counts['inconclusive']} inconclusive, {counts['error']} "
                "errors.")
    summary_rows = []
    for p in papers:
        recs = by_paper.get(p.slug, [])
        verdicts = ", ".join(f"{r.claim}@{r.scale}: {r.verdict}" for r in recs)
        summary_rows.append((p.slug, p.title, p.status, len(p.claim_names), verdicts or "—"))
    header = ("paper", "title", "status", "claims", "latest verdicts")

    md = ["# iclr24 report", "", headline, "",
          "Verdicts are computed from the numbers measured in each run by the rule each claim "
          "declares; *fails* means the claim did not reproduce at that scale; *inconclusive* "
          "means an interval over seeds straddles the rule's boundary (the measurement cannot "
          "tell).", "",
          "## Summary", ""]
    md += _md_table(header, summary_rows)
    body = [f"<h1>iclr24 report</h1><p>{html.escape(headline)}</p>",
            "<h2>Summary</h2>", _html_table(header, summary_rows)]
    timing_header = ("claim", "scale", "verdict", "wall s", "CPU s")
    timing_rows = [(f"{r.paper}.{r.claim}", r.scale, r.verdict, f"{r.duration_s:.1f}",
                    "—" if r.cpu_s is None else f"{r.cpu_s:.1f}")
                   for r in sorted(records, key=lambda r: r.duration_s, reverse=True)]
    if timing_rows:
        md += ["", "## Durations", ""] + _md_table(timing_header, timing_rows)
        body += ["<h2>Durations</h2>", _html_table(timing_header, timing_rows)]

    ordered = [p for p in papers if p.slug in by_paper]
    ordered_slugs = [p.slug for p in ordered] + sorted(set(by_paper) - catalog_slugs)
    titles = {p.slug: p.title for p in papers}
    for slug in ordered_slugs:
        title = titles.get(slug, slug)
        md += ["", f"## {slug}: {title}", ""]
        body.append(f"<h2 id='{html.escape(slug)}'>{html.escape(slug)}: "
                    f"{html.escape(title)}</h2>")
        for rec in by_paper[slug]:
            md += [f"### {rec.claim} ({rec.scale}, seed {rec.seed}): **{rec.verdict}**", "",
                   f"- rule: `{rec.rule}`",
                   f"- paper: {rec.paper_reference.get('text', '')}",
                   f"- time: {rec.duration_s:.1f} s"
                   + (f" (CPU {rec.cpu_s:.1f} s)" if rec.cpu_s is not None else "")
                   + f", {rec.started_at}"
                   + (f", commit {rec.git_commit}" if rec.git_commit else ""), ""]
            body.append(f"<h3>{html.escape(rec.claim)} ({rec.scale}, seed {rec.seed}): "
                        f"<span class='{rec.verdict}'>{rec.verdict}</span></h3>"
                        f"<p>rule: <code>{html.escape(rec.rule)}</code><br>"
                        f"paper: {html.escape(rec.paper_reference.get('text', ''))}<br>"
                        f"time: {rec.duration_s:.1f} s</p>")
            if rec.verdict == "error":
                md += ["```", rec.error.strip(), "```"]
                body.append(f"<pre>{html.escape(rec.error.strip())}</pre>")
                continue
            rows = _metric_rows(rec)
            md += _md_table(("metric", "ours", "paper"), rows)
            body.append(_html_table(("metric", "ours", "paper"), rows))
            if rec.notes:
                md += ["", rec.notes.strip()]
                body.append(f"<p class='notes'>{html.escape(rec.notes.strip())}</p>")
            for name, table_rows in rec.tables.items():
                if not table_rows:
                    continue
                cols = _table_columns(table_rows)
                cells = [[row.get(c) for c in cols] for row in table_rows]
                md += ["", f"*{name}*", ""] + _md_table(cols, cells)
                body.append(f"<p><em>{html.escape(name)}</em></p>" + _html_table(cols, cells))
            if rec.figure_png:
                fig_path = figures / _figure_name(rec)
                fig_path.write_bytes(rec.figure_png)
                md += ["", f"![{rec.paper} {rec.claim}](figures/{fig_path.name})"]
                body.append(f"<img src='figures/{html.escape(fig_path.name)}' "
                            f"alt='{html.escape(rec.claim)}'>")
            md.append("")

    style = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;"
             "padding:0 1em}table{border-collapse:collapse;margin:.5em 0}"
             "td,th{border:1px solid #ccc;padding:3px 8px;font-size:90%;text-align:left}"
             ".holds{color:#080}.fails{color:#a60}.inconclusive{color:#07a}.error{color:#c00}"
             "img{max-width:100%}"
             "pre{background:#f6f6f6;padding:1em;overflow:auto}")
    html_doc = ("<!doctype html><html><head><meta charset='utf-8'><title>iclr24 report</title>"
                f"<style>{style}</style></head><body>" + "\n".join(body) + "</body></html>")
    md_path, html_path = out / "report.md", out / "report.html"
    md_path.write_text("\n".join(md) + "\n", encoding="utf-8")
    html_path.write_text(html_doc, encoding="utf-8")
    return [md_path, html_path, figures]
