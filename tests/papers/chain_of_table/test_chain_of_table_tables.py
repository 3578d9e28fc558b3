"""The pure table operations: linearisation, the official add_column checks, selection,
grouping, numeric keys and sorting."""

from __future__ import annotations

import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.chain_of_table import (
    add_column,
    add_column_problem,
    group_block,
    group_summary,
    is_groupable,
    linearize,
    numeric_key,
    select_columns,
    select_rows,
    sort_rows,
)


@pytest.fixture
def df():
    return pd.DataFrame({"team": ["ants", "bees", "cats", "dogs"],
                         "conf": ["east", "west", "east", "east"],
                         "points": ["10", "3", "-7", "n/a"],
                         "history": ["founded 1984, renamed 1991", "founded 1950",
                                     "renamed 1999, founded 1971", "founded 2001"]})


def test_linearize_matches_the_official_pipe_format(df):
    text = linearize(df.iloc[:2], caption="league")
    assert text == ("table caption : league\n"
                    "col : team | conf | points | history\n"
                    "row 1 : ants | east | 10 | founded 1984, renamed 1991\n"
                    "row 2 : bees | west | 3 | founded 1950")
    assert linearize(df, max_rows=1).splitlines() == [
        "col : team | conf | points | history",
        "row 1 : ants | east | 10 | founded 1984, renamed 1991"]
    # non-string cells are written as text; the index does not matter
    assert linearize(pd.DataFrame({"a": [1, 2]}, index=[7, 3])) == "col : a\nrow 1 : 1\nrow 2 : 2"


