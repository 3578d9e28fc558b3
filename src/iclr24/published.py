"""Reference results: the project's evidence, kept in the repository as text.

``iclr24/results/<slug>.jsonl`` holds one JSON line per claim and scale: the record of a run at
``small`` or ``full`` on an idle machine, with its provenance (git commit, the content hash of the
code it depends on, machine, versions, wall and CPU seconds, date). Its figure, if any, is
``iclr24/results/figures/<slug>__<claim>__<scale>.png``. The files ship inside the package, so an
installed copy shows the same evidence as a checkout; ``$ICLR24_RESULTS`` points elsewhere (tests,
a fork's own reference machine).

Written only by an explicit command (``iclr24 run ... --publish`` or ``iclr24 publish``), which
replaces the line of the same claim and scale and keeps the rest; a diff of the file is a
review of the evidence. Smoke results are never published (smoke is a plumbing check), nor
errors, nor a record whose code changed since it ran. Reading a malformed line, or a file in a
newer format, raises :class:`ResultsFormatError` naming the file and line: nothing is skipped.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from iclr24.claims import Estimate, Scale
from iclr24.store import VERDICTS, Record, json_safe

FORMAT = 1
ENV_VAR = "ICLR24_RESULTS"
DEFAULT_DIR = Path(__file__).resolve().parent / "results"
PUBLISHABLE_SCALES = (Scale.SMALL.value, Scale.FULL.value)

_REQUIRED = ("format", "paper", "claim", "scale", "seed", "verdict", "reason", "rule",
             "control", "metrics", "paper_reference", "duration_s", "cpu_s", "started_at",
             "git_commit", "code_hash", "environment")


class ResultsFormatError(ValueError):
    """A results file that cannot be read as this version writes them (named with its line)."""


class PublishError(ValueError):
    """A record that must not become a reference result (smoke, error, stale, no provenance)."""


def results_dir() -> Path:
    """``$ICLR24_RESULTS`` if set, else the package's ``results`` folder."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else DEFAULT_DIR


def figure_name(paper: str, claim: str, scale: str) -> str:
    return f"{paper}__{claim}__{scale}.png"


def _metric_doc(value: float | Estimate) -> Any:
    def finite(x: float) -> float | None:
        return x if math.isfinite(x) else None

    if isinstance(value, Estimate):
        return {"value": finite(value.value), "low": finite(value.low),
                "high": finite(value.high), "n": value.n, "confidence": value.confidence,
                "method": value.method}
    return finite(float(value))


def _metric_value(name: str, doc: Any, where: str) -> float | Estimate:
    if doc is None:
        return math.nan
    if isinstance(doc, bool):
        raise ResultsFormatError(f"{where}: metric {name!r} must be a number, got {doc!r}")
    if isinstance(doc, (int, float)):
        return float(doc)
    if isinstance(doc, Mapping) and "n" in doc:
        try:
            return Estimate.from_dict(doc)
        except (TypeError, ValueError, KeyError) as exc:
            raise ResultsFormatError(f"{where}: metric {name!r} is not a valid estimate "
                                     f"({exc})") from None
    raise ResultsFormatError(f"{where}: metric {name!r} must be a number, null or an estimate "
                             f"object, got {doc!r}")


def record_to_line(record: Record, figure: str | None) -> dict[str, Any]:
    """The JSON object one results line holds (provenance included, no figure bytes)."""
    return {
        "format": FORMAT,
        "paper": record.paper, "claim": record.claim, "scale": record.scale,
        "seed": record.seed,
        "n_seeds": max((v.n for v in record.metrics.values() if isinstance(v, Estimate)),
                       default=1),  # the largest interval's replicates (seeds from `seed` on)
        "verdict": record.verdict, "reason": record.reason,
        "rule": record.rule, "control": record.control,
        "metrics": {k: _metric_doc(v) for k, v in record.metrics.items()},
        "paper_reference": json_safe(record.paper_reference), "notes": record.notes,
        "tables": json_safe(record.tables),
        "duration_s": round(float(record.duration_s), 3),
        "cpu_s": None if record.cpu_s is None else round(float(record.cpu_s), 3),
        "started_at": record.started_at,
        "published_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "git_commit": record.git_commit, "code_hash": record.code_hash,
        "package_version": record.package_version, "environment": json_safe(record.environment),
        "figure": figure,
    }


