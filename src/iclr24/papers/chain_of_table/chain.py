"""The Chain-of-Table loop (Wang et al., ICLR 2024, Sec. 3, Algorithm 1) and its state.

Algorithm 1 in the paper's notation: given a table T and a question Q, repeat
``f = DynamicPlan(T, Q, chain)``; ``args = GenerateArgs(T, Q, f)``; ``T = f(T, args)``;
``chain = chain -> f(args)`` until f is [E] (END); then ``A = Query(T, Q)``. Here:

- :data:`OPERATION_GRAPH` is the official ``possible_next_operation_dict``: each operation is
  used at most once and in a partial order (without it a planner loops);
  :meth:`ChainState.candidates` removes the operations that were skipped.
- :class:`Planner` (DynamicPlan), :class:`ArgumentGenerator` (GenerateArgs) and
  :class:`Reader` (Query) are protocols; LM, scripted and learned implementations live in
  :mod:`.agents` and :mod:`.league`.
- :func:`apply_operation` executes one :class:`Operation` with the official sanity checks;
  an invalid or missing argument is recorded as ``skip f_op()`` and the operation leaves the
  candidates (official ``*_act``).
- :class:`ChainOfTable` runs the loop; :meth:`ChainOfTable.run_batch` advances many
  statements in lockstep so batched backends (one generate call per step and operation)
  amortise their cost. If only one candidate is left it is taken without asking the planner.
  A planner may always answer END (the official LM planner ends the chain when its reply
  names no candidate, even at the start).

Deviation from the official code: the official sort executor applies the *least* confident
sort candidate (its list is sorted ascending by confidence); we apply the most confident, as
group and select do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from .tables import (
    add_column_problem,
    as_table,
    group_block,
    group_summary,
    is_groupable,
    numeric_key,
    select_columns,
    select_rows,
    sort_rows,
)

__all__ = [
    "END",
    "INIT",
    "OPERATIONS",
    "OPERATION_GRAPH",
    "ArgumentGenerator",
    "ChainOfTable",
    "ChainResult",
    "ChainState",
    "Operation",
    "Planner",
    "Reader",
    "apply_operation",
]

END, INIT = "<END>", "<init>"
OPERATIONS = ("add_column", "select_row", "select_column", "group_column", "sort_column")
OPERATION_GRAPH: dict[str, tuple[str, ...]] = {
    INIT: ("add_column", "select_row", "select_column", "group_column", "sort_column"),
    "add_column": ("select_row", "select_column", "group_column", "sort_column", END),
    "select_row": ("select_column", "group_column", "sort_column", END),
    "select_column": ("group_column", "sort_column", END),
    "group_column": ("sort_column", END),
    "sort_column": (END,),
}


@dataclass(frozen=True)
class Operation:
    """One atomic operation with its arguments, e.g. ``Operation("select_row", {"rows":
    [2, 5]}, 0.8)``. ``confidence`` is the summed exp(log-prob) of the samples that voted
    for these arguments (1.0 for scripted generators).

    args by name: add_column ``{"name": str, "values": list[str]}`` (one per row);
    select_row ``{"rows": list[int] (1-based) | "*"}``; select_column ``{"columns":
    list[str]}``; group_column ``{"column": str}``; sort_column ``{"column": str,
    "ascending": bool, "dtype": "numerical" | "datetype" | "string"}``."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    confidence: float = 1.0

    def __post_init__(self) -> None:
        if self.name not in OPERATIONS:
            raise ValueError(f"Operation.name must be one of {OPERATIONS}, got {self.name!r}")
        if not isinstance(self.args, dict):
            raise TypeError(f"Operation.args must be a dict, got {type(self.args).__name__}")


@dataclass(frozen=True)
class ChainState:
    """What the planner, argument generator and reader see: the current (transformed) table,
    the statement, the caption, the original table, the operation chain so far in the
    official string form (``f_select_row(row 1, row 2)``, ``skip f_sort_column()``), the
    applied operations, the skipped operation names and the group summary (or None)."""

    table: pd.DataFrame
    statement: str
    caption: str | None = None
    original: pd.DataFrame | None = None
    chain: tuple[str, ...] = ()
    applied: tuple[Operation, ...] = ()
    skipped: tuple[str, ...] = ()
    group: pd.DataFrame | None = None

    @property
    def last_operation(self) -> str:
        return self.applied[-1].name if self.applied else INIT

    def candidates(self) -> tuple[str, ...]:
        """The legal next operations (and END): the graph's successors of the last applied
        operation, minus the skipped ones."""
        return tuple(op for op in OPERATION_GRAPH[self.last_operation]
                     if op not in self.skipped)

    def kept_chain(self) -> str:
        """The chain string shown to the planner: the applied calls joined by `` -> ``."""
        kept = [c for c in self.chain if not c.startswith("skip")]
        return " -> ".join(kept)

    def group_text(self) -> str | None:
        """The group block for the final query, or None without a group operation."""
        return None if self.group is None else group_block(self.group)


