"""report.md: the same content as the site, as one Markdown file (for mail, diffs, terminals)."""

from __future__ import annotations

from collections.abc import Sequence

from .views import PaperView, fmt, table_columns


def _md_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> list[str]:
    def cell(x: object) -> str:
        return fmt(x).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]
    return lines


def markdown_report(views: Sequence[PaperView], headline: str,
                    figures: dict[tuple[str, str], str]) -> str:
    """The whole report as Markdown; ``figures`` maps (slug, claim anchor) -> figure file."""
    md = ["# iclr24 report", "", headline, "",
          "A claim's headline is its largest-scale current result (full, else small; the "
          "repository's reference results and your own runs at those scales, marked *local*). "
          "*fails* means the claim did not reproduce at that scale; *inconclusive* comes with "
          "its reason (an interval straddles the rule's boundary, a metric is not finite, the "
          "test bed cannot tell); *stale* results ran on code that has changed since. Smoke "
          "only checks that a claim runs here and is never a headline.", "", "## Summary", ""]
    summary = []
    for v in views:
        verdicts = "; ".join(f"{c.name}: {c.label}"
                             + (f" (changed: {c.changed})" if c.changed else "")
                             for c in v.claims)
        summary.append((v.slug, v.paper.title, v.paper.status, verdicts or "—",
                        v.smoke_line or "—"))
    md += _md_table(("paper", "title", "status", "claims: headline verdict", "smoke here"),
                    summary)
    timed = sorted((c.latest for v in views for c in v.claims if c.latest),
                   key=lambda r: r.duration_s, reverse=True)
    if timed:
        md += ["", "## Durations of the headline results", ""] + _md_table(
            ("claim", "scale", "verdict", "wall s", "CPU s", "machine"),
            [(f"{r.paper}.{r.claim}", r.scale, r.verdict, f"{r.duration_s:.1f}",
              "—" if r.cpu_s is None else f"{r.cpu_s:.1f}",
              f"{r.environment.get('cpu_model', '')} ({r.environment.get('cores', '?')} cores)")
             for r in timed])
    for v in views:
        if not v.claims:
            continue
        md += ["", f"## {v.slug}: {v.paper.title}", ""]
        for c in v.claims:
            smoke = ("" if c.smoke is None else
                     f"; smoke here: {c.head.smoke_status} in {c.smoke.duration_s:.1f} s")
            rec = c.latest
            if rec is None:
                md += [f"### {c.name}: **not measured** at small or full{smoke}", ""]
                continue
            md += [f"### {c.name}: **{c.label}**{smoke}"
                   + (f" (changed since the previous result: {c.changed})" if c.changed else ""),
                   "", f"- rule: `{rec.rule}`"]
            if rec.control:
                md.append(f"- control: `{rec.control}`")
            if rec.reason:
                md.append(f"- why: {rec.reason}")
            md += [f"- paper: {rec.paper_reference.get('text', '')}",
                   f"- {rec.source} result, seed {rec.seed}, {rec.duration_s:.1f} s"
                   + (f" (CPU {rec.cpu_s:.1f} s)" if rec.cpu_s is not None else "")
                   + f", {rec.started_at}"
                   + (f", commit {rec.git_commit}" if rec.git_commit else "")
                   + (", **stale**: the code changed since" if c.head.stale else ""), ""]
            md += _md_table(("metric", "ours", "paper"),
                            [(r["metric"], r["ours"], r["paper"]) for r in c.comparison_rows()])
            if rec.notes:
                md += ["", rec.notes.strip()]
            for name, rows in rec.tables.items():
                if rows:
                    cols = table_columns(rows)
                    md += ["", f"*{name}*", ""] + _md_table(cols, [[row.get(k) for k in cols]
                                                                   for row in rows])
            if (v.slug, c.anchor) in figures:
                md += ["", f"![{rec.paper} {rec.claim}](figures/{figures[(v.slug, c.anchor)]})"]
            md.append("")
    return "\n".join(md) + "\n"