def line_to_record(doc: Any, where: str, directory: Path | None = None,
                   *, figures: bool = False) -> Record:
    """A results line back into a :class:`Record` (``source="reference"``); ``where`` names
    the file and line in errors. ``figures=True`` reads the figure's PNG too."""
    if not isinstance(doc, Mapping):
        raise ResultsFormatError(f"{where}: a line must be a JSON object, got "
                                 f"{type(doc).__name__}")
    version = doc.get("format")
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT:
        raise ResultsFormatError(f"{where}: written in results format {version}, newer than "
                                 f"this iclr24 reads ({FORMAT}); upgrade iclr24")
    if version != FORMAT:
        raise ResultsFormatError(f"{where}: 'format' must be {FORMAT}, got {version!r}")
    missing = [k for k in _REQUIRED if k not in doc]
    if missing:
        raise ResultsFormatError(f"{where}: missing field(s) {', '.join(missing)}")
    if doc["verdict"] not in VERDICTS or doc["verdict"] == "error":
        raise ResultsFormatError(f"{where}: verdict must be holds, fails or inconclusive, got "
                                 f"{doc['verdict']!r}")
    if doc["scale"] not in PUBLISHABLE_SCALES:
        raise ResultsFormatError(f"{where}: scale must be one of {PUBLISHABLE_SCALES}, got "
                                 f"{doc['scale']!r}")
    for key in ("paper", "claim", "reason", "rule", "control", "started_at", "git_commit",
                "code_hash"):
        if not isinstance(doc[key], str):
            raise ResultsFormatError(f"{where}: {key!r} must be a string, got {doc[key]!r}")
    if not doc["code_hash"]:
        raise ResultsFormatError(f"{where}: 'code_hash' must not be empty")
    if not isinstance(doc["metrics"], Mapping):
        raise ResultsFormatError(f"{where}: 'metrics' must be an object")
    try:
        seed = int(doc["seed"])
        duration = float(doc["duration_s"])
        cpu = None if doc["cpu_s"] is None else float(doc["cpu_s"])
    except (TypeError, ValueError):
        raise ResultsFormatError(f"{where}: 'seed', 'duration_s' and 'cpu_s' must be "
                                 "numbers") from None
    png = None
    if figures and doc.get("figure") and directory is not None:
        path = directory / "figures" / str(doc["figure"])
        if not path.is_file():
            raise ResultsFormatError(f"{where}: its figure {str(path)!r} is missing")
        png = path.read_bytes()
    return Record(
        paper=doc["paper"], claim=doc["claim"], scale=doc["scale"], seed=seed,
        verdict=doc["verdict"], reason=doc["reason"], rule=doc["rule"], control=doc["control"],
        metrics={str(k): _metric_value(str(k), v, where) for k, v in doc["metrics"].items()},
        paper_reference=dict(doc["paper_reference"]), notes=str(doc.get("notes", "")),
        tables=dict(doc.get("tables") or {}), duration_s=duration, cpu_s=cpu,
        started_at=doc["started_at"], git_commit=doc["git_commit"], code_hash=doc["code_hash"],
        package_version=str(doc.get("package_version", "")),
        environment=dict(doc["environment"]), figure_png=png, source="reference")


