"""Tables and the atomic operations of Chain-of-Table (Wang et al., ICLR 2024, Sec. 3 and
App. A; the executors ``*_act`` of the official code google-research/chain-of-table).

A table is a :class:`pandas.DataFrame` of strings (every cell is text, as in TabFact); any
other frame is converted cell by cell on entry (:func:`as_table`), a missing value (None,
NaN, NaT, pd.NA) becoming the empty cell "". The functions here are pure: each returns a new
table and never touches its input.

- :func:`linearize`: the PIPE format of the prompts (``table caption : …``, ``col : h1 | h2``,
  ``row 1 : v1 | v2``; 1-based rows, at most ``max_rows`` of them).
- :func:`add_column` (``f_add_column``) with :func:`add_column_problem`, the official sanity
  checks that turn a hallucinated column into a skip; :func:`select_rows` (``f_select_row``,
  rows renumbered 1..k afterwards), :func:`select_columns` (``f_select_column``),
  :func:`group_summary` (``f_group_column``: it does not change the table, it returns the
  (value, count) summary that the final query shows as a separate block, rendered by
  :func:`group_block`), :func:`sort_rows` (``f_sort_column``) with :func:`numeric_key` (the
  official ``only_keep_num_and_first_dot``).

Differences from the official code, on purpose: tables are DataFrames rather than lists of
lists; ``select_rows`` takes 1-based row numbers (the official code matches the prompt's
"row k" against its list index, where the header is index 0, which is the same thing).
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

__all__ = [
    "add_column",
    "add_column_problem",
    "as_table",
    "group_block",
    "group_summary",
    "is_groupable",
    "linearize",
    "numeric_key",
    "select_columns",
    "select_rows",
    "sort_rows",
]


def _cell_text(value: object) -> str:
    """A cell as text: strings unchanged, a missing value (None, NaN, NaT, pd.NA) as the
    empty cell "" (what the official tables hold for a blank cell), anything else ``str()``."""
    if isinstance(value, str):
        return value
    if value is None or (pd.api.types.is_scalar(value) and pd.isna(value)):
        return ""
    return str(value)


def as_table(df: pd.DataFrame, name: str = "df") -> pd.DataFrame:
    """Validate ``df`` (a DataFrame with unique string column names) and return it with
    string cells and the index 0..n-1: ``df`` itself when every cell already is a string and
    the index is 0..n-1 (callers never mutate it), else a converted copy in which missing
    cells (None, NaN, NaT, pd.NA) are empty strings and other values are ``str()``-ed."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"{name} must be a pandas.DataFrame, got {type(df).__name__}")
    cols = list(df.columns)
    if not all(isinstance(c, str) for c in cols):
        raise TypeError(f"{name}'s column names must be strings, got {cols!r}")
    if len(set(cols)) != len(cols):
        raise ValueError(f"{name} has duplicate column names: {cols!r}")
    normal = isinstance(df.index, pd.RangeIndex) and df.index.start == 0 \
        and df.index.step == 1 \
        and all(pd.api.types.is_object_dtype(dt) or pd.api.types.is_string_dtype(dt)
                for dt in df.dtypes) \
        and all(isinstance(v, str) for v in df.to_numpy().ravel())
    if normal:
        return df
    # every cell, not only the first row: a NaN further down would reach " | ".join
    return pd.DataFrame({c: [_cell_text(v) for v in df[c]] for c in cols}, columns=cols,
                        dtype=object)


def linearize(df: pd.DataFrame, caption: str | None = None, max_rows: int = 100) -> str:
    """The PIPE linearisation of the paper's prompts (official ``table2string``)::

        table caption : <caption>
        col : h1 | h2
        row 1 : v1 | v2

    Only the first ``max_rows`` rows are written (the paper truncates at 100). A missing
    cell (None, NaN, NaT, pd.NA) is written as an empty cell."""
    table = as_table(df)
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or max_rows < 1:
        raise ValueError(f"max_rows must be a positive int, got {max_rows!r}")
    if caption is not None and not isinstance(caption, str):
        raise TypeError(f"caption must be a str or None, got {type(caption).__name__}")
    lines = [] if caption is None else [f"table caption : {caption}"]
    lines.append("col : " + " | ".join(table.columns))
    for i, row in enumerate(table.head(max_rows).to_numpy().tolist(), start=1):
        lines.append(f"row {i} : " + " | ".join(row))
    return "\n".join(lines)


def add_column_problem(df: pd.DataFrame, name: str, values: Sequence[str]) -> str | None:
    """Why ``f_add_column(name)`` with these ``values`` must be skipped, or None if it is
    valid. The official checks, in their order: the name starts with "number of"; all values
    are identical; a value is empty; the name already exists; the values duplicate an existing
    column; no existing column holds every value as a substring of its cell in the same row."""
    table = as_table(df)
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"name must be a non-empty string, got {name!r}")
    values = [_cell_text(v) for v in values]  # a missing value is an empty one
    if len(values) != len(table):
        raise ValueError(f"values must have one entry per row ({len(table)}), got {len(values)}")
    if name.startswith("number of"):
        return "name starts with 'number of'"
    if len(set(values)) == 1:
        return "all values are identical"
    if any(not v.strip() for v in values):
        return "an empty value"
    if name in table.columns:
        return f"column {name!r} already exists"
    for col in table.columns:
        if list(table[col]) == values:
            return f"same content as column {col!r}"
    for col in table.columns:
        if all(v in cell for v, cell in zip(values, table[col])):
            return None
    return "the values are not substrings of any existing column"


