"""Prompts, parsers and the swap mapping of Auto-J against the official code's behaviour."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.autoj import (
    PAIRWISE_TIE_TEMPLATE,
    SINGLE_TEMPLATE,
    build_prompt,
    build_scenario_prompt,
    parse_pairwise_verdict,
    parse_rating,
    swap_verdict,
    wrap_chat,
)


def test_pairwise_prompt_matches_official_layout():
    p = build_prompt("pairwise_tie", "Q?", "A1", "A2")
    assert p.startswith("[INST] You are assessing two submitted responses")
    assert p.endswith("comparison you've provided. [/INST]")
    assert "[BEGIN DATA]\n***\n[Query]: Q?\n***\n[Response 1]: A1\n***\n[Response 2]: A2\n***\n" \
           "[END DATA]" in p
    assert '"So, the final decision is Response 1 / Response 2 / Tie"' in p
    # the official llama2_wrapper without system prompt: "[INST] {input} [/INST]"
    official = "[INST] " + PAIRWISE_TIE_TEMPLATE.format(prompt="Q?", response="A1",
                                                        response_another="A2") + " [/INST]"
    assert p == official


def test_single_prompt_and_format_options():
    raw = build_prompt("single", "Q", "R", chat_format="none")
    assert raw == SINGLE_TEMPLATE.format(prompt="Q", response="R")
    assert "grade the response:\n  \n[BEGIN DATA]" in raw  # the official stray spaces
    assert raw.endswith('for example: "Rating: [[5]]".')
    assert build_prompt("single", "Q", "R", chat_format=lambda m: "<u>" + m) == "<u>" + raw
    assert build_scenario_prompt("hi", "none").endswith("Query:\nhi\nScenario:\n")


def test_prompt_bad_inputs():
    with pytest.raises(ValueError, match="protocol"):
        build_prompt("pairwise", "q", "a", "b")
    with pytest.raises(ValueError, match="response_b"):
        build_prompt("pairwise_tie", "q", "a")
    with pytest.raises(ValueError, match="response_b"):
        build_prompt("single", "q", "a", "b")
    with pytest.raises(TypeError, match="query"):
        build_prompt("single", None, "a")
    with pytest.raises(ValueError, match="chat_format"):
        wrap_chat("x", "chatml")
    with pytest.raises(TypeError, match="return a str"):
        wrap_chat("x", lambda m: 3)


@pytest.mark.parametrize("text,expected", [
    ("So, the final decision is Response 1", 0),
    ("blah. So, the final decision is Response 2.", 1),
    ("So, the final decision is Tie", 2),
    ("so, the final decision is TIE", 2),  # lower-cased after the anchor
    ("So, the final decision is response 1", 0),
    ("No anchor here: Response 1", -1),
    ("So, the final decision is Response", -1),
    ("So, the final decision is  Response 1", 0),  # the rest is stripped (official)
    ("So, the final decision is \n Tie.", 2),
    ("So, the final decision is\nTie", -1),  # no anchor: it ends in one space
    ("So, the final decisionis Response 1", -1),  # the anchor itself is exact
    ("So, the Final Decision is Response 1", -1),  # the anchor itself is case-sensitive
    ("", -1),
])
def test_parse_pairwise_verdict(text, expected):
    assert parse_pairwise_verdict(text) == expected


def test_pairwise_parser_takes_last_anchor():
    text = ("At first the final decision is Response 1, but after more thought, "
            "So, the final decision is Response 2")
    assert parse_pairwise_verdict(text) == 1
    assert parse_pairwise_verdict("final decision is Tie ... final decision is none") == -1


def test_parse_rating_last_anchor_and_failures():
    assert parse_rating("Rating: [[3]] then Rating: [[7]]") == 7.0
    assert parse_rating("Rating: [[ 8.5 ]]") == 8.5
    assert math.isnan(parse_rating("no rating"))
    assert math.isnan(parse_rating("Rating: [[seven]]"))
    assert math.isnan(parse_rating("Rating: [[7"))
    # off Auto-J's 1-10 scale: unparsed (NaN), the official code would take the number
    for text in ("Rating: [[11]]", "Rating: [[0]]", "Rating: [[-3]]", "Rating: [[10.5]]"):
        assert math.isnan(parse_rating(text)), text
    assert parse_rating("Rating: [[1]]") == 1.0 and parse_rating("Rating: [[10]]") == 10.0
    assert parse_rating("Rating: [[11]]", official_compat=True) == 11.0
    assert parse_rating("Rating: [[inf]]", official_compat=True) == 0.0
    assert parse_rating("no rating", official_compat=True) == 0.0
    assert parse_rating("Rating: [[4]] and Rating: [[x]]", official_compat=True) == 0.0
    with pytest.raises(TypeError, match="text"):
        parse_rating(None)
    with pytest.raises(TypeError, match="text"):
        parse_pairwise_verdict(3)


def test_swap_maps_0_and_1_keeps_tie_and_unparsed():
    assert [swap_verdict(v) for v in (0, 1, 2, -1)] == [1, 0, 2, -1]
    with pytest.raises(ValueError, match="verdict"):
        swap_verdict(3)
    with pytest.raises(TypeError, match="verdict"):
        swap_verdict("0")


@given(st.sampled_from([-1, 0, 1, 2]))
def test_swap_is_an_involution(v):
    assert swap_verdict(swap_verdict(v)) == v


@given(st.text(max_size=40), st.sampled_from(["Response 1", "Response 2", "Tie"]))
def test_any_prefix_then_decision_parses(prefix, decision):
    expected = {"Response 1": 0, "Response 2": 1, "Tie": 2}[decision]
    assert parse_pairwise_verdict(prefix + " So, the final decision is " + decision) == expected


@given(st.integers(1, 10), st.text(alphabet="abc .", max_size=30))
def test_rating_round_trip(k, critique):
    assert parse_rating(f"{critique} Rating: [[{k}]]") == float(k)


@given(st.text(alphabet=" \n\t", max_size=4), st.sampled_from(["Response 1", "Response 2", "Tie"]))
def test_whitespace_after_the_anchor_is_stripped(space, decision):
    expected = {"Response 1": 0, "Response 2": 1, "Tie": 2}[decision]
    assert parse_pairwise_verdict("So, the final decision is " + space + decision) == expected


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_rating_is_kept_exactly_on_the_scale(x):
    got = parse_rating(f"Rating: [[{x!r}]]")
    if 1 <= x <= 10:
        assert got == x
    else:
        assert math.isnan(got)