def read_file(path: Path, *, figures: bool = False) -> list[Record]:
    """Every record of one ``<slug>.jsonl`` (blank lines aside), in file order."""
    path = Path(path)
    records: list[Record] = []
    keys: set[tuple[str, str]] = set()
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsFormatError(f"{path}: cannot be read ({exc})") from None
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ResultsFormatError(f"{where}: not valid JSON ({exc.msg} at column "
                                     f"{exc.colno})") from None
        rec = line_to_record(doc, where, path.parent, figures=figures)
        if rec.paper != path.stem:
            raise ResultsFormatError(f"{where}: a result of paper {rec.paper!r} in the file of "
                                     f"{path.stem!r}")
        if (rec.claim, rec.scale) in keys:
            raise ResultsFormatError(f"{where}: a second line for {rec.claim} at {rec.scale}")
        keys.add((rec.claim, rec.scale))
        records.append(rec)
    return records


def load(directory: Path | None = None, *, papers: Iterable[str] | None = None,
         figures: bool = False) -> list[Record]:
    """Every reference result in ``directory`` (default :func:`results_dir`), or of the named
    papers only; a missing folder holds none."""
    directory = Path(directory) if directory is not None else results_dir()
    if not directory.is_dir():
        return []
    wanted = None if papers is None else set(papers)
    out: list[Record] = []
    for path in sorted(directory.glob("*.jsonl")):
        if wanted is None or path.stem in wanted:
            out.extend(read_file(path, figures=figures))
    return out


def check_publishable(record: Record, current_hash: str) -> None:
    """Refuse (:class:`PublishError`) what must not become a reference result."""
    name = f"{record.paper}.{record.claim} at {record.scale}"
    if record.scale not in PUBLISHABLE_SCALES:
        raise PublishError(f"{name}: smoke is a plumbing check, not evidence; publish a small "
                           "or full run")
    if record.verdict == "error":
        raise PublishError(f"{name}: the run raised; an error is not a result to publish")
    if not record.code_hash:
        raise PublishError(f"{name}: the record has no code hash (made by an older iclr24); "
                           "run it again")
    if record.code_hash != current_hash:
        raise PublishError(f"{name}: the code changed since this record ran (hash "
                           f"{record.code_hash}, now {current_hash}); run it again")


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is for secrets; these are the project's files
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def publish(records: Sequence[Record], current_hashes: Mapping[str, str],
            claim_order: Mapping[str, Sequence[str]], directory: Path | None = None
            ) -> list[Path]:
    """Write ``records`` as reference results, replacing the line of the same claim and scale.

    ``current_hashes``: paper -> the code hash of its source now (every record must match it);
    ``claim_order``: paper -> its claim names, the order of the lines. Every record is checked
    before anything is written; each file is replaced atomically. Returns the files written."""
    directory = Path(directory) if directory is not None else results_dir()
    for rec in records:
        if rec.paper not in current_hashes:
            raise PublishError(f"{rec.paper}.{rec.claim}: unknown paper {rec.paper!r}")
        check_publishable(rec, current_hashes[rec.paper])
    (directory / "figures").mkdir(parents=True, exist_ok=True)
    written = []
    for paper in dict.fromkeys(r.paper for r in records):
        path = directory / f"{paper}.jsonl"
        lines: dict[tuple[str, str], dict[str, Any]] = {}
        if path.exists():
            read_file(path)  # a malformed file is reported, never silently overwritten
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():  # the other lines are kept verbatim
                    doc = json.loads(line)
                    lines[(doc["claim"], doc["scale"])] = doc
        for rec in (r for r in records if r.paper == paper):
            figure = None
            if rec.figure_png:
                figure = figure_name(rec.paper, rec.claim, rec.scale)
                _atomic_write(directory / "figures" / figure, rec.figure_png)
            lines[(rec.claim, rec.scale)] = record_to_line(rec, figure)
        order = {name: i for i, name in enumerate(claim_order.get(paper, ()))}
        scale_rank = {s: i for i, s in enumerate(PUBLISHABLE_SCALES)}
        keys = sorted(lines, key=lambda k: (order.get(k[0], len(order)), k[0], scale_rank[k[1]]))
        body = "".join(json.dumps(lines[k], ensure_ascii=False, allow_nan=False) + "\n"
                       for k in keys)
        _atomic_write(path, body.encode("utf-8"))
        written.append(path)
    return written