def add_column(df: pd.DataFrame, name: str, values: Sequence[str]) -> pd.DataFrame:
    """``f_add_column``: a new last column ``name`` holding ``values`` (one per row). Raises
    ``ValueError`` naming the failed check (see :func:`add_column_problem`)."""
    problem = add_column_problem(df, name, values)
    if problem is not None:
        raise ValueError(f"add_column({name!r}) rejected: {problem}")
    out = as_table(df).copy()
    out[name] = [_cell_text(v) for v in values]
    return out


def select_rows(df: pd.DataFrame, row_ids: Sequence[int]) -> pd.DataFrame:
    """``f_select_row``: the rows with these 1-based numbers, in table order, renumbered
    1..k. Unknown numbers are dropped; an empty selection keeps the whole table (the official
    executor records it as ``f_select_row(*)``)."""
    table = as_table(df)
    ids = []
    for r in row_ids:
        if isinstance(r, bool) or not isinstance(r, int):
            raise TypeError(f"row_ids must be ints (1-based row numbers), got {r!r}")
        ids.append(r)
    keep = sorted({r - 1 for r in ids if 1 <= r <= len(table)})
    if not keep:
        return table
    return table.iloc[keep].reset_index(drop=True)


def select_columns(df: pd.DataFrame, cols: Sequence[str]) -> pd.DataFrame:
    """``f_select_column``: the named columns in table order (matched case-insensitively,
    as the official executor lowers the header); unknown names are dropped; none left keeps
    the whole table (``f_select_column(*)``)."""
    table = as_table(df)
    if isinstance(cols, str):
        raise TypeError("cols must be a sequence of column names, not one string")
    wanted = {str(c).strip().lower() for c in cols}
    keep = [c for c in table.columns if c.lower() in wanted]
    return table[keep] if keep else table


def is_groupable(df: pd.DataFrame, col: str, max_ratio: float = 0.8) -> bool:
    """The official validity check of ``f_group``: the column exists and its distinct
    non-empty values number at most ``max_ratio`` times its non-empty cells."""
    table = as_table(df)
    if col not in table.columns:
        return False
    vals = [v for v in table[col] if v.strip()]
    return bool(vals) and len(set(vals)) / len(vals) <= max_ratio


def group_summary(df: pd.DataFrame, col: str) -> pd.DataFrame:
    """``f_group_column``: a (value, count) summary of ``col``, most frequent first (ties in
    sorted value order, as the official stable sort of ``sorted(set(values))``). The table
    itself is unchanged; the summary reaches the final query through :func:`group_block`.

    Returns a DataFrame with columns ``[col, "Count"]``."""
    table = as_table(df)
    if col not in table.columns:
        raise ValueError(f"col {col!r} is not a column; columns: {list(table.columns)}")
    values = list(table[col])
    info = [(v, values.count(v)) for v in sorted(set(values))]
    info.sort(key=lambda x: x[1], reverse=True)  # stable: value order among equal counts
    return pd.DataFrame(info, columns=[col, "Count"]).astype({"Count": int})


def group_block(summary: pd.DataFrame) -> str:
    """The group block of the final query (official ``simple_query``)::

        Group the rows according to column: X.
        Group ID | X | Count
        Group 1 | v | 3

    An empty value is written ``[Empty Cell]``."""
    if not isinstance(summary, pd.DataFrame) or summary.shape[1] != 2 \
            or summary.columns[1] != "Count":
        raise TypeError("summary must be a group_summary() DataFrame (columns [col, 'Count'])")
    col = summary.columns[0]
    lines = [f"Group the rows according to column: {col}.", f"Group ID | {col} | Count"]
    for i, (v, count) in enumerate(summary.itertuples(index=False), start=1):
        v = "[Empty Cell]" if not str(v).strip() else str(v)
        lines.append(f"Group {i} | {v} | {int(count)}")
    return "\n".join(lines)


def numeric_key(cell: str) -> float | None:
    """The official ``only_keep_num_and_first_dot``: keep the digits and the first dot, with
    a leading minus if the cell starts with one; None when nothing numeric is left."""
    s = str(cell)
    minus = bool(s.strip()) and s.strip()[0] == "-"
    kept, dot = [], False
    for c in s:
        if c in "0123456789":
            kept.append(c)
        elif c == "." and not dot:
            kept.append(c)
            dot = True
    ns = "".join(kept)
    if ns in ("", "."):
        return None
    return float(("-" if minus else "") + ns)


_DTYPES = ("numerical", "datetype", "string")


def sort_rows(df: pd.DataFrame, col: str, ascending: bool = True,
              dtype: str = "numerical") -> pd.DataFrame:
    """``f_sort_column``: rows ordered by ``col`` (``dtype`` "numerical": by
    :func:`numeric_key`; "datetype"/"string": by the stripped text), cells without a key last
    in their original order. The official executor applies a sort only for Numerical columns
    (the planner-side check lives in :class:`~.agents.LMArguments`)."""
    table = as_table(df)
    if col not in table.columns:
        raise ValueError(f"col {col!r} is not a column; columns: {list(table.columns)}")
    if not isinstance(ascending, bool):
        raise TypeError(f"ascending must be a bool, got {ascending!r}")
    if not isinstance(dtype, str) or dtype.lower() not in _DTYPES:
        raise ValueError(f"dtype must be one of {_DTYPES}, got {dtype!r}")
    keyed: list[tuple[float | str, int]] = []
    rest: list[int] = []
    for i, cell in enumerate(table[col]):
        k = numeric_key(cell) if dtype.lower() == "numerical" else (cell.strip() or None)
        if k is None:
            rest.append(i)
        else:
            keyed.append((k, i))
    keyed.sort(key=lambda x: x[0], reverse=not ascending)  # stable among equal keys
    order = [i for _, i in keyed] + rest
    return table.iloc[order].reset_index(drop=True)

