"""What the report shows, computed from the reference results and the store (no HTML here).

Every page reads the same views: per paper its catalogue entry and claims; per claim its
headline (:mod:`iclr24.headline`: the largest-scale current result, reference or local; stale
and not-measured claims marked as such), the smoke check on this machine beside it, the result
before the headline (so a flipped verdict can be marked), its whole history, its key metric
(the first metric its rule reads) and its docstring (what is scaled down, read from the source
without importing the paper).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from iclr24 import registry
from iclr24.claims import Estimate, rule_metric_names
from iclr24.headline import Headline, headlines, tally
from iclr24.store import Record


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
    """One claim: its headline (largest-scale current result), the smoke check beside it, and
    every record of it (reference and local, any scale) for the history."""

    name: str
    head: Headline
    history: list[Record] = field(default_factory=list)
    docstring: str = ""

    @property
    def latest(self) -> Record | None:
        """The headline's record (None: not measured at small or full)."""
        return self.head.record

    @property
    def verdict(self) -> str:
        return self.head.verdict

    @property
    def label(self) -> str:
        return self.head.label

    @property
    def badge(self) -> str:
        """CSS classes of the headline's badge."""
        return self.verdict.replace(" ", "") + (" stale" if self.head.stale else "")

    @property
    def filter_key(self) -> str:
        """What the index's verdict filter matches."""
        return "stale" if self.head.stale else self.verdict

    @property
    def smoke(self) -> Record | None:
        return self.head.smoke

    @property
    def previous(self) -> Record | None:
        """The result before the headline at its scale and source (for a flipped verdict)."""
        rec = self.latest
        if rec is None:
            return None
        before = [r for r in self.history if r.scale == rec.scale and r.source == rec.source
                  and r is not rec and r.started_at <= rec.started_at]
        return before[-1] if before else None

    @property
    def changed(self) -> str:
        """'fails → holds' when the verdict flipped since the previous result."""
        if self.latest and self.previous and self.previous.verdict != self.latest.verdict:
            return f"{self.previous.verdict} → {self.latest.verdict}"
        return ""

    @property
    def anchor(self) -> str:
        return self.name

    def comparison_rows(self, which: str = "all") -> list[dict[str, str]]:
        """paper | ours | scale | seed(s) per metric of the headline. ``which="main"``: the
        metrics the rule (and control) reads and those the paper gives a number for (rule's
        first); ``"rest"``: the others; ``"all"``: both."""
        rec = self.latest
        if rec is None:
            return []
        theirs = rec.paper_reference.get("numbers", {})
        read = rule_metric_names(rec.rule) + rule_metric_names(rec.control)
        ruled = [k for k in dict.fromkeys(read) if k in rec.metrics]
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
                         "seeds": seeds, "key": name in ruled})
        return rows


@dataclass
class PaperView:
    paper: registry.Paper
    claims: list[ClaimView]

    @property
    def slug(self) -> str:
        return self.paper.slug

    @property
    def verdicts(self) -> list[str]:
        return sorted({c.filter_key for c in self.claims})

    @property
    def smoke_line(self) -> str:
        """'3/3 ran here (12.0 s)' for the paper's smoke checks, '' when none ran."""
        runs = [c.smoke for c in self.claims if c.smoke is not None]
        if not runs:
            return ""
        ran = sum(r.verdict != "error" for r in runs)
        errors = len(runs) - ran
        return (f"{ran}/{len(self.claims)} ran here ({sum(r.duration_s for r in runs):.1f} s)"
                + (f", {errors} error" if errors else ""))


def build_views(records: Sequence[Record], reference: Sequence[Record] = ()
                ) -> list[PaperView]:
    """All catalogue papers (implemented first, then planned; catalogue order within each)
    with one view per claim: its headline from ``reference`` (the repository's results) and
    ``records`` (the user's store, every record), and its history across both."""
    papers = registry.papers()
    heads = headlines(papers, records, reference)
    by_claim: dict[tuple[str, str], list[Record]] = {}
    for rec in sorted(list(reference) + list(records), key=lambda r: (r.started_at, r.id or 0)):
        by_claim.setdefault((rec.paper, rec.claim), []).append(rec)
    views = []
    for paper in papers:
        claims = [ClaimView(name, heads[(paper.slug, name)], by_claim.get((paper.slug, name), []),
                            paper.claim_docs.get(name, "")) for name in paper.claim_names]
        views.append(PaperView(paper, claims))
    views.sort(key=lambda v: 0 if v.paper.implemented else 1)
    return views


def counts(views: Sequence[PaperView]) -> dict[str, int]:
    """Headline counts: current holds / fails / inconclusive, stale, not measured."""
    return tally(c.head for v in views for c in v.claims)


def smoke_counts(views: Sequence[PaperView]) -> dict[str, int]:
    """Smoke checks on this machine: ran, error, not run."""
    heads = [c.head for v in views for c in v.claims]
    return {k: sum(h.smoke_status == k for h in heads) for k in ("ran", "error", "not run")}
