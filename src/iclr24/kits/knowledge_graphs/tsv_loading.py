"""Reading label triples from TSV files and pandas DataFrames, with errors that point at the row.

The TSV format is the one of the classic KG benchmarks (and of the files that ship inside the
pykeen wheel): one fact per line, ``head<TAB>relation<TAB>tail``, labels free text without tabs.
Blank lines are skipped. A line with another number of fields, or with an empty field, raises
``ValueError("path:LINE: ...")`` quoting the line.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import Any

__all__ = ["read_triples_tsv", "triples_from_dataframe"]


def read_triples_tsv(path: str | PathLike) -> list[tuple[str, str, str]]:
    """Label triples of a ``head<TAB>relation<TAB>tail`` file, in file order.

    Raises ``FileNotFoundError`` for a missing file and ``ValueError`` naming the file and
    1-based line number of the first malformed row.
    """
    if not isinstance(path, (str, PathLike)):
        raise TypeError(f"path must be a str or os.PathLike, got {type(path).__name__}")
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"triples file not found: {p}")
    out: list[tuple[str, str, str]] = []
    with p.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, start=1):
            line = raw.rstrip("\r\n")
            if not line.strip():
                continue
            fields = line.split("\t")
            if len(fields) != 3:
                raise ValueError(f"{p}:{lineno}: expected 3 tab-separated fields (head, relation, "
                                 f"tail), got {len(fields)}: {line!r}")
            fields = [f.strip() for f in fields]
            if any(not f for f in fields):
                which = ("head", "relation", "tail")[[bool(f) for f in fields].index(False)]
                raise ValueError(f"{p}:{lineno}: empty {which} field: {line!r}")
            out.append((fields[0], fields[1], fields[2]))
    return out


def triples_from_dataframe(df: Any, *, columns: Sequence[str] = ("head", "relation", "tail"),
                           what: str = "df") -> list[tuple[str, str, str]]:
    """Label triples from a pandas DataFrame with head/relation/tail columns.

    Labels are converted with ``str``; a missing value (NaN/None) or an empty label raises
    ``ValueError`` naming the row's index label.
    """
    import pandas as pd

    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{what} must be a pandas DataFrame, got {type(df).__name__}")
    cols = list(columns)
    if len(cols) != 3:
        raise ValueError(f"columns must name 3 columns (head, relation, tail); got {cols}")
    missing = [c for c in cols if c not in df.columns]
    if missing:
        raise ValueError(f"{what} lacks column(s) {missing}; has {list(df.columns)}")
    sub = df[cols]
    out: list[tuple[str, str, str]] = []
    for index, row in zip(sub.index, sub.itertuples(index=False, name=None)):
        labels = []
        for col, value in zip(cols, row):
            if value is None or pd.isna(value):
                raise ValueError(f"{what} row {index!r}: missing value in column {col!r}")
            text = str(value).strip()
            if not text:
                raise ValueError(f"{what} row {index!r}: empty label in column {col!r}")
            labels.append(text)
        out.append((labels[0], labels[1], labels[2]))
    return out
