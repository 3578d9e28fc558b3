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
          "Verdicts are computed from the numbers measured in each run by the rule each claim "
          "declares; *fails* means the claim did not reproduce at that scale; *inconclusive* "
          "means an interval over seeds straddles the rule's boundary (the measurement cannot "
          "tell).", "", "## Summary", ""]
    summary = []
    for v in views:
        verdicts = ", ".join(f"{c.name}@{c.latest.scale}: {c.verdict}"
                             + (f" (changed: {c.changed})" if c.changed else "")
                             for c in v.claims if c.latest)
        summary.append((v.slug, v.paper.title, v.paper.status, len(v.paper.claim_names),
                        verdicts or "—"))
    md += _md_table(("paper", "title", "status", "claims", "latest verdicts"), summary)
    timed = sorted((c.latest for v in views for c in v.claims if c.latest),
                   key=lambda r: r.duration_s, reverse=True)
    if timed:
        md += ["", "## Durations", ""] + _md_table(
            ("claim", "scale", "verdict", "wall s", "CPU s"),
            [(f"{r.paper}.{r.claim}", r.scale, r.verdict, f"{r.duration_s:.1f}",
              "—" if r.cpu_s is None else f"{r.cpu_s:.1f}") for r in timed])
    for v in views:
        ran = [c for c in v.claims if c.latest]
        if not ran:
            continue
        md += ["", f"## {v.slug}: {v.paper.title}", ""]
        for c in ran:
            rec = c.latest
            md += [f"### {rec.claim} ({rec.scale}, seed {rec.seed}): **{rec.verdict}**"
                   + (f" (changed since the previous run: {c.changed})" if c.changed else ""),
                   "", f"- rule: `{rec.rule}`", f"- paper: {rec.paper_reference.get('text', '')}",
                   f"- time: {rec.duration_s:.1f} s"
                   + (f" (CPU {rec.cpu_s:.1f} s)" if rec.cpu_s is not None else "")
                   + f", {rec.started_at}"
                   + (f", commit {rec.git_commit}" if rec.git_commit else ""), ""]
            if rec.verdict == "error":
                md += ["```", rec.error.strip(), "```"]
                continue
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
