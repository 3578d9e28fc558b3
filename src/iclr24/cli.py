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
    err.print(f"[red]error:[/] {message}", highlight=False)
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


def _latest_by_paper(store: ResultStore | None) -> dict[str, list]:
    by_paper: dict[str, list] = {}
    if store is not None:
        for rec in store.latest():
            by_paper.setdefault(rec.paper, []).append(rec)
    return by_paper


@app.command("list")
def list_papers(store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """List all 57 papers with their status, claims and latest verdicts."""
    latest = _latest_by_paper(_open_store(store, create=False))
    papers = registry.papers()
    if as_json:
        doc = {"papers": [
            {"slug": p.slug, "title": p.title, "area": p.area, "status": p.status,
             "claims": list(p.claim_names),
             "latest": [{"claim": r.claim, "scale": r.scale, "verdict": r.verdict}
                        for r in latest.get(p.slug, [])]}
            for p in papers]}
        typer.echo(json.dumps(doc, indent=2))
        return
    table = Table(title=f"iclr24: {sum(p.implemented for p in papers)} of {len(papers)} "
                        "papers implemented", show_lines=False)
    table.add_column("slug", no_wrap=True)
    table.add_column("title", overflow="fold", ratio=3)
    table.add_column("area", overflow="fold", ratio=1)
    table.add_column("status", no_wrap=True)
    table.add_column("claims", justify="right")
    table.add_column("latest verdicts", overflow="fold", ratio=2)
    for p in papers:
        verdicts = " ".join(f"[{VERDICT_STYLE[r.verdict]}]{r.claim}@{r.scale}:{r.verdict}[/]"
                            for r in latest.get(p.slug, []))
        status = "[green]implemented[/]" if p.implemented else "[dim]planned[/]"
        table.add_row(p.slug, p.title, p.area, status, str(len(p.claim_names) or ""),
                      verdicts)
    out.print(table)


def _get_paper(slug: str) -> registry.Paper:
    try:
        return registry.get(slug)
    except registry.UnknownPaperError as exc:
        raise _usage_error(str(exc)) from None


@app.command()
def show(slug: Annotated[str, typer.Argument(help="Paper slug (see `iclr24 list`).")],
         store: StoreOpt = None, as_json: JsonOpt = False) -> None:
    """Show what a paper is, its public API, and its claims with the latest results."""
    paper = _get_paper(slug)
    records = _latest_by_paper(_open_store(store, create=False)).get(slug, [])
    if as_json:
        doc = {"slug": paper.slug, "title": paper.title, "area": paper.area,
               "status": paper.status, "arxiv": paper.arxiv, "openreview": paper.openreview,
               "official_repo": paper.official_repo, "authors": list(paper.authors),
               "summary": paper.summary, "url": paper.url, "public_api": paper.public_api(),
               "claims": list(paper.claim_names), "latest": [r.to_json() for r in records]}
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
    table = Table(title="Claims (latest result per scale)")
    for col in ("claim", "scale", "verdict", "ours", "paper", "rule"):
        table.add_column(col, overflow="fold")
    shown = set()
    for rec in records:
        shown.add(rec.claim)
        ours = ", ".join(f"{k}={_fmt(v)}" for k, v in rec.metrics.items())
        theirs = ", ".join(f"{k}={_fmt(v)}" for k, v in rec.paper_reference["numbers"].items())
        table.add_row(rec.claim, rec.scale, f"[{VERDICT_STYLE[rec.verdict]}]{rec.verdict}[/]",
                      ours, theirs or rec.paper_reference["text"], rec.rule)
    for name in paper.claim_names:
        if name not in shown:
            table.add_row(name, "", "[dim]not run[/]", "", "", "")
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
    as_json: JsonOpt = False,
) -> None:
    """Run paper claims; every result is stored; exit 1 if any claim errored."""
    from iclr24.runner import run_claims

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
    if as_json:
        typer.echo(json.dumps({"results": [_result_json(r) for r in outcome.records],
                               "counts": _counts(outcome.records),
                               "interrupted": outcome.interrupted}, indent=2))
    else:
        _print_summary(outcome.records)
        _print_slowest(outcome.slowest(5))
        if scale is Scale.SMOKE:
            _print_budget(outcome.records)
        err.print(f"stored in {result_store.path}", highlight=False)
    if outcome.interrupted:
        err.print("[yellow]interrupted: finished claims were stored[/]")
        raise typer.Exit(130)
    if outcome.errored:
        raise typer.Exit(1)


def _result_json(rec) -> dict:
    doc = rec.to_json()
    return {"paper": doc["paper"], "claim": doc["claim"], "scale": doc["scale"],
            "seed": doc["seed"], "verdict": doc["verdict"], "metrics": doc["metrics"],
            "rule": doc["rule"], "paper_reference": doc["paper_reference"],
            "duration_s": doc["duration_s"], "cpu_s": doc["cpu_s"], "error": doc["error"]}


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


def _print_summary(records: list) -> None:
    """One line per claim (fits 80 columns): paper.claim, verdict, the rule's numbers, time."""
    counts = _counts(records)
    out.print("Results: " + " · ".join(f"[{VERDICT_STYLE[v]}]{n} {v}[/]"
                                       for v, n in counts.items()), highlight=False)
    width = max(40, min(out.width, 100))
    for rec in records:
        name = f"{rec.paper}.{rec.claim}"
        measured = _key_metrics(rec)
        if rec.verdict == "error":
            measured = rec.error.strip().splitlines()[-1] if rec.error else ""
        head = f"{name} {rec.verdict}"
        tail = f" {rec.duration_s:.1f}s"
        room = width - len(head) - len(tail) - 2
        if len(measured) > room:
            measured = measured[:max(0, room - 1)] + "…"
        style = VERDICT_STYLE[rec.verdict]
        out.print(f"{name} [{style}]{rec.verdict}[/] {measured}{tail}", highlight=False,
                  markup=True, soft_wrap=True)
    out.print("(all metrics: iclr24 show SLUG; the report: iclr24 report)", style="dim")


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
    from iclr24.report import write_report

    result_store = _open_store(store, create=False)
    records = result_store.records() if result_store is not None else []
    try:
        paths = write_report(records, out_dir)
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
    chunk_size: Annotated[int, typer.Option("--chunk-size", min=4, help="Bytes per "
                                            "independently modelled chunk (paper: 2048).")] = 2048,
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
