"""What the report shows, computed from the store's records (no HTML here).

Every page reads the same views: per paper its catalogue entry and claims; per claim the
latest record at each scale, the record before it (so a flipped verdict can be marked), its
whole history across runs, its key metric (the first metric its rule reads) and its docstring
(what is scaled down, read from the source without importing the paper).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from iclr24 import registry
from iclr24.claims import Estimate, rule_metric_names
from iclr24.store import VERDICTS, Record


def fmt(value: object) -> str:
    """A metric or table cell for people: 4 significant digits; estimates with interval."""
    if isinstance(value, Estimate):
        return format(value, ".4g")
    if isinstance(value, bool) or value is None:
        return "—" if value is None else str(value)
    if isinstance(value, float):
        return "nan" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def table_columns(rows: Sequence[dict]) -> list[str]:
    """Every column any row of a claim's table has, in first-seen order."""
    return list(dict.fromkeys(k for row in rows for k in row))


def key_metric(rec: Record) -> str | None:
    """The metric a person looks at first: the first one the rule reads, else the first."""
    for name in rule_metric_names(rec.rule):
        if name in rec.metrics:
            return name
    return next(iter(rec.metrics), None)


def point(value: object) -> float:
    return value.value if isinstance(value, Estimate) else float(value)  # type: ignore[arg-type]


@dataclass
class ClaimView:
    """One claim at one scale: its latest record and where it came from."""

    name: str
    latest: Record | None
    previous: Record | None = None
    history: list[Record] = field(default_factory=list)  # every record of this claim, any scale
    docstring: str = ""

    @property
    def verdict(self) -> str:
        return self.latest.verdict if self.latest else "not run"

    @property
    def changed(self) -> str:
        """'fails → holds' when the verdict flipped since the previous run at this scale."""
        if self.latest and self.previous and self.previous.verdict != self.latest.verdict:
            return f"{self.previous.verdict} → {self.latest.verdict}"
        return ""

    @property
    def anchor(self) -> str:
        scale = self.latest.scale if self.latest else "none"
        return f"{self.name}-{scale}"

    def comparison_rows(self, which: str = "all") -> list[dict[str, str]]:
        """paper | ours | scale | seed(s) per metric. ``which="main"``: the metrics the rule
        reads and those the paper gives a number for (rule's first); ``"rest"``: the others;
        ``"all"``: both."""
        rec = self.latest
        if rec is None:
            return []
        theirs = rec.paper_reference.get("numbers", {})
        ruled = [k for k in rule_metric_names(rec.rule) if k in rec.metrics]
        main = list(dict.fromkeys(ruled + list(theirs)))
        rest = [k for k in rec.metrics if k not in main]
        names = {"main": main, "rest": rest, "all": main + rest}[which]
        rows = []
        for name in names:
            ours = rec.metrics.get(name)
            seeds = str(rec.seed)
            if isinstance(ours, Estimate):
                seeds += f" (n={ours.n})"
            rows.append({"metric": name, "paper": fmt(theirs[name]) if name in theirs else "",
                         "ours": "" if ours is None else fmt(ours), "scale": rec.scale,
                         "seeds": seeds, "key": name in rule_metric_names(rec.rule)})
        return rows


@dataclass
class PaperView:
    paper: registry.Paper
    claims: list[ClaimView]

    @property
    def slug(self) -> str:
        return self.paper.slug

    @property
    def last_record(self) -> Record | None:
        recs = [c.latest for c in self.claims if c.latest]
        return max(recs, key=lambda r: r.id or 0) if recs else None

    @property
    def verdicts(self) -> list[str]:
        return sorted({c.verdict for c in self.claims})


def _catalogue_paper(slug: str) -> registry.Paper:
    try:
        return registry.get(slug)
    except registry.UnknownPaperError:  # a record of a paper no longer in the catalogue
        return registry.Paper(slug=slug, title=slug, area="", seed_file="", seed_position=0)


def build_views(records: Sequence[Record]) -> list[PaperView]:
    """All catalogue papers (with results, implemented, planned; catalogue order within each)
    with their claims' views.

    ``records`` is every record of the store (oldest first); a claim appears once per scale it
    was run at, and once as "not run" if it never ran.
    """
    ordered = sorted(records, key=lambda r: (r.id or 0))
    by_claim: dict[tuple[str, str], list[Record]] = {}
    for rec in ordered:
        by_claim.setdefault((rec.paper, rec.claim), []).append(rec)
    papers = registry.papers()
    slugs = [p.slug for p in papers] + sorted({r.paper for r in ordered} - {p.slug for p in papers})
    views = []
    for slug in slugs:
        paper = next((p for p in papers if p.slug == slug), None) or _catalogue_paper(slug)
        names = list(paper.claim_names) + [c for (s, c) in by_claim if s == slug
                                           and c not in paper.claim_names]
        claims = []
        for name in dict.fromkeys(names):
            history = by_claim.get((slug, name), [])
            scales = list(dict.fromkeys(r.scale for r in history))
            if not scales:
                claims.append(ClaimView(name, None, docstring=paper.claim_docs.get(name, "")))
            for scale in scales:
                at_scale = [r for r in history if r.scale == scale]
                claims.append(ClaimView(name, at_scale[-1],
                                        at_scale[-2] if len(at_scale) > 1 else None,
                                        history, paper.claim_docs.get(name, "")))
        views.append(PaperView(paper, claims))
    # papers with results first, then implemented ones not run yet, then planned ones
    views.sort(key=lambda v: 0 if any(c.latest for c in v.claims) else
               1 if v.paper.implemented else 2)
    return views


def counts(views: Sequence[PaperView]) -> dict[str, int]:
    """Verdict counts over the latest record of every claim and scale."""
    latest = [c.latest for v in views for c in v.claims if c.latest]
    return {v: sum(r.verdict == v for r in latest) for v in VERDICTS}
