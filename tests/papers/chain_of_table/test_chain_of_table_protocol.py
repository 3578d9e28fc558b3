"""The official prompts and parsers, and the LM planner / argument generator / reader over a
stub backend whose replies are scripted (voting, unions, skips, counted parse failures)."""

from __future__ import annotations

import math

import pytest

from iclr24.papers.chain_of_table import (
    END,
    ChainOfTable,
    ChainState,
    LMArguments,
    LMPlanner,
    LMReader,
    generate_scored,
    make_table_task,
    parse_add_column,
    parse_answer,
    parse_columns,
    parse_group,
    parse_plan,
    parse_rows,
    parse_sort,
    plan_prompt,
)
from iclr24.papers.chain_of_table import prompts as P


@pytest.fixture
def state():
    t = make_table_task(8, "derived", seed=0)
    return ChainState(t.table, t.statement, t.caption)


def test_plan_prompt_layout(state):
    p = plan_prompt(state)
    assert p.startswith(P.PLAN_ADD_COLUMN_DEMO)  # one demo per candidate, in order
    assert P.PLAN_FULL_DEMO_SIMPLE in p and p.endswith("Function Chain: ")
    assert ("The next operation must be one of f_add_column() or f_select_row() or "
            "f_select_column() or f_group_column() or f_sort_column().") in p
    assert "/*\ncol : team | conference | wins | losses | points | history\nrow 1 : " in p
    from iclr24.papers.chain_of_table import Operation, apply_operation

    s2 = apply_operation(state, "select_row", Operation("select_row", {"rows": [2, 4]}))
    p2 = plan_prompt(s2)
    assert p2.endswith("Function Chain: f_select_row(row 1, row 2) ->")
    assert P.PLAN_ADD_COLUMN_DEMO not in p2 and P.PLAN_SELECT_ROW_DEMO not in p2
    assert "f_select_column() or f_group_column() or f_sort_column() or <END>." in p2


def test_operation_prompts(state):
    p = P.add_column_prompt(state)
    assert "Statement: in the _s , " in p  # digits masked
    assert p.endswith("The existing columns are: team, conference, wins, losses, points, "
                      "history.\nExplanation:")
    assert p.rsplit("/*\n", 1)[1].count("\nrow ") == 3  # the table shows its first 3 rows
    assert P.select_row_prompt(state).endswith("statement : " + state.statement + "\nexplain :")
    sc = P.select_column_prompt(state)
    assert '"columns": ["team", "conference", "wins", "losses", "points", "history"],' in sc
    assert sc.endswith("statement : " + state.statement + ".\nsimilar words link to columns :\n")
    last = P.sort_prompt(state).rsplit("/*\n", 1)[1]
    assert last.count("\nrow ") == 3 and not last.startswith("table caption")  # official
    assert P.group_prompt(state).rsplit("/*\n", 1)[1].count("\nrow ") == 5
    fq = P.final_query_prompt(state)
    assert fq.count("If the statement is true, answer YES") == 2 and fq.endswith(
        "Statement: " + state.statement + "\nThe answer is:")
    assert P.GENERAL_DEMO not in P.final_query_prompt(state, use_demo=False)


def test_parsers_on_well_formed_and_malformed_replies():
    cands = ("select_column", "group_column", "sort_column", END)
    assert parse_plan(" f_select_row(row 1) -> f_sort_column(points) -> <END>", cands) == \
        "sort_column"
    assert parse_plan(" <END>", cands) == END and parse_plan("I think so", cands) is None
    reply = (" To tell this statement is true or false, we need to know the year. We extract "
             "the value from column \"history\" and create a different column \"year\" for "
             "each row. The datatype is datetype.\nTherefore, the answer is: f_add_column(year)"
             ". The value: 1984 | 1950 | 1971")
    name, values, expl = parse_add_column(reply)
    assert name == "year" and values == ["1984", "1950", "1971"]
    assert expl.startswith("We extract the value from column") and expl.endswith("The value:")
    assert parse_add_column("f_add_column(year). The value: 1 | 2") is None
    assert parse_add_column("The value: 1 | 2 | 3") is None
    assert parse_rows("explain ... The answer is : f_row([row 5, row 1])") == ("1", "5")
    assert parse_rows("f_row([*])") == ("*",) and parse_rows("row 5") is None
    assert parse_columns("The answer is : f_col([wins, team])") == ("team", "wins")
    assert parse_columns("f_col(team)") is None
    assert parse_group("Therefore, the answer is: f_group(conference).", ["conference"]) == \
        "conference"
    assert parse_group("f_group(city)", ["conference"]) is None
    ok = ' The datatype is Numerical.\nTherefore, the answer is: f_sort(points), the order is ' \
         '"large to small".'
    assert parse_sort(ok, ["points"]) == ("points", False, "Numerical")
    assert parse_sort(ok.replace("large to small", "big first"), ["points"]) is None
    assert parse_sort(ok, ["wins"]) is None
    assert [parse_answer(x) for x in (" YES", "no.", " True", "False!", "maybe", "")] == \
        ["yes", "no", "yes", "no", None, None]


