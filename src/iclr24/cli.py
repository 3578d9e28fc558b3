"""The ``iclr24`` command: list, show, run, report (and compress / decompress, the
lm_compression paper's coder on a user's own file).

Verdicts: holds, fails (not reproduced at that scale), inconclusive (an interval over seeds
straddles the rule's boundary), error (the claim raised).
Exit codes of ``run``: 0 when every claim ran (whatever the verdicts), 1 when a claim errored,
2 for bad usage (unknown paper or claim, a planned paper, bad scale, unusable store path),
130 when interrupted by Ctrl-C (what finished is stored).
Heavy libraries are imported only when a paper's claims run, so ``--help`` and ``list`` are instant.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from iclr24 import registry
from iclr24.claims import Estimate, Scale, rule_metric_names
from iclr24.store import VERDICTS, ResultStore, StoreError, default_path

app = typer.Typer(
    help="ICLR 2024 papers as working software: list them, run their claims, report results.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
out = Console()
err = Console(stderr=True)

StoreOpt = Annotated[
    Path | None,
    typer.Option("--store", help="SQLite results file [default: $ICLR24_STORE or "
                                 "./runs/results.sqlite]", show_default=False),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document for scripts.")]

VERDICT_STYLE = {"holds": "green", "fails": "yellow", "inconclusive": "cyan", "error": "red"}


def _usage_error(message: str) -> typer.Exit:
    err.print(f"[red]error:[/] {escape(message)}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def _open_store(path: Path | None, *, create: bool) -> ResultStore | None:
    """The store at ``path`` (or the default); None when reading and no store exists yet."""
    target = path if path is not None else default_path()
    if not create and not target.exists():
        return None
    try:
        return ResultStore(target)
    except StoreError as exc:
        raise _usage_error(str(exc)) from None


def _headlines(store: ResultStore | None, papers: list[registry.Paper]) -> dict:
    """(slug, claim) -> Headline from the reference results and the user's store."""
    from iclr24 import published
    from iclr24.headline import headlines

    local = store.records(figures=False) if store is not None else []
    try:
        reference = published.load(papers=[p.slug for p in papers])
    except published.ResultsFormatError as exc:
        raise _usage_error(str(exc)) from None
    return headlines(papers, local, reference)


HEADLINE_STYLE = {**VERDICT_STYLE, "not measured": "dim"}


def _headline_markup(h) -> str:
    style = "dim" if h.stale else HEADLINE_STYLE[h.verdict]
    return f"[{style}]{h.label}[/]"


def _smoke_counts(heads) -> str:
    """'3/3 ran' (with errors named) for the smoke checks of some claims."""
    ran = sum(h.smoke_status == "ran" for h in heads)
    errors = sum(h.smoke_status == "error" for h in heads)
    if not ran and not errors:
        return "[dim]—[/]" if heads else ""
    text = f"{ran}/{len(heads)} ran"
    return text + (f", [red]{errors} error[/]" if errors else "")