def _skip(state: ChainState, name: str) -> ChainState:
    return replace(state, chain=state.chain + (f"skip f_{name}()",),
                   skipped=state.skipped + (name,))


def _applied(state: ChainState, op: Operation, call: str, **changes) -> ChainState:
    return replace(state, chain=state.chain + (call,), applied=state.applied + (op,), **changes)


def apply_operation(state: ChainState, name: str, op: Operation | None) -> ChainState:
    """Execute ``op`` (the arguments generated for operation ``name``; None when generation
    failed) on ``state`` and return the next state. Invalid arguments are a recorded skip:
    add_column failing :func:`~.tables.add_column_problem`; group on an unknown or
    non-groupable column (distinct ratio > 0.8); sort on an unknown column, a non-numerical
    datatype (the official executor sorts Numerical only) or an already-sorted column.
    select_row / select_column with ``*`` or nothing valid keep the table and are recorded as
    ``f_select_row(*)`` / ``f_select_column(*)``."""
    if name not in state.candidates():
        raise ValueError(f"operation {name!r} is not legal here; candidates: "
                         f"{state.candidates()}")
    if op is None:
        return _skip(state, name)
    if op.name != name:
        raise ValueError(f"op.name must be {name!r}, got {op.name!r}")
    table = state.table
    if name == "add_column":
        col, values = op.args.get("name"), op.args.get("values")
        if not isinstance(col, str) or not col.strip() or not isinstance(values, list) \
                or len(values) != len(table) or add_column_problem(table, col, values):
            return _skip(state, name)
        new = table.copy()
        new[col] = [str(v) for v in values]
        return _applied(state, op, f"f_add_column({col})", table=new)
    if name == "select_row":
        rows = op.args.get("rows", "*")
        ids = [] if rows == "*" else [r for r in rows if isinstance(r, int)
                                     and not isinstance(r, bool) and 1 <= r <= len(table)]
        if not ids:
            return _applied(state, op, "f_select_row(*)")
        new = select_rows(table, ids)
        call = "f_select_row(" + ", ".join(f"row {i}" for i in range(1, len(new) + 1)) + ")"
        return _applied(state, op, call, table=new)
    if name == "select_column":
        cols = op.args.get("columns", [])
        known = {c.lower() for c in table.columns}
        if not isinstance(cols, list) or not any(str(c).lower() in known for c in cols):
            return _applied(state, op, "f_select_column(*)")
        new = select_columns(table, cols)
        return _applied(state, op, "f_select_column(" + ", ".join(new.columns) + ")", table=new)
    if name == "group_column":
        col = op.args.get("column")
        if not isinstance(col, str) or not is_groupable(table, col):
            return _skip(state, name)
        return _applied(state, op, f"f_group_column({col})", group=group_summary(table, col))
    # sort_column
    col, dtype = op.args.get("column"), str(op.args.get("dtype", "numerical")).lower()
    if not isinstance(col, str) or col not in table.columns or dtype != "numerical":
        return _skip(state, name)
    keys = [k for k in (numeric_key(v) for v in table[col]) if k is not None]
    if not keys or keys == sorted(keys) or keys == sorted(keys, reverse=True):
        return _skip(state, name)  # official: an already sorted column is not sorted
    new = sort_rows(table, col, ascending=bool(op.args.get("ascending", True)),
                    dtype="numerical")
    return _applied(state, op, f"f_sort_column({col})", table=new)


@runtime_checkable
class Planner(Protocol):
    """DynamicPlan: the next operation (one of ``state.candidates()``, END included)."""

    def next_operation(self, state: ChainState) -> str: ...


@runtime_checkable
class ArgumentGenerator(Protocol):
    """GenerateArgs: the operation's arguments, or None when none could be produced."""

    def generate(self, op: str, state: ChainState) -> Operation | None: ...