def test_linearize_bad_inputs(df):
    with pytest.raises(TypeError, match="DataFrame"):
        linearize([[1, 2]])
    with pytest.raises(ValueError, match="max_rows"):
        linearize(df, max_rows=0)
    with pytest.raises(TypeError, match="caption"):
        linearize(df, caption=3)
    with pytest.raises(ValueError, match="duplicate"):
        linearize(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    with pytest.raises(TypeError, match="column names"):
        linearize(pd.DataFrame([[1, 2]]))


def test_add_column_validation_follows_the_official_checks(df):
    years = ["1984", "1950", "1971", "2001"]
    assert add_column_problem(df, "founded year", years) is None
    out = add_column(df, "founded year", years)
    assert list(out.columns)[-1] == "founded year" and list(out["founded year"]) == years
    assert "founded year" not in df.columns  # pure
    cases = {
        "number of teams": (years, "number of"),
        "same": (["1", "1", "1", "1"], "identical"),
        "empty": (["1984", "", "1971", "2001"], "empty"),
        "missing": (["1984", None, "1971", float("nan")], "empty"),  # not the text "None"
        "team": (["x", "y", "z", "w"], "already exists"),
        "copy": (list(df["conf"]), "same content"),
        "made up": (["1984", "1950", "1971", "1999"], "not substrings"),
    }
    for name, (values, why) in cases.items():
        assert why in add_column_problem(df, name, values), name
        with pytest.raises(ValueError, match=why):
            add_column(df, name, values)
    # a value must be a substring of the *same row's* cell: shifted years are rejected
    assert "not substrings" in add_column_problem(df, "y", years[1:] + years[:1])
    with pytest.raises(ValueError, match="one entry per row"):
        add_column(df, "x", ["1"])
    with pytest.raises(ValueError, match="name"):
        add_column(df, "  ", years)


def test_select_rows_is_one_based_ordered_and_renumbered(df):
    out = select_rows(df, [4, 1])
    assert list(out["team"]) == ["ants", "dogs"] and list(out.index) == [0, 1]
    assert linearize(out).splitlines()[1].startswith("row 1 : ants")
    assert select_rows(df, [9, 0]).equals(df)  # nothing valid: keep all
    assert select_rows(df, []).equals(df)
    with pytest.raises(TypeError, match="row_ids"):
        select_rows(df, ["row 1"])


def test_select_columns(df):
    assert list(select_columns(df, ["POINTS", "team", "nope"]).columns) == ["team", "points"]
    assert select_columns(df, ["nope"]).equals(df)
    with pytest.raises(TypeError, match="one string"):
        select_columns(df, "team")


def test_group_summary_and_block(df):
    g = group_summary(df, "conf")
    assert g.values.tolist() == [["east", 3], ["west", 1]]
    assert group_block(g) == ("Group the rows according to column: conf.\n"
                              "Group ID | conf | Count\nGroup 1 | east | 3\nGroup 2 | west | 1")
    # ties keep sorted value order; an empty value is shown as [Empty Cell]
    t = pd.DataFrame({"c": ["b", "", "a", "b", "a", ""]})
    assert group_summary(t, "c").values.tolist() == [["", 2], ["a", 2], ["b", 2]]
    assert "Group 1 | [Empty Cell] | 2" in group_block(group_summary(t, "c"))
    assert is_groupable(df, "conf") and not is_groupable(df, "team")  # 2/4 vs 4/4 distinct
    assert not is_groupable(df, "missing")
    with pytest.raises(ValueError, match="not a column"):
        group_summary(df, "missing")
    with pytest.raises(TypeError, match="summary"):
        group_block(df)


def test_numeric_key_is_the_official_only_keep_num_and_first_dot():
    assert numeric_key("1,234.5") == 1234.5
    assert numeric_key("-3.2.1 km") == -3.21
    assert numeric_key(" -7") == -7.0
    assert numeric_key("t5") == 5.0
    assert numeric_key("a.b") is None and numeric_key("") is None and numeric_key("n/a") is None


def test_sort_rows(df):
    assert list(sort_rows(df, "points")["team"]) == ["cats", "bees", "ants", "dogs"]
    assert list(sort_rows(df, "points", ascending=False)["team"]) == ["ants", "bees", "cats",
                                                                      "dogs"]
    assert list(sort_rows(df, "team", False, "string")["team"]) == ["dogs", "cats", "bees",
                                                                    "ants"]
    with pytest.raises(ValueError, match="dtype"):
        sort_rows(df, "points", dtype="float")
    with pytest.raises(ValueError, match="not a column"):
        sort_rows(df, "nope")
    with pytest.raises(TypeError, match="ascending"):
        sort_rows(df, "points", ascending="yes")


@given(st.lists(st.one_of(st.integers(-99, 99).map(str), st.sampled_from(["", "x", "-"])),
                min_size=1, max_size=12), st.booleans())
def test_sort_rows_is_a_stable_permutation_with_unkeyed_cells_last(cells, asc):
    t = pd.DataFrame({"v": cells, "i": [str(k) for k in range(len(cells))]})
    out = sort_rows(t, "v", ascending=asc)
    assert sorted(out["i"], key=int) == list(t["i"])
    keys = [numeric_key(v) for v in out["v"]]
    keyed = [k for k in keys if k is not None]
    assert keys[:len(keyed)] == keyed  # unkeyed cells at the end
    assert keyed == sorted(keyed, reverse=not asc)


def test_missing_cells_anywhere_become_empty_cells():
    """A NaN/None below the first row used to reach " | ".join (pandas keeps NaN through
    astype(str) of an object column); every missing cell is now the empty cell."""
    import numpy as np

    df = pd.DataFrame({"team": ["ants", "bees", None],
                       "points": [10.0, np.nan, 3.0],
                       "when": pd.to_datetime(["2020-01-01", None, "2021-05-02"]),
                       "note": pd.array(["x", pd.NA, "z"], dtype="string")})
    assert linearize(df).splitlines() == [
        "col : team | points | when | note",
        "row 1 : ants | 10.0 | 2020-01-01 00:00:00 | x",
        "row 2 : bees |  |  | ",
        "row 3 :  | 3.0 | 2021-05-02 00:00:00 | z"]
    # an object column of strings with a missing cell far below the first row
    strings = pd.DataFrame({"a": ["p"] * 5 + [None], "b": ["q"] * 6})
    assert linearize(strings).splitlines()[-1] == "row 6 :  | q"
    # the operations see empty cells too: grouping skips them, the block names them
    assert is_groupable(pd.DataFrame({"a": [None, "x", "x", None]}), "a")
    assert not is_groupable(pd.DataFrame({"a": [None, None]}), "a")
    summary = group_summary(pd.DataFrame({"a": ["x", None, "x"]}), "a")
    assert list(summary["a"]) == ["x", ""] and list(summary["Count"]) == [2, 1]
    assert "Group 2 | [Empty Cell] | 1" in group_block(summary)
    # a table that already is all strings is returned as is (no copy)
    from iclr24.papers.chain_of_table.tables import as_table

    clean = pd.DataFrame({"a": ["1", "2"]})
    assert as_table(clean) is clean
    assert as_table(strings) is not strings and as_table(strings)["a"].iloc[5] == ""
