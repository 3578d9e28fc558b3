"""Synthetic league tables with programmatic truth, and the scripted, learned and random
planners, the rule-based argument generator and the short-context reader that the laptop
reproduction of Chain-of-Table uses (Wang et al., ICLR 2024, Sec. 4; the tables stand in
for TabFact / WikiTQ, which have no offline copy here).

- :func:`make_table_task` (one league table: team, conference, wins, losses, points,
  history such as "founded 1984, renamed 1991" or "renamed 1991, founded 1984"; distinct
  numbers per column) with a statement of one of :data:`KINDS` that is true half of the time
  and its oracle operation chain; :func:`make_table_tasks` draws a balanced set. Two disjoint
  template/filler sets: ``templates="train"`` (train the learned planner) and ``"test"``.
- :class:`ScriptedPlanner` (follows given chains), :class:`RandomPlanner` (a random legal
  chain), :class:`LearnedPlanner` (scikit-learn logistic regression over TF-IDF features of
  the statement and the last operation, trained on oracle chains of the train templates).
- :class:`RuleArguments`: arguments read off the statement by rules (teams and columns it
  names, "founded" -> a ``founded year`` column extracted from ``history``, "most"/"fewest"
  -> a sort, "conference" -> a group).
- :class:`ShortContextReader` (the spec's reader R1): reads the final query's text (PIPE
  table + group block) but sees only the first ``window`` rows, answers by simple rules on
  what it sees (compare, max among visible rows, counts from the group block or the visible
  rows, the first year written in a history cell unless a founded column exists) and guesses
  YES when a row it needs is not visible: a stand-in for an LLM that degrades on large
  tables. The spec's second reader (a tiny character transformer trained on <= 5-row tables)
  is not implemented.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .chain import END, ChainState, Operation
from .tables import linearize

__all__ = [
    "KINDS",
    "LearnedPlanner",
    "RandomPlanner",
    "RuleArguments",
    "ScriptedPlanner",
    "ShortContextReader",
    "TableTask",
    "make_table_task",
    "make_table_tasks",
]

KINDS = ("compare", "superlative", "count", "derived", "combo")
_CONFS = ("east", "west", "north", "south")
_NUMERIC = ("wins", "losses", "points")
_CITIES = {
    "train": ("boston", "denver", "austin", "dallas", "miami", "seattle", "portland", "tampa",
              "phoenix", "omaha", "tulsa", "fresno", "reno", "boise", "el paso", "mesa",
              "toledo", "akron", "dayton", "salem"),
    "test": ("oslo", "lyon", "porto", "graz", "malmo", "ghent", "turin", "leeds", "cork",
             "split", "bergen", "aarhus", "basel", "brno", "gdansk", "kosice", "tartu",
             "riga", "varna", "zadar"),
}
_MASCOTS = {
    "train": ("bears", "hawks", "wolves", "lions", "tigers", "eagles", "sharks", "bulls",
              "rams", "owls", "foxes", "cobras", "falcons", "bison", "stallions", "jets",
              "comets", "pirates", "knights", "giants"),
    "test": ("otters", "ravens", "lynx", "vipers", "herons", "badgers", "moose", "storks",
             "orcas", "yaks", "geckos", "pumas", "cranes", "ibex", "wasps", "marlins",
             "gophers", "hornets", "kites", "rhinos"),
}
_TEMPLATES = {
    "train": {
        "compare": "{x} has more {col} than {y}",
        "superlative": "{x} has the {most} {col}",
        "count": "there are {k} teams in the {conf} conference",
        "derived": "{x} was founded in the {decade}s",
        "combo": "{k} teams in the {conf} conference were founded before {year}",
    },
    "test": {
        "compare": "compared with {y} , {x} has more {col}",
        "superlative": "the team with the {most} {col} is {x}",
        "count": "the {conf} conference has {k} teams",
        "derived": "in the {decade}s , {x} was founded",
        "combo": "before {year} , {k} teams of the {conf} conference were founded",
    },
}
_ORACLE = {
    "compare": ("select_row", "select_column"),
    "superlative": ("select_column", "sort_column"),
    "count": ("group_column",),
    "derived": ("add_column", "select_row"),
    "combo": ("add_column", "select_row", "group_column"),
}
FOUNDED = "founded year"


@dataclass(frozen=True)
class TableTask:
    """One synthetic fact-verification item: ``table`` (strings), ``statement``, ``label``
    (True = the statement holds), ``kind``, ``oracle_chain`` (operation names, END omitted),
    ``caption``."""

    table: pd.DataFrame
    statement: str
    label: bool
    kind: str
    oracle_chain: tuple[str, ...]
    caption: str = "league standings"

    @property
    def answer(self) -> str:
        return "yes" if self.label else "no"


def _rng_int(rng: np.random.Generator, lo: int, hi: int) -> int:
    return int(rng.integers(lo, hi + 1))


def _league(n_rows: int, templates: str, rng: np.random.Generator) -> pd.DataFrame:
    names = [f"{c} {m}" for c in _CITIES[templates] for m in _MASCOTS[templates]]
    teams = [names[i] for i in rng.choice(len(names), size=n_rows, replace=False)]
    founded = rng.integers(1900, 2010, size=n_rows)
    renamed = [int(f + rng.integers(1, 2021 - f)) for f in founded]
    history = [f"founded {f}, renamed {r}" if rng.random() < 0.5 else
               f"renamed {r}, founded {f}" for f, r in zip(founded, renamed)]
    return pd.DataFrame({
        "team": teams,
        "conference": [str(c) for c in rng.choice(_CONFS, size=n_rows)],
        "wins": [str(v) for v in rng.choice(100, size=n_rows, replace=False)],
        "losses": [str(v) for v in rng.choice(100, size=n_rows, replace=False)],
        "points": [str(v) for v in rng.choice(200, size=n_rows, replace=False)],
        "history": history,
    })


def _founded(cell: str) -> int:
    return int(re.search(r"founded (\d{4})", cell).group(1))


def _wrong_count(k: int, rng: np.random.Generator) -> int:
    d = _rng_int(rng, 1, 3)
    return k + d if rng.random() < 0.5 or k < 4 else k - d


def make_table_task(n_rows: int, kind: str, seed: int, templates: str = "test") -> TableTask:
    """A league table of ``n_rows`` (8-100) and a ``kind`` statement, true with probability
    1/2 (falsified by changing a number or a team), from ``seed``. ``templates``: "train" or
    "test" (disjoint statement templates and team names)."""
    if isinstance(n_rows, bool) or not isinstance(n_rows, int) or not 8 <= n_rows <= 100:
        raise ValueError(f"n_rows must be an int in 8..100, got {n_rows!r}")
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    if templates not in _TEMPLATES:
        raise ValueError(f"templates must be 'train' or 'test', got {templates!r}")
    rng = np.random.default_rng([int(seed), n_rows, KINDS.index(kind), len(templates)])
    df = _league(n_rows, templates, rng)
    label = bool(rng.random() < 0.5)
    tpl = _TEMPLATES[templates][kind]
    years = [_founded(h) for h in df["history"]]
    if kind == "compare":
        col = str(rng.choice(_NUMERIC))
        i, j = (int(v) for v in rng.choice(n_rows, size=2, replace=False))
        hi, lo = (i, j) if int(df[col][i]) > int(df[col][j]) else (j, i)
        x, y = (hi, lo) if label else (lo, hi)
        text = tpl.format(x=df.team[x], y=df.team[y], col=col)
    elif kind == "superlative":
        col = str(rng.choice(_NUMERIC))
        most = "most" if rng.random() < 0.5 else "fewest"
        vals = df[col].astype(int)
        best = int(vals.idxmax() if most == "most" else vals.idxmin())
        x = best if label else int(rng.choice([r for r in range(n_rows) if r != best]))
        text = tpl.format(x=df.team[x], most=most, col=col)
    elif kind == "count":
        conf = str(rng.choice(_CONFS))
        k = int((df.conference == conf).sum())
        text = tpl.format(k=k if label else _wrong_count(k, rng), conf=conf)
    elif kind == "derived":
        x = _rng_int(rng, 0, n_rows - 1)
        decade = years[x] // 10 * 10
        if not label:
            other = [int(s) for s in re.findall(r"\d{4}", df.history[x])
                     if int(s) // 10 * 10 != decade]
            decade = other[0] // 10 * 10 if other and rng.random() < 0.7 else \
                decade + 10 * int(rng.choice([-2, -1, 1, 2]))
        text = tpl.format(x=df.team[x], decade=decade)
    else:  # combo
        conf = str(rng.choice(_CONFS))
        year = _rng_int(rng, 1930, 2000)
        k = sum(c == conf and y < year for c, y in zip(df.conference, years))
        text = tpl.format(k=k if label else _wrong_count(k, rng), conf=conf, year=year)
    return TableTask(df, text, label, kind, _ORACLE[kind])


def make_table_tasks(n: int, row_range: tuple[int, int], seed: int,
                     templates: str = "test") -> list[TableTask]:
    """``n`` tasks, kinds in turn, row counts uniform in ``row_range`` (inclusive)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    lo, hi = row_range
    rng = np.random.default_rng([int(seed), lo, hi, len(templates)])
    return [make_table_task(_rng_int(rng, lo, hi), KINDS[i % len(KINDS)],
                            int(rng.integers(2**31)), templates) for i in range(n)]