@runtime_checkable
class Reader(Protocol):
    """The final query: an answer ("yes"/"no" for fact verification) from the final state."""

    def answer(self, state: ChainState) -> str: ...


@dataclass(frozen=True)
class ChainResult:
    """The outcome of one statement: the reader's ``answer``, the operation ``chain`` in the
    official string form (skips included), the ``final_table``, the ``group_block`` text the
    reader saw (or None) and the final ``state``."""

    answer: str
    chain: tuple[str, ...]
    final_table: pd.DataFrame
    group_block: str | None
    state: ChainState


def _many(obj, batch_name: str, one_name: str, items: list, *extra) -> list:
    if hasattr(obj, batch_name):
        return list(getattr(obj, batch_name)(*extra, items))
    return [getattr(obj, one_name)(*extra, item) for item in items]


class ChainOfTable:
    """Chain-of-Table (Algorithm 1) over a planner, an argument generator and a reader.

    ``planner.next_operation(state)``, ``arguments.generate(op, state)`` and
    ``reader.answer(state)`` are called per statement; components that also define
    ``next_operations(states)``, ``generate_many(op, states)`` or ``answers(states)`` get
    whole batches from :meth:`run_batch`. At most ``max_ops`` steps are taken (the pool has
    five operations, each used at most once)."""

    def __init__(self, planner: Planner, arguments: ArgumentGenerator, reader: Reader,
                 max_ops: int = 5) -> None:
        for name, obj, method in (("planner", planner, "next_operation"),
                                  ("arguments", arguments, "generate"),
                                  ("reader", reader, "answer")):
            if not callable(getattr(obj, method, None)):
                raise TypeError(f"{name} must have a {method}() method, got "
                                f"{type(obj).__name__}")
        if isinstance(max_ops, bool) or not isinstance(max_ops, int) or max_ops < 0:
            raise ValueError(f"max_ops must be an int >= 0, got {max_ops!r}")
        self.planner, self.arguments, self.reader = planner, arguments, reader
        self.max_ops = max_ops

    def run(self, df: pd.DataFrame, statement: str, caption: str | None = None) -> ChainResult:
        """Chain-of-Table on one table and statement."""
        return self.run_batch([df], [statement], [caption])[0]

    def run_batch(self, tables: Sequence[pd.DataFrame], statements: Sequence[str],
                  captions: Sequence[str | None] | None = None) -> list[ChainResult]:
        """Chain-of-Table on many (table, statement) pairs, advanced in lockstep."""
        tables, statements = list(tables), list(statements)
        captions = [None] * len(tables) if captions is None else list(captions)
        if not (len(tables) == len(statements) == len(captions)):
            raise ValueError(f"tables, statements and captions must have equal lengths, got "
                             f"{len(tables)}, {len(statements)}, {len(captions)}")
        states = []
        for i, (df, st, cap) in enumerate(zip(tables, statements, captions)):
            if not isinstance(st, str) or not st.strip():
                raise ValueError(f"statements[{i}] must be a non-empty string, got {st!r}")
            t = as_table(df, f"tables[{i}]")
            states.append(ChainState(table=t, statement=st, caption=cap, original=t))
        active = list(range(len(states)))
        for _ in range(self.max_ops):
            if not active:
                break
            choices: dict[int, str] = {}
            ask = []
            for i in active:
                cands = states[i].candidates()
                if len(cands) == 1:
                    choices[i] = cands[0]
                else:
                    ask.append(i)
            if ask:
                picked = _many(self.planner, "next_operations", "next_operation",
                               [states[i] for i in ask])
                for i, op in zip(ask, picked):
                    if op != END and op not in states[i].candidates():
                        raise ValueError(f"the planner chose {op!r}, not one of "
                                         f"{states[i].candidates()} (or {END})")
                    choices[i] = op
            still = []
            for name in OPERATIONS:
                idx = [i for i in active if choices[i] == name]
                if not idx:
                    continue
                ops = _many(self.arguments, "generate_many", "generate",
                            [states[i] for i in idx], name)
                for i, op in zip(idx, ops):
                    states[i] = apply_operation(states[i], name, op)
                    still.append(i)
            active = sorted(still)
        answers = _many(self.reader, "answers", "answer", states)
        return [ChainResult(answer=a, chain=s.chain, final_table=s.table,
                            group_block=s.group_text(), state=s)
                for a, s in zip(answers, states)]