class StubLM:
    """Scripted replies by prompt kind; samples j get score -j (so exp(score) votes)."""

    supports_generate = True
    supports_logprobs = False

    def __init__(self, replies):
        self.replies = replies
        self.calls = []

    def _kind(self, prompt):
        if "Function Chain:" in prompt[-300:]:
            return "plan"
        for key, marker in (("row_value", "The value:"), ("select_row", "explain :"),
                            ("select_column", "link to columns :"),
                            ("answer", "The answer is:")):
            if prompt.rstrip().endswith(marker.rstrip()):
                return key
        if "f_group()" in prompt[:200]:
            return "group_column"
        if "f_sort()" in prompt[:200]:
            return "sort_column"
        return "add_column"

    def generate_scored(self, prompts, max_new_tokens, *, temperature=0.0, top_p=1.0, n=1,
                        stop=None, seed=None):
        out = []
        for p in prompts:
            kind = self._kind(p)
            self.calls.append((kind, n, temperature))
            r = self.replies[kind]
            texts = r(p) if callable(r) else r
            texts = [texts] if isinstance(texts, str) else list(texts)
            out.append([(texts[j % len(texts)], -float(j)) for j in range(n)])
        return out

    def generate(self, prompts, max_new_tokens, **kw):
        return [[t for t, _ in row] for row in self.generate_scored(prompts, max_new_tokens,
                                                                    **kw)]


def test_lm_components_vote_union_and_count(state):
    lm = StubLM({
        "plan": " f_select_row(row 1) -> <END>",
        # 8 samples, sample j scored -j: {3} gets 1 + e^-1, {5} e^-2 + e^-4, {1, 2} e^-6
        "select_row": ["f_row([row 3])", "f_row([row 3])", "f_row([row 5])", "garbage",
                       "f_row([row 5])", "x", "f_row([row 1, row 2])", "y"],
        "select_column": "f_col([team, wins])",
        "group_column": "f_group(conference).",
        "sort_column": "nothing",
        "add_column": "nothing",
        "row_value": "1999",
        "answer": " NO",
    })
    planner = LMPlanner(lm)
    assert planner.next_operation(state) == "select_row"
    args = LMArguments(lm)
    op = args.generate("select_row", state)
    # the union of the top-2 sets by Σ exp(score): {3} and {5}
    assert op.args == {"rows": [3, 5]}
    assert op.confidence == pytest.approx(1 + math.exp(-1) + math.exp(-2) + math.exp(-4))
    assert lm.calls[-1] == ("select_row", 8, 0.5)
    assert LMArguments(lm, union_rows=1).generate("select_row", state).args == {"rows": [3]}
    assert args.generate("select_column", state).args == {"columns": ["team", "wins"]}
    assert args.generate("group_column", state).args == {"column": "conference"}
    assert args.generate("sort_column", state) is None  # unparsable -> skip
    assert args.generate("add_column", state) is None
    assert args.stats.parse_rate("sort_column") == 0.0
    assert args.stats.parse_rate("select_row") == 1.0
    assert math.isnan(args.stats.parse_rate("never"))
    reader = LMReader(lm)
    assert reader.answer(state) == "no"
    lm.replies["answer"] = " perhaps"
    assert reader.answer(state) == "" and reader.stats.parse_rate("answer") == 0.5
    with pytest.raises(ValueError, match="op must be"):
        args.generate("join", state)
    with pytest.raises(TypeError, match="generate"):
        LMPlanner(object())
    with pytest.raises(ValueError, match="strategy"):
        LMPlanner(lm, strategy="beam")
    with pytest.raises(ValueError, match="n_samples"):
        LMArguments(lm, n_samples=0)


def test_add_column_asks_the_remaining_rows_and_validates(state):
    years = [h.split("founded ")[1][:4] for h in state.table["history"]]

    def row_value(prompt):  # the one-row table is the last /* */ block
        last = prompt.rsplit("/*\n", 1)[1]
        return " " + last.split("founded ")[1][:4] + " | extra"

    lm = StubLM({
        "plan": "nothing legal",
        "add_column": (" To tell this statement is true or false, we need the year. We extract "
                       "the value from column \"history\" and create a different column "
                       "\"founded\" for each row. The datatype is datetype.\nTherefore, the "
                       f"answer is: f_add_column(founded). The value: {' | '.join(years[:3])}"),
        "row_value": row_value, "answer": "YES",
        "select_row": "f_row([*])", "select_column": "x", "group_column": "x",
        "sort_column": "x"})
    op = LMArguments(lm).generate("add_column", state)
    assert op.args == {"name": "founded", "values": years}
    assert sum(k == "row_value" for k, _, _ in lm.calls) == len(years) - 3
    # the whole protocol: unparsable plan -> END at the start; the reader still answers
    cot = ChainOfTable(LMPlanner(lm), LMArguments(lm), LMReader(lm))
    res = cot.run(state.table, state.statement)
    assert res.chain == () and res.answer == "yes"


def test_generate_scored_fallbacks():
    class Plain:
        supports_logprobs = True

        def generate(self, prompts, max_new_tokens, *, temperature, n, stop, seed):
            return [["a", "b", "a"][:n] for _ in prompts]

        def logprobs(self, prompt, continuation):
            return [-1.0, -0.5] if continuation == "a" else [-3.0]

    assert generate_scored(Plain(), ["p"], 4, temperature=0.5, n=3) == \
        [[("a", -1.5), ("b", -3.0), ("a", -1.5)]]
    assert generate_scored(Plain(), ["p"], 4, temperature=0.0, n=1) == [[("a", 0.0)]]
