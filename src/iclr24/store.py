"""The results store: every claim execution as one row of an embedded SQLite database.

Default path ``./runs/results.sqlite``; overridden by ``--store PATH`` or ``ICLR24_STORE``.

Durability: WAL journal, ``synchronous=FULL``, a generous busy timeout, and one transaction
per record, so an interrupted run keeps every record it had finished and two ``iclr24 run``
processes can write at once. The schema is versioned in ``PRAGMA user_version``; opening a
store written by a newer schema is refused rather than misread.
"""

from __future__ import annotations

import json
import math
import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

SCHEMA_VERSION = 1
DEFAULT_PATH = Path("runs") / "results.sqlite"
ENV_VAR = "ICLR24_STORE"

VERDICTS = ("holds", "fails", "error")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS results (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    paper           TEXT NOT NULL,
    claim           TEXT NOT NULL,
    scale           TEXT NOT NULL,
    seed            INTEGER NOT NULL,
    verdict         TEXT NOT NULL CHECK (verdict IN ('holds', 'fails', 'error')),
    metrics         TEXT NOT NULL,          -- JSON object name -> number (NaN/inf kept as null)
    rule            TEXT NOT NULL,
    paper_reference TEXT NOT NULL,          -- JSON {"text": ..., "numbers": {...}}
    tables          TEXT NOT NULL,          -- JSON {name: [row, ...]}
    notes           TEXT NOT NULL,
    error           TEXT NOT NULL,          -- traceback when verdict = 'error'
    figure_png      BLOB,
    duration_s      REAL NOT NULL,
    started_at      TEXT NOT NULL,          -- ISO 8601, UTC
    package_version TEXT NOT NULL,
    git_commit      TEXT NOT NULL,
    environment     TEXT NOT NULL           -- JSON {"python": ..., "torch": ..., "jax": ..., ...}
);
CREATE INDEX IF NOT EXISTS results_by_claim ON results (paper, claim, scale, id);
"""


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
    metrics: dict[str, float]
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
    id: int | None = None

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
            "metrics": {k: _finite_or_none(v) for k, v in self.metrics.items()},
            "rule": self.rule,
            "paper_reference": self.paper_reference,
            "duration_s": round(self.duration_s, 3),
            "started_at": self.started_at,
            "notes": self.notes,
            "error": self.error,
            "tables": self.tables,
            "git_commit": self.git_commit,
            "package_version": self.package_version,
            "environment": self.environment,
        }


def _finite_or_none(value: float) -> float | None:
    return value if isinstance(value, (int, float)) and math.isfinite(value) else None


def _dumps(obj: Any) -> str:
    def clean(x: Any) -> Any:
        if isinstance(x, float) and not math.isfinite(x):
            return None
        if isinstance(x, Mapping):
            return {str(k): clean(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [clean(v) for v in x]
        if isinstance(x, (str, int, float, bool)) or x is None:
            return x
        if hasattr(x, "item"):  # numpy / torch scalars
            return clean(x.item())
        return str(x)

    return json.dumps(clean(obj), allow_nan=False)  # keeps the order the claim measured in


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
        with self._connect() as conn:
            self._migrate(conn)

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
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise StoreError(f"store {str(self.path)!r} has schema version {version}, newer than "
                             f"this iclr24 understands ({SCHEMA_VERSION}); upgrade iclr24")
        if version < SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def add(self, record: Record) -> int:
        """Write one record in its own transaction; returns its id."""
        row = (
            record.paper, record.claim, record.scale, int(record.seed), record.verdict,
            _dumps(record.metrics), record.rule, _dumps(record.paper_reference),
            _dumps(record.tables), record.notes, record.error, record.figure_png,
            float(record.duration_s), record.started_at, record.package_version,
            record.git_commit, _dumps(record.environment),
        )
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                cur = conn.execute(
                    "INSERT INTO results (paper, claim, scale, seed, verdict, metrics, rule, "
                    "paper_reference, tables, notes, error, figure_png, duration_s, started_at, "
                    "package_version, git_commit, environment) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            record.id = int(cur.lastrowid)
            return record.id

    def records(self, paper: str | None = None, claim: str | None = None,
                scale: str | None = None) -> list[Record]:
        """All records (oldest first), optionally filtered."""
        where, args = [], []
        for column, value in (("paper", paper), ("claim", claim), ("scale", scale)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        sql = "SELECT * FROM results"
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
    metrics = {k: (float("nan") if v is None else float(v))
               for k, v in json.loads(row["metrics"]).items()}
    return Record(
        id=row["id"], paper=row["paper"], claim=row["claim"], scale=row["scale"],
        seed=row["seed"], verdict=row["verdict"], metrics=metrics, rule=row["rule"],
        paper_reference=json.loads(row["paper_reference"]), tables=json.loads(row["tables"]),
        notes=row["notes"], error=row["error"], figure_png=row["figure_png"],
        duration_s=row["duration_s"], started_at=row["started_at"],
        package_version=row["package_version"], git_commit=row["git_commit"],
        environment=json.loads(row["environment"]),
    )
