"""The headline of a claim: the result a reader should believe, chosen from what was measured.

A claim's headline is its **largest-scale current result**: ``full`` if one exists, else
``small``; among results at that scale, the newest. Candidates are the repository's reference
results (:mod:`iclr24.published`) and the user's own runs at small or full in their store (marked
``local``). A result is *current* when the content hash of the code it ran on equals the code's
hash now (:func:`iclr24.provenance.code_hash`); otherwise it is *stale*: shown with its date and
a mark, counted apart, never as current. Smoke is a check that a claim runs on this machine:
it appears as *ran* / *error* with its time, never as a headline verdict.

Headline verdicts: ``holds`` / ``fails`` / ``inconclusive`` (a current small or full result),
the same words with ``stale=True``, or ``not measured`` (no small or full result at all).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from iclr24.claims import Scale
from iclr24.provenance import code_hash
from iclr24.registry import Paper
from iclr24.store import Record

NOT_MEASURED = "not measured"
_RANK = {Scale.FULL.value: 2, Scale.SMALL.value: 1}


@dataclass(frozen=True)
class Headline:
    """What to headline for one claim, and the smoke check beside it."""

    paper: str
    claim: str
    record: Record | None  # the small/full result shown (None: not measured)
    stale: bool = False
    smoke: Record | None = None  # the newest local smoke run (None: never ran here)

    @property
    def verdict(self) -> str:
        return self.record.verdict if self.record else NOT_MEASURED

    @property
    def scale(self) -> str | None:
        return self.record.scale if self.record else None

    @property
    def source(self) -> str | None:
        return self.record.source if self.record else None

    @property
    def reason(self) -> str:
        if self.record is None:
            return "no small or full result yet"
        return self.record.reason

    @property
    def current(self) -> bool:
        return self.record is not None and not self.stale

    @property
    def smoke_status(self) -> str:
        """``ran`` / ``error`` for the smoke check here, ``not run`` without one."""
        if self.smoke is None:
            return "not run"
        return "error" if self.smoke.verdict == "error" else "ran"

    @property
    def label(self) -> str:
        """``holds (small)``, ``fails (small, stale)``, ``holds (full, local)``, ``not
        measured``: the words every view shows."""
        if self.record is None:
            return NOT_MEASURED
        marks = [self.record.scale] + (["stale"] if self.stale else []) \
            + (["local"] if self.record.source == "local" else [])
        return f"{self.record.verdict} ({', '.join(marks)})"

    def to_json(self) -> dict[str, Any]:
        rec = self.record
        headline = {"verdict": self.verdict, "scale": self.scale, "stale": self.stale,
                    "reason": self.reason, "source": self.source,
                    "started_at": rec.started_at if rec else None,
                    "git_commit": rec.git_commit if rec else None,
                    "code_hash": rec.code_hash if rec else None,
                    "duration_s": round(rec.duration_s, 3) if rec else None}
        smoke = None if self.smoke is None else {
            "status": self.smoke_status, "duration_s": round(self.smoke.duration_s, 3),
            "cpu_s": None if self.smoke.cpu_s is None else round(self.smoke.cpu_s, 3),
            "started_at": self.smoke.started_at}
        return {"claim": self.claim, "headline": headline, "smoke": smoke}


def choose(paper: str, claim: str, records: Iterable[Record], current_hash: str) -> Headline:
    """The headline of one claim from all its records (reference and local, any scale)."""
    records = list(records)
    results = [r for r in records if r.scale in _RANK and r.verdict != "error"]

    def best(candidates: Sequence[Record]) -> Record | None:
        # largest scale, then newest; a tie in time goes to the reference result
        return max(candidates, key=lambda r: (_RANK[r.scale], r.started_at,
                                              r.source == "reference"), default=None)

    current = best([r for r in results if r.code_hash and r.code_hash == current_hash])
    smokes = [r for r in records if r.scale == Scale.SMOKE.value and r.source == "local"]
    smoke = max(smokes, key=lambda r: (r.started_at, r.id or 0), default=None)
    if current is not None:
        return Headline(paper, claim, current, False, smoke)
    return Headline(paper, claim, best(results), bool(results), smoke)


def headlines(papers: Sequence[Paper], local: Iterable[Record], reference: Iterable[Record]
              ) -> dict[tuple[str, str], Headline]:
    """(slug, claim) -> :class:`Headline` for every claim of every implemented paper."""
    by_claim: dict[tuple[str, str], list[Record]] = {}
    for rec in list(reference) + list(local):
        by_claim.setdefault((rec.paper, rec.claim), []).append(rec)
    out = {}
    for paper in papers:
        if not paper.claim_names:
            continue
        now = code_hash(paper.package_dir)
        for name in paper.claim_names:
            out[(paper.slug, name)] = choose(paper.slug, name, by_claim.get((paper.slug, name),
                                                                          []), now)
    return out


HEADLINE_KEYS = ("holds", "fails", "inconclusive", "stale", NOT_MEASURED)


def tally(heads: Iterable[Headline]) -> dict[str, int]:
    """Counts over headlines: current holds / fails / inconclusive, stale, not measured."""
    out = dict.fromkeys(HEADLINE_KEYS, 0)
    for h in heads:
        key = NOT_MEASURED if h.record is None else "stale" if h.stale else h.verdict
        out[key] += 1
    return out


def scales_of(heads: Iterable[Headline]) -> str:
    """'small', 'full' or 'small/full': the scales the current headlines come from."""
    found = {h.scale for h in heads if h.current}
    return "/".join(s for s in (Scale.SMALL.value, Scale.FULL.value) if s in found) or "small"


def summary_line(heads: Mapping[tuple[str, str], Headline]) -> str:
    """'reference verdicts (small, current): 5 holds · 3 fails · 1 inconclusive; 0 stale;
    134 not yet measured'."""
    counts = tally(heads.values())
    return (f"reference verdicts ({scales_of(heads.values())}, current): "
            f"{counts['holds']} holds · {counts['fails']} fails · "
            f"{counts['inconclusive']} inconclusive; {counts['stale']} stale; "
            f"{counts[NOT_MEASURED]} not yet measured")