@app.command("list")
def list_papers(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """List all 57 papers with their status and each claim's headline verdict (its
    largest-scale current result) beside the smoke check on this machine."""
    from iclr24.headline import summary_line

    papers = registry.papers()
    heads = _headlines(_open_store(store, create=False), papers)
    if as_json:
        doc = {"papers": [
            {"slug": p.slug, "title": p.title, "area": p.area, "status": p.status,
             "claims": list(p.claim_names), "missing": p.missing_modules(),
             "install": f'pip install "iclr24[{p.slug}]"' if p.implemented else None,
             "results": [heads[(p.slug, n)].to_json() for n in p.claim_names]}
            for p in papers], "summary": summary_line(heads)}
        typer.echo(json.dumps(doc, indent=2))
        return
    table = Table(title=f"iclr24: {sum(p.implemented for p in papers)} of {len(papers)} "
                        "papers implemented", show_lines=False)
    table.add_column("slug", no_wrap=True)
    table.add_column("title", overflow="fold", ratio=3)
    table.add_column("area", overflow="fold", ratio=1)
    table.add_column("claims: headline verdict", overflow="fold", ratio=3)
    table.add_column("smoke here", overflow="fold", ratio=1)
    for p in papers:
        mine = [heads[(p.slug, n)] for n in p.claim_names]
        verdicts = "; ".join(f"{h.claim}: {_headline_markup(h)}" for h in mine)
        missing = p.missing_modules()
        smoke = (f"[yellow]not installed[/] ({', '.join(missing)}): "
                 + escape(f'pip install "iclr24[{p.slug}]"') if missing else _smoke_counts(mine))
        table.add_row(p.slug, p.title, p.area,
                      verdicts if p.implemented else "[dim]planned[/]", smoke)
    out.print(table)
    out.print(f"Headline: each claim's largest-scale current result; {summary_line(heads)}. "
              "Smoke only checks that a claim runs here.", highlight=False, soft_wrap=True)


def _get_paper(slug: str) -> registry.Paper:
    try:
        return registry.get(slug)
    except registry.UnknownPaperError as exc:
        raise _usage_error(str(exc)) from None


@app.command()
def show(slug: Annotated[str, typer.Argument(help="Paper slug (see `iclr24 list`).")],
         store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Show what a paper is, its public API, and each claim's headline result (its
    largest-scale current result, reference or yours) beside the paper's numbers."""
    paper = _get_paper(slug)
    result_store = _open_store(store, create=False)
    heads = _headlines(result_store, [paper])
    mine = [heads[(slug, n)] for n in paper.claim_names]
    if as_json:
        results = []
        for h in mine:
            doc = h.to_json()
            doc["headline"]["metrics"] = h.record.to_json()["metrics"] if h.record else {}
            doc["headline"]["rule"] = h.record.rule if h.record else None
            doc["headline"]["control"] = h.record.control if h.record else None
            results.append(doc)
        local = result_store.latest(paper=slug) if result_store is not None else []
        doc = {"slug": paper.slug, "title": paper.title, "area": paper.area,
               "status": paper.status, "arxiv": paper.arxiv, "openreview": paper.openreview,
               "official_repo": paper.official_repo, "authors": list(paper.authors),
               "summary": paper.summary, "url": paper.url, "public_api": paper.public_api(),
               "claims": list(paper.claim_names), "results": results,
               "local_runs": [r.to_json() for r in local]}
        typer.echo(json.dumps(doc, indent=2))
        return
    out.print(f"[bold]{paper.title}[/]  ({paper.slug}, {paper.area})")
    for label, value in (("paper", paper.url), ("official code", paper.official_repo),
                         ("authors", ", ".join(paper.authors)), ("status", paper.status)):
        if value:
            out.print(f"  {label}: {value}", highlight=False)
    out.print(f"\n{paper.summary}\n", highlight=False)
    if not paper.implemented:
        out.print("[dim]Planned: no implementation yet.[/]")
        return
    doc = paper.docstring()
    if doc:
        out.print(doc, highlight=False, markup=False, soft_wrap=True)
    api = paper.public_api()
    if api:
        out.print(f"\n[bold]Public API[/] (from iclr24.papers.{slug} import ...): "
                  + ", ".join(api), highlight=False)
    table = Table(title="Claims: headline result (largest-scale current; smoke only checks "
                        "that the claim runs here)")
    for col in ("claim", "headline", "why / when", "ours", "paper", "rule", "smoke here"):
        table.add_column(col, overflow="fold")
    for h in mine:
        rec = h.record
        smoke = "" if h.smoke is None else f"{h.smoke_status} {h.smoke.duration_s:.1f}s"
        if rec is None:
            table.add_row(h.claim, _headline_markup(h), "", "", "", "", smoke)
            continue
        ours = ", ".join(f"{k}={_fmt(v)}" for k, v in rec.metrics.items())
        theirs = ", ".join(f"{k}={_fmt(v)}" for k, v in rec.paper_reference["numbers"].items())
        when = ((rec.reason + "; ") if rec.reason else "") + rec.started_at[:10] + (
            f", code changed since (ran on {rec.git_commit[:12] or 'an unknown commit'})"
            if h.stale else "")
        rule = rec.rule + (f"; control: {rec.control}" if rec.control else "")
        table.add_row(h.claim, _headline_markup(h), when, ours,
                      theirs or rec.paper_reference["text"], rule, smoke)
    out.print(table)


def _fmt(value: float | Estimate) -> str:
    """A number to 4 significant digits; an estimate as ``0.0041 [−0.0063, 0.0145] (n=5)``."""
    return format(value, ".4g")


def _plan(slugs: list[str], claim_names: list[str], scale: Scale | None = None
          ) -> list[tuple[registry.Paper, str]]:
    """Resolve slugs/claims into (paper, claim name) pairs, or exit 2 with a helpful message.
    Nothing is imported: names come from reading each claims.py. With ``scale``, claims that
    do not run at it are left out (and named); naming one with ``--claim`` is an error."""
    if not slugs:
        raise _usage_error("name at least one paper slug, or `all`")
    if "all" in slugs:
        if len(slugs) > 1:
            raise _usage_error("`all` cannot be combined with other slugs")
        papers = [p for p in registry.papers() if p.implemented]
    else:
        papers = []
        for slug in dict.fromkeys(slugs):
            paper = _get_paper(slug)
            if not paper.implemented:
                raise _usage_error(f"paper {slug!r} is planned, not implemented yet; "
                                   f"implemented papers: "
                                   f"{', '.join(p.slug for p in registry.papers() if p.implemented)}")
            papers.append(paper)
    for paper in papers:
        missing = paper.missing_modules()
        if missing and "all" not in slugs:
            raise _usage_error(f"paper {paper.slug!r} needs modules that are not installed "
                               f"({', '.join(missing)}): pip install \"iclr24[{paper.slug}]\"")
    if "all" in slugs:
        skipped = [p.slug for p in papers if p.missing_modules()]
        if skipped:
            err.print(f"[yellow]not installed, left out:[/] {', '.join(skipped)} "
                      + escape('(pip install "iclr24[SLUG]", or "iclr24[all]")'),
                      highlight=False, soft_wrap=True)
            papers = [p for p in papers if p.slug not in skipped]
    known = {name for p in papers for name in p.claim_names}
    missing = [n for n in claim_names if n not in known]
    if missing:
        listing = "; ".join(f"{p.slug}: {', '.join(p.claim_names)}" for p in papers)
        raise _usage_error(f"no selected paper has claim(s) {', '.join(missing)}; "
                           f"claims are {listing}")
    chosen = [(paper, name) for paper in papers for name in paper.claim_names
              if not claim_names or name in claim_names]
    if scale is None:
        return chosen
    elsewhere = [(p, n) for p, n in chosen if not p.runs_at(n, scale.value)]
    named = [f"{p.slug}.{n} (runs at {', '.join(p.claim_scales[n])})" for p, n in elsewhere
             if n in claim_names]
    if named:
        raise _usage_error(f"not run at {scale.value}: {'; '.join(named)}")
    if elsewhere:
        err.print(f"[dim]not run at {scale.value} (too heavy for its budget; see each claim's "
                  f"docstring): {', '.join(f'{p.slug}.{n}' for p, n in elsewhere)}[/]")
    return [(p, n) for p, n in chosen if p.runs_at(n, scale.value)]


def _parse_jobs(value: str) -> int:
    from iclr24.executors import cpu_count

    if value.strip().lower() == "auto":
        return cpu_count()
    try:
        jobs = int(value)
    except ValueError:
        jobs = 0
    if jobs < 1:
        raise _usage_error(f"--jobs must be a positive integer or 'auto', got {value!r}")
    return jobs


@app.command()
def run(
    slugs: Annotated[list[str], typer.Argument(help="Paper slugs, or `all` for every "
                                                     "implemented paper.")],
    scale: Annotated[Scale, typer.Option("--scale", help="smoke (<30 s), small (<5 min) or "
                                                          "full.")] = Scale.SMALL,
    seed: Annotated[int, typer.Option("--seed", help="Seed for every RNG.")] = 0,
    claim: Annotated[list[str] | None, typer.Option(
        "--claim", help="Run only this claim (repeatable).")] = None,
    jobs: Annotated[str, typer.Option(
        "--jobs", "-j", help="Worker processes: a number, or `auto` (one per core). 1 runs "
                             "in this process.")] = "1",
    executor: Annotated[str, typer.Option(
        "--executor", help="`local` (this machine) or `ray` (a Ray cluster).")] = "local",
    address: Annotated[str | None, typer.Option(
        "--address", help="Ray cluster address for --executor ray (e.g. ray://head:10001, "
                          "or `auto`); default: start a local Ray instance.")] = None,
    store: StoreOpt = None,
    publish: Annotated[bool, typer.Option(
        "--publish", help="Write the results (small or full) into the repository's reference "
                          "results, replacing those of the same claims and scale.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run paper claims; every result is stored; exit 1 if any claim errored."""
    from iclr24.runner import run_claims

    if publish and scale is Scale.SMOKE:
        raise _usage_error("--publish takes small or full results; smoke is a plumbing check, "
                           "not evidence")
    if executor not in ("local", "ray"):
        raise _usage_error(f"--executor must be 'local' or 'ray', got {executor!r}")
    if address is not None and executor != "ray":
        raise _usage_error("--address is for --executor ray")
    n_jobs = _parse_jobs(jobs)
    tasks = _plan(slugs, claim or [], scale)
    result_store = _open_store(store, create=True)
    try:
        outcome = run_claims(tasks, scale, seed, result_store, console=err, jobs=n_jobs,
                             executor=executor, address=address)
    except RuntimeError as exc:  # the Ray extra is missing or the cluster is unreachable
        raise _usage_error(str(exc)) from None
    papers = list({id(p): p for p, _ in tasks}.values())
    heads = _headlines(result_store, papers)
    if as_json:
        from iclr24.headline import summary_line

        typer.echo(json.dumps({"results": [_result_json(r) for r in outcome.records],
                               "counts": _counts(outcome.records),
                               "reference": summary_line(heads),
                               "interrupted": outcome.interrupted}, indent=2))
    else:
        _print_summary(outcome.records, scale, heads)
        _print_slowest(outcome.slowest(5))
        if scale is Scale.SMOKE:
            _print_budget(outcome.records)
        err.print(f"stored in {result_store.path}", highlight=False)
    if publish and not outcome.interrupted:
        done = [r for r in outcome.records if r.verdict != "error"]
        skipped = [f"{r.paper}.{r.claim}" for r in outcome.records if r.verdict == "error"]
        if skipped:
            err.print(f"[red]not published (the run raised):[/] {', '.join(skipped)}",
                      highlight=False)
        _publish(done)
    if outcome.interrupted:
        err.print("[yellow]interrupted: finished claims were stored[/]")
        raise typer.Exit(130)
    if outcome.errored:
        raise typer.Exit(1)


def _result_json(rec) -> dict:
    doc = rec.to_json()
    return {"paper": doc["paper"], "claim": doc["claim"], "scale": doc["scale"],
            "seed": doc["seed"], "verdict": doc["verdict"], "reason": doc["reason"],
            "metrics": doc["metrics"], "rule": doc["rule"], "control": doc["control"],
            "paper_reference": doc["paper_reference"], "duration_s": doc["duration_s"],
            "cpu_s": doc["cpu_s"], "code_hash": doc["code_hash"], "error": doc["error"]}


def _counts(records: list) -> dict[str, int]:
    return {v: sum(r.verdict == v for r in records) for v in VERDICTS}


def _key_metrics(rec) -> str:
    """The metrics the rule reads (else the first few), each with the paper's value if known."""
    names = rule_metric_names(rec.rule) or list(rec.metrics)[:4]
    theirs = rec.paper_reference.get("numbers", {})
    parts = []
    for name in names:
        if name in rec.metrics:
            paper = f" [paper {_fmt(theirs[name])}]" if name in theirs else ""
            parts.append(f"{name}={_fmt(rec.metrics[name])}{paper}")
    return ", ".join(parts)


def _print_summary(records: list, scale: Scale, heads: dict) -> None:
    """One line per claim (fits 80 columns): paper.claim, what happened, the rule's numbers,
    time; then the reference verdicts of the papers run.

    At smoke a claim *ran* or raised: its rule's verdict at a one-seed plumbing size is not
    evidence and is not shown as one (``iclr24 show`` has the numbers)."""
    from iclr24.headline import summary_line

    counts = _counts(records)
    if scale is Scale.SMOKE:
        out.print("Smoke checks (does each claim run here? not evidence):", highlight=False)
    else:
        out.print(f"Results at {scale.value}: " + " · ".join(
            f"[{VERDICT_STYLE[v]}]{n} {v}[/]" for v, n in counts.items()), highlight=False)
    width = max(40, min(out.width, 100))
    for rec in records:
        name = f"{rec.paper}.{rec.claim}"
        measured = _key_metrics(rec)
        word = rec.verdict if scale is not Scale.SMOKE or rec.verdict == "error" else "ran"
        if rec.verdict == "error":
            measured = rec.error.strip().splitlines()[-1] if rec.error else ""
        elif rec.verdict == "inconclusive" and scale is not Scale.SMOKE:
            measured = f"{rec.reason}; {measured}"
        head = f"{name} {word}"
        tail = f" {rec.duration_s:.1f}s"
        room = width - len(head) - len(tail) - 2
        if len(measured) > room:
            measured = measured[:max(0, room - 1)] + "…"
        style = VERDICT_STYLE.get(word, "default")
        out.print(f"{name} [{style}]{word}[/] {measured}{tail}", highlight=False,
                  markup=True, soft_wrap=True)
    ran = len(records) - counts["error"]
    smoke = (f"{ran}/{len(records)} claims ran at smoke here"
             + (f" ([red]{counts['error']} error[/])" if counts["error"] else "") + "; "
             if scale is Scale.SMOKE else "")
    out.print(f"{smoke}{summary_line(heads)} ({len(heads)} claims of the papers run)",
              highlight=False, soft_wrap=True)
    out.print("(all metrics: iclr24 show SLUG; the report: iclr24 report)", style="dim")


def _publish(records: list) -> None:
    """Write records as reference results (exit 2 with the reason if one must not be), then
    refresh the README's paper table when publishing into this checkout's own results."""
    from iclr24 import published
    from iclr24.provenance import code_hash

    papers = {p.slug: p for p in registry.papers()}
    slugs = sorted({r.paper for r in records})
    try:
        paths = published.publish(records, {s: code_hash(papers[s].package_dir) for s in slugs},
                                  {s: list(papers[s].claim_names) for s in slugs})
    except (published.PublishError, published.ResultsFormatError) as exc:
        raise _usage_error(f"nothing published: {exc}") from None
    for rec in records:
        out.print(f"published {rec.paper}.{rec.claim} at {rec.scale}: {rec.verdict}",
                  highlight=False)
    for path in paths:
        out.print(f"wrote {path}", highlight=False)
    readme = _refresh_readme()
    if readme is not None:
        out.print(f"updated the paper table of {readme}", highlight=False)


def _refresh_readme(path: Path | None = None) -> Path | None:
    """Rewrite the README's paper table from the reference results (only for a checkout
    publishing into its own results folder, or for an explicit ``path``)."""
    from iclr24 import published
    from iclr24.report.readme import readme_path, update_readme

    if path is None:
        if published.results_dir() != published.DEFAULT_DIR:
            return None
        path = readme_path()
        if path is None:
            return None
    try:
        update_readme(path)
    except (OSError, ValueError, published.ResultsFormatError) as exc:
        raise _usage_error(f"cannot update {str(path)!r}: {exc}") from None
    return path


@app.command("publish")
def publish_command(
    slugs: Annotated[list[str], typer.Argument(help="Paper slugs, or `all`.")],
    scale: Annotated[Scale, typer.Option("--scale", help="small or full.")] = Scale.SMALL,
    claim: Annotated[list[str] | None, typer.Option(
        "--claim", help="Only this claim (repeatable).")] = None,
    store: StoreOpt = None,
) -> None:
    """Publish the newest stored result of each selected claim at SCALE as the repository's
    reference result (refused for smoke, errors, and results whose code changed since)."""
    if scale is Scale.SMOKE:
        raise _usage_error("smoke is a plumbing check, not evidence; publish small or full")
    tasks = _plan(slugs, claim or [], scale)
    result_store = _open_store(store, create=False)
    newest = {(r.paper, r.claim): r for r in (result_store.records(scale=scale.value)
                                             if result_store is not None else [])}
    missing = [f"{p.slug}.{n}" for p, n in tasks if (p.slug, n) not in newest]
    if missing:
        raise _usage_error(f"no {scale.value} result in the store for: {', '.join(missing)}; "
                           f"run them first (iclr24 run SLUG --scale {scale.value})")
    _publish([newest[(p.slug, n)] for p, n in tasks])


@app.command("readme")
def readme_command(
    path: Annotated[Path | None, typer.Option("--path", help="The README to update "
                                              "[default: this checkout's README.md].")] = None,
) -> None:
    """Rewrite the README's paper table from the reference results (headline per claim)."""
    from iclr24.report.readme import readme_path

    target = path or readme_path()
    if target is None:
        raise _usage_error("no README.md with the paper table's markers next to this "
                           "checkout; pass --path")
    _refresh_readme(target)
    out.print(f"updated the paper table of {target}", highlight=False)


SMOKE_CLAIM_WALL_S = 30.0
SMOKE_PAPER_CPU_S = 20.0


def _print_budget(records: list) -> None:
    """Name what breaks the smoke budget: 30 s per claim, 20 s of CPU per paper."""
    slow = [f"{r.paper}.{r.claim} {r.duration_s:.1f}s" for r in records
            if r.duration_s > SMOKE_CLAIM_WALL_S]
    cpu: dict[str, float] = {}
    for r in records:
        cpu[r.paper] = cpu.get(r.paper, 0.0) + (r.cpu_s or 0.0)
    heavy = [f"{p} {c:.1f}s" for p, c in cpu.items() if c > SMOKE_PAPER_CPU_S]
    if slow:
        err.print(f"[yellow]over the smoke budget of {SMOKE_CLAIM_WALL_S:.0f} s per claim:[/] "
                  + "; ".join(slow), highlight=False)
    if heavy:
        err.print(f"[yellow]over the smoke budget of {SMOKE_PAPER_CPU_S:.0f} s of CPU per "
                  "paper:[/] " + "; ".join(heavy), highlight=False)


def _print_slowest(records: list) -> None:
    if len(records) < 2:
        return
    parts = [f"{r.paper}.{r.claim} {r.duration_s:.1f}s"
             + (f" (CPU {r.cpu_s:.1f}s)" if r.cpu_s is not None else "") for r in records]
    err.print("slowest: " + "; ".join(parts), highlight=False)


@app.command()
def history(
    target: Annotated[str, typer.Argument(help="SLUG or SLUG.CLAIM")],
    store: StoreOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A claim's key metric and verdict across every run in the store (oldest first)."""
    from iclr24.report import history_rows

    slug, _, claim_name = target.partition(".")
    paper = _get_paper(slug)
    if claim_name and claim_name not in paper.claim_names:
        raise _usage_error(f"paper {slug!r} has no claim {claim_name!r}; its claims: "
                           f"{', '.join(paper.claim_names) or '(none)'}")
    result_store = _open_store(store, create=False)
    records = result_store.records(paper=slug, claim=claim_name or None) if result_store else []
    rows = history_rows(records)
    if as_json:
        typer.echo(json.dumps({"paper": slug, "claim": claim_name or None, "runs": rows},
                              indent=2))
        return
    if not rows:
        out.print(f"no runs of {target} in the store yet", highlight=False)
        return
    table = Table(title=f"History of {target} ({len(rows)} runs)")
    for col in ("when", "commit", "claim", "scale", "seed", "verdict", "key metric", "time"):
        table.add_column(col, overflow="fold")
    previous: dict[tuple[str, str], str] = {}
    for row in rows:
        key = (str(row["claim"]), str(row["scale"]))
        flip = key in previous and previous[key] != row["verdict"]
        previous[key] = str(row["verdict"])
        verdict = f"[{VERDICT_STYLE[str(row['verdict'])]}]{row['verdict']}[/]" + (" ↺" if flip else "")
        table.add_row(str(row["started_at"])[:16].replace("T", " "), str(row["commit"]),
                      str(row["claim"]), str(row["scale"]), str(row["seed"]), verdict,
                      f"{row['metric']}={row['value']}" if row["metric"] else "",
                      f"{row['duration_s']}s")
    out.print(table)


@app.command()
def report(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder for report.md, report.html "
                                                        "and figures/.")] = Path("runs/report"),
    store: StoreOpt = None,
) -> None:
    """Write the report site (index.html, papers/, figures/) and report.md from the store."""
    from iclr24 import published
    from iclr24.report import write_report

    result_store = _open_store(store, create=False)
    records = result_store.records() if result_store is not None else []
    try:
        reference = published.load(figures=True)
    except published.ResultsFormatError as exc:
        raise _usage_error(str(exc)) from None
    try:
        paths = write_report(records, out_dir, reference)
    except OSError as exc:
        raise _usage_error(f"cannot write the report to {str(out_dir)!r}: "
                           f"{exc.strerror or exc}") from None
    for path in paths:
        out.print(f"wrote {path}", highlight=False)


if __name__ == "__main__":
    app()


# ----------------------------------------------------------------------------- compress
# The "Language Modeling Is Compression" coder on a user's own file (paper lm_compression).

ModelOpt = Annotated[str, typer.Option(
    "--model", help="Predictor: ngram (order-3 n-gram fitted on CPython's bundled docs), "
                    "smollm2 (SmolLM2-135M-Instruct), smollm2-int8 (its int8 "
                    "dynamic-quantised copy: ~2.5x faster, ~10% larger output) or a local "
                    "Hugging Face checkpoint folder.")]


@app.command("compress")
def compress_command(
    file: Annotated[Path, typer.Argument(help="File to compress.", exists=True, dir_okay=False)],
    model: ModelOpt = "ngram",
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Output file "
                                                   "[default: FILE.lmc].")] = None,
    chunk_size: Annotated[int | None, typer.Option(
        "--chunk-size", min=4, help="Bytes per independently modelled chunk (the paper: 2048). "
        "Default: the model's own layout (the n-gram codes lanes that share one set of "
        "counts; a transformer, chunks of its context).")] = None,
    check: Annotated[bool, typer.Option("--check", help="Decompress again and verify the "
                                                        "round trip is exact.")] = False,
) -> None:
    """Compress FILE with a language model + range coding; print the rate beside gzip/xz/zstd."""
    from iclr24.papers.lm_compression.command_line import compress_file

    try:
        compress_file(file, model, output, chunk_size=chunk_size, check=check, console=out)
    except (ValueError, RuntimeError) as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(1) from None


@app.command("decompress")
def decompress_command(
    file: Annotated[Path, typer.Argument(help="A .lmc file written by `iclr24 compress`.",
                                         exists=True, dir_okay=False)],
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Output file "
                                                   "[default: FILE without .lmc].")] = None,
    model: Annotated[str | None, typer.Option(
        "--model", help="Model to expect (default: the one recorded in the file).")] = None,
) -> None:
    """Decompress a file written by `iclr24 compress` (same model, rebuilt offline)."""
    from iclr24.papers.lm_compression.command_line import decompress_file

    try:
        decompress_file(file, output, model_spec=model, console=out)
    except ValueError as exc:
        err.print(f"[red]error:[/] {exc}", highlight=False)
        raise typer.Exit(1) from None