# ---------------------------------------------------------------- planners


class ScriptedPlanner:
    """Follows a given chain per statement (``chains[statement]``: operation names): the
    next listed operation that is still legal, else END."""

    def __init__(self, chains: Mapping[str, Sequence[str]]) -> None:
        if not isinstance(chains, Mapping):
            raise TypeError(f"chains must be a mapping statement -> operation names, got "
                            f"{type(chains).__name__}")
        self.chains = {k: tuple(v) for k, v in chains.items()}

    def next_operation(self, state: ChainState) -> str:
        if state.statement not in self.chains:
            raise ValueError(f"no chain for statement {state.statement!r}")
        done = {op.name for op in state.applied} | set(state.skipped)
        for op in self.chains[state.statement]:
            if op not in done and op in state.candidates():
                return op
        return END


class RandomPlanner:
    """A uniformly random legal next operation (END included), from ``seed``."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = np.random.default_rng(int(seed))

    def next_operation(self, state: ChainState) -> str:
        cands = state.candidates()
        return cands[int(self.rng.integers(len(cands)))]


def _features(statement: str, last: str) -> str:
    words = re.sub(r"\d+", "NUM", statement.lower())
    return f"{words} LAST_{last.strip('<>')}"


class LearnedPlanner:
    """DynamicPlan learnt from oracle chains: a scikit-learn logistic regression over
    TF-IDF word n-grams of the statement (digits as ``NUM``) and a ``LAST_<op>`` token; the
    most probable legal candidate is chosen. ``fit(statements, chains)`` trains on every
    prefix of every chain (target: the next operation, END after the last)."""

    def __init__(self, C: float = 10.0, seed: int = 0) -> None:
        self.C, self.seed = float(C), int(seed)
        self.model = None

    def fit(self, statements: Sequence[str], chains: Sequence[Sequence[str]]) -> LearnedPlanner:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        if len(statements) != len(chains) or not statements:
            raise ValueError(f"statements and chains must be non-empty and equally long, got "
                             f"{len(statements)} and {len(chains)}")
        x, y = [], []
        for s, chain in zip(statements, chains):
            last = "<init>"
            for op in list(chain) + [END]:
                x.append(_features(s, last))
                y.append(op)
                last = op
        self.model = make_pipeline(TfidfVectorizer(ngram_range=(1, 2), token_pattern=r"\S+"),
                                   LogisticRegression(C=self.C, max_iter=2000,
                                                      random_state=self.seed))
        self.model.fit(x, y)
        return self

    def next_operation(self, state: ChainState) -> str:
        return self.next_operations([state])[0]

    def next_operations(self, states: Sequence[ChainState]) -> list[str]:
        if self.model is None:
            raise RuntimeError("LearnedPlanner.fit must be called before next_operation")
        probas = self.model.predict_proba([_features(s.statement, s.last_operation)
                                           for s in states])
        out = []
        for s, proba in zip(states, probas):
            cands = s.candidates()
            ranked = sorted(zip(self.model.classes_, proba), key=lambda t: -t[1])
            out.append(next((op for op, _ in ranked if op in cands), END))
        return out


# ---------------------------------------------------------------- arguments


def _mentioned_teams(statement: str, teams: Sequence[str]) -> list[int]:
    return [i for i, t in enumerate(teams) if re.search(rf"(^| ){re.escape(t)}( |$)", statement)]


class RuleArguments:
    """Arguments read off the statement by rules (see the module docstring); None when the
    rules find nothing for the operation (a recorded skip)."""

    def generate(self, op: str, state: ChainState) -> Operation | None:
        st, t = state.statement, state.table
        words = set(st.split())
        if op == "add_column":
            if "founded" not in words or "history" not in t.columns:
                return None
            found = [re.search(r"founded (\d{4})", h) for h in t["history"]]
            if not all(found):
                return None
            return Operation("add_column", {"name": FOUNDED,
                                            "values": [m.group(1) for m in found]})
        if op == "select_row":
            rows = _mentioned_teams(st, list(t["team"])) if "team" in t.columns else []
            m = re.search(r"before (\d{4})", st)
            if not rows and m and FOUNDED in t.columns:
                rows = [i for i, v in enumerate(t[FOUNDED]) if int(v) < int(m.group(1))]
            return Operation("select_row", {"rows": [r + 1 for r in rows]}) if rows else None
        if op == "select_column":
            cols = [c for c in t.columns if c == "team" or c in words
                    or (c == FOUNDED and "founded" in words)]
            return Operation("select_column", {"columns": cols}) if len(cols) > 1 else None
        if op == "group_column":
            return (Operation("group_column", {"column": "conference"})
                    if "conference" in words else None)
        if op == "sort_column":
            col = next((c for c in _NUMERIC if c in words), None)
            if col is None or not words & {"most", "fewest"}:
                return None
            return Operation("sort_column", {"column": col, "ascending": "fewest" in words,
                                             "dtype": "numerical"})
        raise ValueError(f"unknown operation {op!r}")


# ---------------------------------------------------------------- reader R1


_PATTERNS = [
    ("compare", re.compile(r"^(?P<x>.+) has more (?P<col>\w+) than (?P<y>.+)$")),
    ("compare", re.compile(r"^compared with (?P<y>.+) , (?P<x>.+) has more (?P<col>\w+)$")),
    ("superlative", re.compile(r"^(?P<x>.+) has the (?P<most>most|fewest) (?P<col>\w+)$")),
    ("superlative", re.compile(r"^the team with the (?P<most>most|fewest) (?P<col>\w+) is "
                               r"(?P<x>.+)$")),
    ("count", re.compile(r"^there are (?P<k>\d+) teams in the (?P<conf>\w+) conference$")),
    ("count", re.compile(r"^the (?P<conf>\w+) conference has (?P<k>\d+) teams$")),
    ("derived", re.compile(r"^(?P<x>.+) was founded in the (?P<decade>\d+)s$")),
    ("derived", re.compile(r"^in the (?P<decade>\d+)s , (?P<x>.+) was founded$")),
    ("combo", re.compile(r"^(?P<k>\d+) teams in the (?P<conf>\w+) conference were founded "
                         r"before (?P<year>\d+)$")),
    ("combo", re.compile(r"^before (?P<year>\d+) , (?P<k>\d+) teams of the (?P<conf>\w+) "
                         r"conference were founded$")),
]


def _parse_statement(statement: str) -> tuple[str, dict[str, str]] | None:
    for kind, pat in _PATTERNS:
        m = pat.match(statement)
        if m:
            return kind, m.groupdict()
    return None


def _read_text(text: str, window: int):
    """(header, the first ``window`` rows as dicts, group counts {value: count} or None)."""
    header: list[str] = []
    rows: list[dict[str, str]] = []
    groups: dict[str, int] | None = None
    group_col = None
    for line in text.splitlines():
        if line.startswith("col : "):
            header = line[len("col : "):].split(" | ")
        elif line.startswith("row ") and " : " in line and len(rows) < window:
            cells = line.split(" : ", 1)[1].split(" | ")
            rows.append(dict(zip(header, cells)))
        elif line.startswith("Group the rows according to column: "):
            group_col = line[len("Group the rows according to column: "):].rstrip(".")
            groups = {}
        elif groups is not None and line.startswith("Group ") and not line.startswith(
                "Group ID") and " | " in line:
            _, v, c = line.split(" | ")
            groups[v] = int(c)
    return header, rows, (group_col, groups) if groups is not None else None


def _year_of(row: dict[str, str]) -> int | None:
    if FOUNDED in row:
        return int(row[FOUNDED])
    m = re.search(r"\d{4}", row.get("history", ""))  # naive: the first year written
    return int(m.group(0)) if m else None


class ShortContextReader:
    """The scripted reader R1: it reads ``reader_text(state)`` (the PIPE table and the
    group block, as a final query would show them) but only the first ``window`` rows of the
    table. Answers "yes"/"no"; "yes" when a row it needs is not visible."""

    def __init__(self, window: int = 5) -> None:
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive int, got {window!r}")
        self.window = window

    @staticmethod
    def reader_text(state: ChainState) -> str:
        text = linearize(state.table, state.caption)
        block = state.group_text()
        return text if block is None else text + "\n" + block

    def answer(self, state: ChainState) -> str:
        parsed = _parse_statement(state.statement)
        if parsed is None:
            return "yes"
        kind, a = parsed
        header, rows, group = _read_text(self.reader_text(state), self.window)
        by_team = {r.get("team"): r for r in rows}
        yes = {True: "yes", False: "no"}
        if kind == "compare":
            x, y = by_team.get(a["x"]), by_team.get(a["y"])
            if x is None or y is None or a["col"] not in header:
                return "yes"
            return yes[int(x[a["col"]]) > int(y[a["col"]])]
        if kind == "superlative":
            if a["col"] not in header or a["x"] not in by_team:
                return "no" if a["col"] in header else "yes"
            vals = [int(r[a["col"]]) for r in rows]
            best = max(vals) if a["most"] == "most" else min(vals)
            return yes[int(by_team[a["x"]][a["col"]]) == best]
        if kind in ("count", "combo"):
            if group is not None and group[0] == "conference":
                return yes[group[1].get(a["conf"], 0) == int(a["k"])]
            n = sum(r.get("conference") == a["conf"] and
                    (kind == "count" or (_year_of(r) or 9999) < int(a["year"])) for r in rows)
            return yes[n == int(a["k"])]
        x = by_team.get(a["x"])  # derived
        if x is None:
            return "yes"
        year = _year_of(x)
        return yes[year is not None and year // 10 * 10 == int(a["decade"])]
