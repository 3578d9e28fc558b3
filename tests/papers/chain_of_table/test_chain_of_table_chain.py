"""The Chain-of-Table loop: the partial order and once-only rule, skips, the group block
reaching the reader, and the loop's argument checks."""

from __future__ import annotations

import itertools

import pandas as pd
import pytest

from iclr24.papers.chain_of_table import (
    END,
    INIT,
    OPERATION_GRAPH,
    OPERATIONS,
    ChainOfTable,
    ChainState,
    Operation,
    RandomPlanner,
    RuleArguments,
    ScriptedPlanner,
    ShortContextReader,
    apply_operation,
    final_query_prompt,
    make_table_task,
)

OFFICIAL = {  # utils/chain.py possible_next_operation_dict, verbatim
    "<init>": ["add_column", "select_row", "select_column", "group_column", "sort_column"],
    "add_column": ["select_row", "select_column", "group_column", "sort_column", "<END>"],
    "select_row": ["select_column", "group_column", "sort_column", "<END>"],
    "select_column": ["group_column", "sort_column", "<END>"],
    "group_column": ["sort_column", "<END>"],
    "sort_column": ["<END>"],
}


def test_operation_graph_is_the_official_partial_order():
    assert {k: list(v) for k, v in OPERATION_GRAPH.items()} == OFFICIAL
    # a strict order: every edge goes forward in OPERATIONS, so no operation can repeat
    rank = {op: i for i, op in enumerate(OPERATIONS)}
    for src, dsts in OPERATION_GRAPH.items():
        for d in dsts:
            if d != END:
                assert src == INIT or rank[d] > rank[src]


class _AlwaysFirst:
    """Takes the first non-END candidate: the longest chain the graph allows."""

    def next_operation(self, state):
        return next((c for c in state.candidates() if c != END), END)


class _Accept:
    """Arguments that are valid for the synthetic table (rule arguments, * otherwise)."""

    def generate(self, op, state):
        fallback = {"select_row": {"rows": "*"}, "select_column": {"columns": ["team"]},
                    "group_column": {"column": "conference"},
                    "sort_column": {"column": "points", "ascending": False,
                                    "dtype": "numerical"}}
        got = RuleArguments().generate(op, state)
        return got if got is not None else (Operation(op, fallback[op]) if op in fallback
                                            else None)


class _Counter:
    def answer(self, state):
        return "yes"


def test_each_operation_at_most_once_in_graph_order():
    task = make_table_task(12, "combo", seed=3)
    res = ChainOfTable(_AlwaysFirst(), _Accept(), _Counter()).run(task.table, task.statement)
    tried = [c.removeprefix("skip ").split("(")[0].removeprefix("f_") for c in res.chain]
    assert tried == list(OPERATIONS)  # all five, once each, in order (applied or skipped)
    assert [op.name for op in res.state.applied][:4] == list(OPERATIONS[:4])
    for seed in range(30):  # random legal chains never repeat and respect the order
        t = make_table_task(10, ("compare", "count", "derived")[seed % 3], seed=seed)
        r = ChainOfTable(RandomPlanner(seed), _Accept(), _Counter()).run(t.table, t.statement)
        names = [op.name for op in r.state.applied] + list(r.state.skipped)
        assert len(names) == len(set(names))
        applied = [OPERATIONS.index(op.name) for op in r.state.applied]
        assert applied == sorted(applied)


def test_a_skipped_operation_leaves_the_candidates():
    task = make_table_task(10, "compare", seed=0)
    s = ChainState(task.table, task.statement)
    s1 = apply_operation(s, "add_column", None)
    assert s1.chain == ("skip f_add_column()",) and s1.last_operation == INIT
    assert s1.candidates() == OPERATION_GRAPH[INIT][1:]
    s2 = apply_operation(s1, "group_column", Operation("group_column", {"column": "team"}))
    assert s2.chain[-1] == "skip f_group_column()"  # team is not groupable (all distinct)
    assert "group_column" not in s2.candidates()
    s3 = apply_operation(s2, "sort_column", Operation("sort_column", {
        "column": "points", "ascending": True, "dtype": "string"}))
    assert s3.chain[-1] == "skip f_sort_column()"  # only Numerical sorts are executed
    with pytest.raises(ValueError, match="not legal"):
        apply_operation(s3, "sort_column", None)
    with pytest.raises(ValueError, match="op.name"):
        apply_operation(s, "select_row", Operation("group_column", {}))


