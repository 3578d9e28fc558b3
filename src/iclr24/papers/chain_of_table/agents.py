"""Language-model planner, argument generator and reader of Chain-of-Table (Wang et al.,
ICLR 2024, Sec. 3.2-3.4; official ``generate_prompt_for_next_step``, ``*_func`` and
``simple_query``), over any text backend of the kit (:class:`~iclr24.kits.language_models.
TextBackend`: the tiny local model, SmolLM2-135M-Instruct, a user's checkpoint, an
OpenAI-compatible server).

- :class:`LMPlanner` (DynamicPlan): :func:`~.prompts.plan_prompt` at T=0 (or ``strategy=
  "voting"``: n samples, each next operation scored by the sum of exp(log-prob) of the
  samples that chose it); the first legal operation of the generated chain, else END.
- :class:`LMArguments` (GenerateArgs): add_column (T=0 on the first 3 rows with the
  statement's digits masked, then one prompt per further row reusing the explanation, all
  rows in one batch); select_row (8 samples at T=0.5, row sets voted by Σ exp(log-prob), the
  union of the top ``union_rows``=2); select_column (the same voting, top ``union_columns``
  = 1 by default: whether the official top-2 union applies was not verified); group and sort
  at T=0. A reply without the expected call is counted (``stats``) and gives None (a skip)
  or, for select_row/select_column, ``*`` (keep all), as the official executors do.
- :class:`LMReader`: TabFact's final query with the four demos and the group block, T=0;
  an unparsable reply gives the answer "" (counted wrong, never dropped).

Votes need the log-probability of each sampled completion: a backend with
``generate_scored`` (:class:`~iclr24.kits.language_models.PrefixCachedTextModel`) returns it with the
sample; otherwise each distinct completion is scored with ``logprobs``; a backend without
log-probs votes by counts. Defaults are the official decoding settings (200 new tokens for
the planner, 150 for the operations); the claims pass smaller caps (a CPU budget).

Out of reach: PaLM 2, GPT-3.5 and LLaMA 2 (the paper's planners); the prompts are run here
on SmolLM2-135M-Instruct, which is far too weak for the task.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from .chain import END, OPERATIONS, ChainState, Operation
from .prompts import (
    add_column_prompt,
    add_column_row_prompt,
    final_query_prompt,
    group_prompt,
    parse_add_column,
    parse_answer,
    parse_columns,
    parse_group,
    parse_plan,
    parse_row_value,
    parse_rows,
    parse_sort,
    plan_prompt,
    select_column_prompt,
    select_row_prompt,
    sort_prompt,
)

__all__ = ["LMArguments", "LMPlanner", "LMReader", "ParseStats", "generate_scored"]


@dataclass
class ParseStats:
    """Per step kind ("plan", an operation name, "answer"): LM calls and parsed replies, and
    the first ``keep`` (prompt tail, reply) examples."""

    calls: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    parsed: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    examples: list[dict[str, str]] = field(default_factory=list)
    keep: int = 12

    def record(self, kind: str, ok: bool, prompt: str, reply: str) -> None:
        self.calls[kind] += 1
        self.parsed[kind] += int(ok)
        if len(self.examples) < self.keep:
            self.examples.append({"step": kind, "prompt_tail": prompt[-300:], "reply": reply,
                                  "parsed": ok})

    def parse_rate(self, kind: str) -> float:
        """Parsed / calls for ``kind`` (NaN if it was never called)."""
        c = self.calls.get(kind, 0)
        return self.parsed.get(kind, 0) / c if c else math.nan


def _check_lm(lm) -> None:
    if not callable(getattr(lm, "generate", None)):
        raise TypeError(f"lm must be a text backend with generate(), got {type(lm).__name__}")


def _positive(name: str, v: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        raise ValueError(f"{name} must be a positive int, got {v!r}")
    return v


def generate_scored(lm, prompts: Sequence[str], max_new_tokens: int, *, temperature: float,
                    n: int = 1, stop: Sequence[str] | None = None, seed: int | None = None
                    ) -> list[list[tuple[str, float]]]:
    """``out[i][j] = (completion, summed log-prob)`` from any text backend: its own
    ``generate_scored`` if it has one, else ``generate`` plus ``logprobs`` of each distinct
    non-empty completion, else 0.0 (votes by count)."""
    if hasattr(lm, "generate_scored"):
        return lm.generate_scored(prompts, max_new_tokens, temperature=temperature, n=n,
                                  stop=stop, seed=seed)
    texts = lm.generate(prompts, max_new_tokens, temperature=temperature, n=n, stop=stop,
                        seed=seed)
    can_score = bool(getattr(lm, "supports_logprobs", False)) and n > 1
    out = []
    for p, row in zip(prompts, texts):
        cache: dict[str, float] = {}
        scored = []
        for t in row:
            if t not in cache:
                cache[t] = float(sum(lm.logprobs(p, t))) if can_score and t else 0.0
            scored.append((t, cache[t]))
        out.append(scored)
    return out


class LMPlanner:
    """DynamicPlan over a text backend ``lm``. ``strategy`` "top" (official default: T=0,
    the first legal operation of the one generated chain) or "voting" (``n_samples`` at
    ``temperature``). ``next_operations(states)`` sends one batch."""

    def __init__(self, lm, *, strategy: str = "top", max_new_tokens: int = 200,
                 n_samples: int = 8, temperature: float = 0.5, seed: int = 0) -> None:
        _check_lm(lm)
        if strategy not in ("top", "voting"):
            raise ValueError(f"strategy must be 'top' or 'voting', got {strategy!r}")
        self.lm, self.strategy = lm, strategy
        self.max_new_tokens = _positive("max_new_tokens", max_new_tokens)
        self.n_samples = _positive("n_samples", n_samples)
        self.temperature, self.seed = float(temperature), int(seed)
        self.stats = ParseStats()

    def next_operation(self, state: ChainState) -> str:
        return self.next_operations([state])[0]

    def next_operations(self, states: Sequence[ChainState]) -> list[str]:
        prompts = [plan_prompt(s) for s in states]
        voting = self.strategy == "voting"
        replies = generate_scored(self.lm, prompts, self.max_new_tokens,
                                  temperature=self.temperature if voting else 0.0,
                                  n=self.n_samples if voting else 1, stop=["\n\n"],
                                  seed=self.seed)
        out = []
        for s, p, row in zip(states, prompts, replies):
            votes: dict[str, float] = defaultdict(float)
            for text, score in row:
                op = parse_plan(text, s.candidates())
                if op is not None:
                    votes[op] += math.exp(score)  # official: Σ exp(log p) per operation
            self.stats.record("plan", bool(votes), p, row[0][0])
            out.append(max(votes.items(), key=lambda kv: kv[1])[0] if votes else END)
        return out


class LMArguments:
    """GenerateArgs over a text backend ``lm`` (see the module docstring).
    ``generate_many(op, states)`` sends each step of an operation as one batch."""

    def __init__(self, lm, *, max_new_tokens: int = 150, row_value_tokens: int = 24,
                 n_samples: int = 8, temperature: float = 0.5, union_rows: int = 2,
                 union_columns: int = 1, seed: int = 0) -> None:
        _check_lm(lm)
        self.lm = lm
        self.max_new_tokens = _positive("max_new_tokens", max_new_tokens)
        self.row_value_tokens = _positive("row_value_tokens", row_value_tokens)
        self.n_samples = _positive("n_samples", n_samples)
        self.union_rows = _positive("union_rows", union_rows)
        self.union_columns = _positive("union_columns", union_columns)
        self.temperature, self.seed = float(temperature), int(seed)
        self.stats = ParseStats()

    def generate(self, op: str, state: ChainState) -> Operation | None:
        return self.generate_many(op, [state])[0]

    def generate_many(self, op: str, states: Sequence[ChainState]) -> list[Operation | None]:
        if op not in OPERATIONS:
            raise ValueError(f"op must be one of {OPERATIONS}, got {op!r}")
        states = list(states)
        if not states:
            return []
        return getattr(self, f"_{op}")(states)

    def _greedy(self, prompts, max_new, stop):
        return [row[0] for row in generate_scored(self.lm, prompts, max_new, temperature=0.0,
                                                  stop=stop, seed=self.seed)]

    def _add_column(self, states):
        prompts = [add_column_prompt(s) for s in states]
        first = self._greedy(prompts, self.max_new_tokens, ["\n\n"])
        parsed = []
        for p, (text, score) in zip(prompts, first):
            got = parse_add_column(text)
            self.stats.record("add_column", got is not None, p, text)
            parsed.append(got)
        row_prompts, where = [], []
        for k, (s, got) in enumerate(zip(states, parsed)):
            if got is None:
                continue
            for r in range(4, len(s.table) + 1):
                row_prompts.append(add_column_row_prompt(s, first[k][0], got[2], r))
                where.append(k)
        rest = self._greedy(row_prompts, self.row_value_tokens, ["\n"]) if row_prompts else []
        extra: dict[int, list[str]] = defaultdict(list)
        for k, (text, _) in zip(where, rest):
            extra[k].append(parse_row_value(text))
        out: list[Operation | None] = []
        for k, (s, got) in enumerate(zip(states, parsed)):
            if got is None:
                out.append(None)
                continue
            name, values, _ = got
            values = (values + extra[k])[:len(s.table)]
            out.append(Operation("add_column", {"name": name, "values": values},
                                 math.exp(first[k][1])))
        return out

    def _voted(self, states, prompts, parse, kind):
        replies = generate_scored(self.lm, prompts, self.max_new_tokens,
                                  temperature=self.temperature, n=self.n_samples,
                                  stop=["\n\n"], seed=self.seed)
        ranked = []
        for p, row in zip(prompts, replies):
            votes: dict[tuple[str, ...], float] = defaultdict(float)
            for text, score in row:
                got = parse(text)
                if got is not None:
                    votes[got] += math.exp(score)  # official: Σ exp(log p) per argument set
            self.stats.record(kind, bool(votes), p, row[0][0])
            ranked.append(sorted(votes.items(), key=lambda kv: -kv[1]))
        return ranked

    def _select_row(self, states):
        ranked = self._voted(states, [select_row_prompt(s) for s in states], parse_rows,
                             "select_row")
        out = []
        for rank in ranked:
            top = rank[:self.union_rows]
            union = set().union(*(set(k) for k, _ in top)) if top else set()
            conf = sum(c for _, c in top)
            if not union or "*" in union:
                out.append(Operation("select_row", {"rows": "*"}, conf))
            else:
                rows = sorted(int(x) for x in union if x.isdigit())
                out.append(Operation("select_row", {"rows": rows or "*"}, conf))
        return out

    def _select_column(self, states):
        ranked = self._voted(states, [select_column_prompt(s) for s in states], parse_columns,
                             "select_column")
        out = []
        for rank in ranked:
            top = rank[:self.union_columns]
            union = set().union(*(set(k) for k, _ in top)) if top else set()
            out.append(Operation("select_column", {"columns": sorted(union)},
                                 sum(c for _, c in top)))
        return out

    def _group_column(self, states):
        prompts = [group_prompt(s) for s in states]
        out = []
        for s, p, (text, score) in zip(states, prompts,
                                       self._greedy(prompts, self.max_new_tokens, ["\n\n"])):
            col = parse_group(text, list(s.table.columns))
            self.stats.record("group_column", col is not None, p, text)
            out.append(None if col is None else
                       Operation("group_column", {"column": col}, math.exp(score)))
        return out

    def _sort_column(self, states):
        prompts = [sort_prompt(s) for s in states]
        out = []
        for s, p, (text, score) in zip(states, prompts,
                                       self._greedy(prompts, self.max_new_tokens, ["\n\n"])):
            got = parse_sort(text, list(s.table.columns))
            self.stats.record("sort_column", got is not None, p, text)
            out.append(None if got is None else Operation(
                "sort_column", {"column": got[0], "ascending": got[1], "dtype": got[2]},
                math.exp(score)))
        return out


class LMReader:
    """The final query over a text backend ``lm``: "yes", "no", or "" when the reply does
    not parse. ``use_demo`` adds the four TabFact demos (official run: True)."""

    def __init__(self, lm, *, use_demo: bool = True, max_new_tokens: int = 8,
                 seed: int = 0) -> None:
        _check_lm(lm)
        self.lm, self.use_demo = lm, bool(use_demo)
        self.max_new_tokens = _positive("max_new_tokens", max_new_tokens)
        self.seed = int(seed)
        self.stats = ParseStats()

    def answer(self, state: ChainState) -> str:
        return self.answers([state])[0]

    def answers(self, states: Sequence[ChainState]) -> list[str]:
        prompts = [final_query_prompt(s, self.use_demo) for s in states]
        replies = self.lm.generate(prompts, self.max_new_tokens, temperature=0.0,
                                   stop=["\n"], seed=self.seed)
        out = []
        for p, row in zip(prompts, replies):
            a = parse_answer(row[0])
            self.stats.record("answer", a is not None, p, row[0])
            out.append(a or "")
        return out
