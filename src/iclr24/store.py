"""The results store: every claim execution as one row of an embedded SQLite database.

Default path ``./runs/results.sqlite``; overridden by ``--store PATH`` or ``ICLR24_STORE``.

Durability: WAL journal, ``synchronous=FULL``, a generous busy timeout, and one transaction
per record, so an interrupted run keeps every record it had finished and two ``iclr24 run``
processes can write at once. The schema is versioned in ``PRAGMA user_version``; opening a
store written by a newer schema is refused rather than misread, and an older one is upgraded in
place, in one transaction that keeps every row.

Schema history:
1. the first release: verdicts holds/fails/error, metrics as numbers.
2. verdict ``inconclusive``; ``estimates`` (JSON name -> {value, low, high, n, confidence,
   method}) beside ``metrics`` (which keeps each estimate's point value, so plain SQL still reads
   one number per metric); ``cpu_s``, the CPU seconds the claim's process and the child
   processes it waited for used (NULL for rows migrated from version 1).
3. ``reason`` (why a verdict is what it is; never empty for *inconclusive*), ``control`` (the
   claim's test-bed control at that scale, '' when none) and ``code_hash`` (the content hash of
   the code the result depends on, :func:`iclr24.provenance.code_hash`; '' for rows migrated
   from older versions, which therefore read as stale).
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iclr24.claims import Estimate

SCHEMA_VERSION = 3
DEFAULT_PATH = Path("runs") / "results.sqlite"
ENV_VAR = "ICLR24_STORE"

VERDICTS = ("holds", "fails", "inconclusive", "error")

_TABLE = """
CREATE TABLE {name} (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    paper           TEXT NOT NULL,
    claim           TEXT NOT NULL,
    scale           TEXT NOT NULL,
    seed            INTEGER NOT NULL,
    verdict         TEXT NOT NULL
                    CHECK (verdict IN ('holds', 'fails', 'inconclusive', 'error')),
    metrics         TEXT NOT NULL,          -- JSON object name -> number (NaN/inf kept as null)
    estimates       TEXT NOT NULL DEFAULT '{{}}',  -- JSON name -> {{value, low, high, n, ...}}
    rule            TEXT NOT NULL,
    paper_reference TEXT NOT NULL,          -- JSON {{"text": ..., "numbers": {{...}}}}
    tables          TEXT NOT NULL,          -- JSON {{name: [row, ...]}}
    notes           TEXT NOT NULL,
    error           TEXT NOT NULL,          -- traceback when verdict = 'error'
    figure_png      BLOB,
    duration_s      REAL NOT NULL,
    cpu_s           REAL,                   -- CPU seconds of the claim's process (NULL: unknown)
    started_at      TEXT NOT NULL,          -- ISO 8601, UTC
    package_version TEXT NOT NULL,
    git_commit      TEXT NOT NULL,
    environment     TEXT NOT NULL,          -- JSON {{"python": ..., "torch": ..., ...}}
    reason          TEXT NOT NULL DEFAULT '',
    control         TEXT NOT NULL DEFAULT '',
    code_hash       TEXT NOT NULL DEFAULT ''
)"""
_INDEX = "CREATE INDEX IF NOT EXISTS results_by_claim ON results (paper, claim, scale, id)"
_V1_COLUMNS = ("id, paper, claim, scale, seed, verdict, metrics, rule, paper_reference, tables, "
               "notes, error, figure_png, duration_s, started_at, package_version, git_commit, "
               "environment")


class StoreError(RuntimeError):
    """The store cannot be opened or written (bad path, permissions, newer schema)."""


@dataclass
class Record:
    """One claim execution, as stored."""

    paper: str
    claim: str
    scale: str
    seed: int
    verdict: str
    metrics: dict[str, float | Estimate]
    rule: str
    paper_reference: dict[str, Any]
    duration_s: float
    started_at: str
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: str = ""
    error: str = ""
    figure_png: bytes | None = None
    package_version: str = ""
    git_commit: str = ""
    environment: dict[str, str] = field(default_factory=dict)
    cpu_s: float | None = None
    reason: str = ""
    control: str = ""
    code_hash: str = ""
    id: int | None = None
    source: str = "local"  # "local": this store; "reference": the repository's results folder

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {self.verdict!r}")

    def to_json(self) -> dict[str, Any]:
        """The JSON shape the CLI prints (no figure bytes)."""
        return {
            "paper": self.paper,
            "claim": self.claim,
            "scale": self.scale,
            "seed": self.seed,
            "verdict": self.verdict,
            "reason": self.reason,
            "metrics": {k: _metric_json(v) for k, v in self.metrics.items()},
            "rule": self.rule,
            "control": self.control,
            "paper_reference": self.paper_reference,
            "duration_s": round(self.duration_s, 3),
            "cpu_s": None if self.cpu_s is None else round(self.cpu_s, 3),
            "started_at": self.started_at,
            "notes": self.notes,
            "error": self.error,
            "tables": self.tables,
            "git_commit": self.git_commit,
            "package_version": self.package_version,
            "environment": self.environment,
            "code_hash": self.code_hash,
            "source": self.source,
        }


def _finite_or_none(value: float) -> float | None:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _metric_json(value: float | Estimate) -> Any:
    """A number as itself (None for NaN/inf); an estimate as {value, low, high, n, ...}."""
    if isinstance(value, Estimate):
        return {k: (_finite_or_none(v) if isinstance(v, float) else v)
                for k, v in value.to_dict().items()}
    return _finite_or_none(value)


def _point(value: float | Estimate) -> float:
    return value.value if isinstance(value, Estimate) else value


def json_safe(x: Any) -> Any:
    """``x`` as plain JSON values: NaN/inf -> None, numpy/torch scalars -> numbers, tuples ->
    lists, anything else -> its string."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, Mapping):
        return {str(k): json_safe(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [json_safe(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    if hasattr(x, "item"):  # numpy / torch scalars
        return json_safe(x.item())
    return str(x)


def _dumps(obj: Any) -> str:
    return json.dumps(json_safe(obj), allow_nan=False)  # keeps the order the claim measured in


def default_path() -> Path:
    """``$ICLR24_STORE`` if set, else ``./runs/results.sqlite``."""
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else DEFAULT_PATH


class ResultStore:
    """A handle on the SQLite results file. Cheap to create; opens a connection per call."""

    def __init__(self, path: str | os.PathLike[str] | None = None):
        self.path = Path(path) if path is not None else default_path()
        if self.path.exists() and self.path.is_dir():
            raise StoreError(f"store path {str(self.path)!r} is a directory; expected a file path")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the store's folder {str(self.path.parent)!r}: "
                             f"{exc.strerror or exc}") from None
        deadline = time.monotonic() + 60.0
        while True:  # two processes creating one store race for the journal-mode switch
            try:
                with self._connect() as conn:
                    self._migrate(conn)
                break
            except StoreError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        try:
            conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open the results store {str(self.path)!r}: {exc}") from None
        with closing(conn):
            try:
                conn.execute("PRAGMA busy_timeout = 60000")
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = FULL")
                yield conn
            except sqlite3.OperationalError as exc:
                raise StoreError(f"results store {str(self.path)!r}: {exc}") from None

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Create the schema, or upgrade an older one in place (one transaction, every row kept).

        Version 1 rebuilds the table, because SQLite cannot widen a CHECK constraint: the new
        table is filled from the old one, the old one dropped and the new one renamed, all
        inside the same transaction, so an interruption leaves the version-1 store untouched.
        Version 2 gains three columns with defaults (``ALTER TABLE ... ADD COLUMN``).
        """
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"store {str(self.path)!r} has schema version {version}, newer "
                             f"than this iclr24 understands ({SCHEMA_VERSION}); upgrade iclr24")
        if version == SCHEMA_VERSION:
            return  # the common case takes no write lock: concurrent openers do not queue
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]  # another process
            has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND "
                                     "name = 'results'").fetchone() is not None
            if version < SCHEMA_VERSION and not has_table:
                conn.execute(_TABLE.format(name="results"))
            elif version == 1:
                conn.execute(_TABLE.format(name="results_v3"))
                conn.execute(f"INSERT INTO results_v3 ({_V1_COLUMNS}) "
                             f"SELECT {_V1_COLUMNS} FROM results")
                conn.execute("DROP TABLE results")
                conn.execute("ALTER TABLE results_v3 RENAME TO results")
            elif version == 2:  # new columns with defaults: SQLite adds them in place
                for column in ("reason", "control", "code_hash"):
                    conn.execute(f"ALTER TABLE results ADD COLUMN {column} TEXT NOT NULL "
                                 "DEFAULT ''")
            if version < SCHEMA_VERSION:
                conn.execute(_INDEX)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def add(self, record: Record) -> int:
        """Write one record in its own transaction; returns its id."""
        estimates = {k: v.to_dict() for k, v in record.metrics.items()
                     if isinstance(v, Estimate)}
        row = (
            record.paper, record.claim, record.scale, int(record.seed), record.verdict,
            _dumps({k: _point(v) for k, v in record.metrics.items()}), _dumps(estimates),
            record.rule, _dumps(record.paper_reference), _dumps(record.tables), record.notes,
            record.error, record.figure_png, float(record.duration_s),
            None if record.cpu_s is None else float(record.cpu_s), record.started_at,
            record.package_version, record.git_commit, _dumps(record.environment),
            record.reason, record.control, record.code_hash,
        )
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                cur = conn.execute(
                    "INSERT INTO results (paper, claim, scale, seed, verdict, metrics, estimates, "
                    "rule, paper_reference, tables, notes, error, figure_png, duration_s, cpu_s, "
                    "started_at, package_version, git_commit, environment, reason, control, "
                    "code_hash) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                    "?, ?, ?)", row)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            record.id = int(cur.lastrowid)
            return record.id

    def records(self, paper: str | None = None, claim: str | None = None,
                scale: str | None = None, *, figures: bool = True) -> list[Record]:
        """All records (oldest first), optionally filtered; ``figures=False`` leaves the PNG
        bytes unread (listings)."""
        where, args = [], []
        for column, value in (("paper", paper), ("claim", claim), ("scale", scale)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = "SELECT *" + ("" if figures else ", NULL AS figure_png") + " FROM results"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id"
        with self._connect() as conn:
            conn.row_factory = sqlite3.Row
            rows = conn.execute(sql, args).fetchall()
        return [_record_from_row(r) for r in rows]

    def latest(self, paper: str | None = None) -> list[Record]:
        """The newest record of every (paper, claim, scale), in insertion order."""
        newest: dict[tuple[str, str, str], Record] = {}
        for rec in self.records(paper=paper):
            newest[(rec.paper, rec.claim, rec.scale)] = rec
        return sorted(newest.values(), key=lambda r: r.id or 0)

    def integrity_ok(self) -> bool:
        with self._connect() as conn:
            return conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def _record_from_row(row: sqlite3.Row) -> Record:
    estimates = json.loads(row["estimates"])
    metrics: dict[str, float | Estimate] = {}
    for k, v in json.loads(row["metrics"]).items():
        metrics[k] = (Estimate.from_dict(estimates[k]) if k in estimates
                      else float("nan") if v is None else float(v))
    return Record(
        id=row["id"], paper=row["paper"], claim=row["claim"], scale=row["scale"],
        seed=row["seed"], verdict=row["verdict"], metrics=metrics, rule=row["rule"],
        paper_reference=json.loads(row["paper_reference"]), tables=json.loads(row["tables"]),
        notes=row["notes"], error=row["error"], figure_png=row["figure_png"],
        duration_s=row["duration_s"], cpu_s=row["cpu_s"], started_at=row["started_at"],
        package_version=row["package_version"], git_commit=row["git_commit"],
        environment=json.loads(row["environment"]), reason=row["reason"],
        control=row["control"], code_hash=row["code_hash"],
    )