def test_select_star_and_renumbered_chain_strings():
    task = make_table_task(10, "compare", seed=1)
    s = ChainState(task.table, task.statement)
    star = apply_operation(s, "select_row", Operation("select_row", {"rows": "*"}))
    assert star.chain == ("f_select_row(*)",) and star.table is s.table
    picked = apply_operation(s, "select_row", Operation("select_row", {"rows": [7, 3]}))
    assert picked.chain == ("f_select_row(row 1, row 2)",)
    assert list(picked.table["team"]) == [task.table.team[2], task.table.team[6]]
    assert picked.kept_chain() == "f_select_row(row 1, row 2)"
    # an already-sorted column is not sorted again (official check)
    srt = Operation("sort_column", {"column": "points", "ascending": True,
                                    "dtype": "numerical"})
    once = apply_operation(s, "sort_column", srt)
    assert once.chain == ("f_sort_column(points)",)
    assert list(once.table["points"].astype(int)) == sorted(task.table["points"].astype(int))
    again = apply_operation(ChainState(once.table, task.statement), "sort_column", srt)
    assert again.chain == ("skip f_sort_column()",)


def test_add_column_rejections_are_skips():
    task = make_table_task(10, "derived", seed=2)
    s = ChainState(task.table, task.statement)
    fake = Operation("add_column", {"name": "founded year", "values": ["1000"] * 9 + ["1001"]})
    assert apply_operation(s, "add_column", fake).chain == ("skip f_add_column()",)
    good = RuleArguments().generate("add_column", s)
    out = apply_operation(s, "add_column", good)
    assert out.chain == ("f_add_column(founded year)",)
    assert "founded year" in out.table.columns and "founded year" not in task.table.columns


def test_the_group_block_reaches_the_reader():
    task = make_table_task(40, "count", seed=4)
    reader = ShortContextReader(window=5)
    plain = ChainState(task.table, task.statement)
    grouped = apply_operation(plain, "group_column",
                              Operation("group_column", {"column": "conference"}))
    assert grouped.table.equals(plain.table)  # group does not change the table
    block = grouped.group_text()
    assert block.startswith("Group the rows according to column: conference.")
    assert block in final_query_prompt(grouped) and "Group ID" not in final_query_prompt(plain)
    assert block in reader.reader_text(grouped)
    res = ChainOfTable(ScriptedPlanner({task.statement: ["group_column"]}), RuleArguments(),
                       reader).run(task.table, task.statement)
    assert res.group_block == block and res.answer == task.answer
    # the reader uses the block: the same table without it gives the 5-row count instead
    answers = set()
    for seed in range(12):
        t = make_table_task(40, "count", seed=seed)
        s = ChainState(t.table, t.statement)
        g = apply_operation(s, "group_column", Operation("group_column", {"column":
                                                                          "conference"}))
        assert reader.answer(g) == t.answer
        answers.add(reader.answer(s) == t.answer)
    assert False in answers


def test_chain_of_table_argument_checks_and_batch_equivalence():
    task = make_table_task(10, "superlative", seed=5)

    class Bad:
        def next_operation(self, state):
            return "add_column" if state.applied else "select_row"

    class Ender:
        def next_operation(self, state):
            return END

    with pytest.raises(TypeError, match="planner"):
        ChainOfTable(object(), RuleArguments(), _Counter())
    with pytest.raises(TypeError, match="reader"):
        ChainOfTable(Ender(), RuleArguments(), object())
    with pytest.raises(ValueError, match="max_ops"):
        ChainOfTable(Ender(), RuleArguments(), _Counter(), max_ops=-1)
    cot = ChainOfTable(Bad(), _Accept(), _Counter())
    with pytest.raises(ValueError, match="the planner chose"):  # add_column after select_row
        cot.run(task.table, task.statement)
    ended = ChainOfTable(Ender(), RuleArguments(), _Counter()).run(task.table, task.statement)
    assert ended.chain == () and ended.final_table.equals(task.table)  # END at the start
    with pytest.raises(ValueError, match="equal lengths"):
        cot.run_batch([task.table], [])
    with pytest.raises(ValueError, match="statements"):
        cot.run(task.table, "  ")
    tasks = [make_table_task(12, k, seed=i) for i, k in
             enumerate(itertools.islice(itertools.cycle(["compare", "count", "combo"]), 6))]
    scripted = ScriptedPlanner({t.statement: t.oracle_chain for t in tasks})
    cot = ChainOfTable(scripted, RuleArguments(), ShortContextReader())
    batch = cot.run_batch([t.table for t in tasks], [t.statement for t in tasks])
    single = [cot.run(t.table, t.statement) for t in tasks]
    assert [r.chain for r in batch] == [r.chain for r in single]
    assert [r.answer for r in batch] == [t.answer for t in tasks]
    with pytest.raises(ValueError, match="Operation.name"):
        Operation("join", {})
    with pytest.raises(TypeError, match="DataFrame"):
        cot.run([[1]], "x")
    assert isinstance(batch[0].final_table, pd.DataFrame)
