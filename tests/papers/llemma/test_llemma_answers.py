"""Minerva answer extraction and normalisation: one test per rule, in the official order."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.papers.llemma import (
    INVALID_ANSWER,
    REMOVED_EXPRESSIONS,
    SUBSTITUTIONS,
    extract_final_answer,
    format_final_answer,
    normalize_tex,
)

# --- extraction -----------------------------------------------------------------------------

def test_extract_takes_the_text_between_the_markers():
    text = "37 * 24 = 888.\nFinal Answer: The final answer is $893$. I hope it is correct."
    assert extract_final_answer(text) == "$893$"


def test_extract_works_when_generation_was_cut_at_the_end_sequence():
    # the stop string is removed from the completion; extraction appends it back
    assert extract_final_answer("Final Answer: The final answer is $\\frac{1}{2}$. ") == \
        "$\\frac{1}{2}$"


def test_extract_takes_the_first_final_answer_and_is_lazy():
    text = ("Final Answer: The final answer is $1$. I hope it is correct.\n"
            "Final Answer: The final answer is $2$. I hope it is correct.")
    assert extract_final_answer(text) == "$1$"


def test_extract_dot_is_any_character_as_officially():
    assert extract_final_answer("Final Answer: The final answer is $5$! I hope it is correct.") \
        == "$5$"


def test_extract_invalid_without_marker_or_across_lines():
    assert extract_final_answer("The answer is 5.") == INVALID_ANSWER
    assert extract_final_answer("") == INVALID_ANSWER
    assert extract_final_answer("Final Answer: The final answer is $5\n$. I hope it is correct.") \
        == INVALID_ANSWER


def test_format_round_trips_through_extract():
    for a in ["893", "\\frac{1}{2}", "[2,5)"]:
        assert extract_final_answer("x\n" + format_final_answer(a)) == f"${a}$"
        assert normalize_tex(extract_final_answer(format_final_answer(a))) == a


def test_extract_rejects_non_strings():
    with pytest.raises(TypeError, match="text must be a str"):
        extract_final_answer(5)


# --- the lists are the official ones, in order --------------------------------------------

def test_lists_match_the_official_code():
    assert SUBSTITUTIONS[:2] == (("an ", ""), ("a ", ""))
    assert SUBSTITUTIONS[-1] == ("\\text{m}", "\\text{}")
    assert len(SUBSTITUTIONS) == 10 and len(REMOVED_EXPRESSIONS) == 42
    assert REMOVED_EXPRESSIONS[0] == "square" and REMOVED_EXPRESSIONS[-1] == "\\dots"
    assert "\\text{\ns}" in REMOVED_EXPRESSIONS and "\\text{\n}" in REMOVED_EXPRESSIONS
    # "\text{}^2" must be removed before the bare "\text{}" or it would never match
    assert REMOVED_EXPRESSIONS.index("\\text{}^2") < REMOVED_EXPRESSIONS.index("\\text{}")


# --- step 1: after the last '=' -------------------------------------------------------------

def test_rule_last_equals():
    assert normalize_tex("x=3") == "3"
    assert normalize_tex("$a=b=7$") == "7"
    assert normalize_tex("$x=3$ or $x=5$") == "5"


# --- step 2: substitutions ------------------------------------------------------------------

def test_rule_drop_an_and_a():
    assert normalize_tex("an integer 5") == "integer5"  # only "integers" is a removed word
    assert normalize_tex("a 7") == "7"
    assert normalize_tex("banana 3") == "banan3"  # "a " inside a word is dropped too (lossy)


def test_rule_dot_dollar_and_escaped_dollar_and_spaces():
    assert normalize_tex("$12.$") == "12"
    assert normalize_tex("\\$12") == "12"
    assert normalize_tex("$\\$12.50$") == "12.50"
    assert normalize_tex("1\\ 000") == "1000"
    assert normalize_tex("$x + 1$") == "x+1"


def test_rule_mbox_and_text_and():
    assert normalize_tex("\\mbox{cm}") == ""  # mbox -> text, then cm removed, \text{} removed
    assert normalize_tex("$2\\text{ and }3$") == "23"  # -> 2,3 -> digits rule joins them
    assert normalize_tex("$x,\\text{and}y$") == "x,y"
    assert normalize_tex("$5\\text{m}$") == "5"  # \text{m} -> \text{} -> removed


# --- step 3: removed expressions -----------------------------------------------------------

@pytest.mark.parametrize("unit", ["inches", "dollars", "degrees", "cm", "feet", "mph", "hours",
                                  "units", "ways", "points", "cents", "meters", "students"])
def test_rule_unit_words_removed(unit):
    assert normalize_tex(f"5 {unit}") == "5"


def test_rule_removal_order_and_tex_fillers():
    assert normalize_tex("$8\\text{ cm}^2$") == "8"  # cm -> \text{}^2 -> removed whole
    assert normalize_tex("$90^\\circ$") == "90"
    assert normalize_tex("$90^{\\circ}$") == "90"
    assert normalize_tex("$10{,}000$") == "10000"
    assert normalize_tex("$1,\\!000$") == "1000"
    assert normalize_tex("$5\\;$") == "5"
    assert normalize_tex('"5"') == "5"
    assert normalize_tex("$1,2,\\ldots$") == "12"
    assert normalize_tex("$3^\\mathrm{th}$") == "3^"
    assert normalize_tex("left") == "le"  # "ft" is deleted even inside a word (lossy, official)


# --- step 4: first $...$ ----------------------------------------------------------------------

def test_rule_first_math_span_only():
    assert normalize_tex("$5$ apples and $6$ pears") == "5"
    assert normalize_tex("answer $\\frac{1}{2}$ here") == "\\frac{1}{2}"


# --- step 5: unwrapping ---------------------------------------------------------------------

def test_rule_unwrap_text_textbf_overline_nongreedy():
    assert normalize_tex("\\text{(B)}") == "(B)"
    assert normalize_tex("\\textbf{odd}") == "odd"
    assert normalize_tex("0.\\overline{3}") == "0.3"
    assert normalize_tex("\\text{x}+\\text{y}") == "x+y"  # non-greedy: each group separately


def test_rule_unwrap_boxed_greedy():
    assert normalize_tex("\\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    # greedy to the last brace
    assert normalize_tex("\\boxed{1}+\\boxed{2}") == "1}+\\boxed{2"


# --- step 6: shorthands and dollars ------------------------------------------------------------

def test_rule_frac_and_sqrt_shorthand():
    assert normalize_tex("\\frac12") == "\\frac{1}{2}"
    assert normalize_tex("\\frac123") == "\\frac{1}{2}3"
    assert normalize_tex("\\frac{12}{3}") == "\\frac{12}{3}"
    assert normalize_tex("\\sqrt2") == "\\sqrt{2}"
    assert normalize_tex("\\sqrt23") == "\\sqrt{2}3"
    assert normalize_tex("-\\frac23") == "-\\frac{2}{3}"


def test_rule_dollars_removed():
    assert normalize_tex("5$") == "5"
    # display math: the first $...$ pair is the empty one between "$$", so nothing is left
    assert normalize_tex("$$5$$") == ""


# --- step 7: thousands commas ---------------------------------------------------------------

def test_rule_thousands_commas_only_for_digits():
    assert normalize_tex("1,000,000") == "1000000"
    assert normalize_tex("1,2,3") == "123"  # lossy: a list of digits is joined (official)
    assert normalize_tex("(1,2)") == "(1,2)"
    assert normalize_tex("-1,000") == "-1,000"  # "-" is not a digit: kept


def test_invalid_sentinel_passes_through():
    assert normalize_tex(INVALID_ANSWER) == INVALID_ANSWER


def test_normalize_rejects_non_strings():
    with pytest.raises(TypeError, match="answer must be a str"):
        normalize_tex(None)


@given(st.integers(min_value=0, max_value=10**12))
def test_integers_with_commas_normalise_to_digits(n):
    assert normalize_tex(f"${n:,}$") == str(n)
    assert normalize_tex(f"The final value is ${n}$ dollars") == str(n)


@given(st.text(alphabet="0123456789+-*/^(){}x", max_size=20))
def test_normalize_is_idempotent_on_plain_expressions(s):
    once = normalize_tex(s)
    assert normalize_tex(once) == once


# --- gold answers of MATH reference solutions and Minerva's 4-shot prompt --------------------

def test_extract_boxed_answer_takes_the_last_balanced_box():
    from iclr24.papers.llemma import extract_boxed_answer

    sol = (r"First $\boxed{1}$ is wrong; so $\frac{a}{b}=\boxed{-\frac{2}{3}}.$ Done, "
           r"with {braces} after.")
    assert extract_boxed_answer(sol) == r"-\frac{2}{3}"
    assert extract_boxed_answer(r"the set is $\boxed{\{1,2\}}$") == r"\{1,2\}"
    assert extract_boxed_answer(r"$\boxed{[2,5)}$") == "[2,5)"
    # the brace-less form, as the official reader takes it: up to the next '$'
    assert extract_boxed_answer(r"so $x = \boxed 5$ and more") == "5"
    # \fbox when there is no \boxed
    assert extract_boxed_answer(r"answer: \fbox{12}") == "12"
    # then normalised as the evaluation does
    assert normalize_tex(extract_boxed_answer(r"$\boxed{1,\!000 \text{ dollars}}$")) == "1000"


def test_extract_boxed_answer_bad_inputs():
    from iclr24.papers.llemma import extract_boxed_answer

    with pytest.raises(ValueError, match="solution has no"):
        extract_boxed_answer("The answer is 5.")
    with pytest.raises(ValueError, match="never closed"):
        extract_boxed_answer(r"so \boxed{\frac{1}{2}")
    with pytest.raises(ValueError, match="not followed by a brace"):
        extract_boxed_answer(r"\boxed\alpha{x}")
    with pytest.raises(TypeError, match="solution"):
        extract_boxed_answer(None)


def test_minerva_math_prompt_is_four_shot_and_parses_with_our_own_readers():
    from iclr24.papers.llemma import MINERVA_MATH_FEWSHOT, extract_boxed_answer, minerva_prompt

    shots = MINERVA_MATH_FEWSHOT.split("\n\nProblem:\n")
    assert len(shots) == 4 and MINERVA_MATH_FEWSHOT.startswith("Problem:\n")
    finals = [extract_final_answer(s.split("Solution:\n", 1)[1]) for s in shots]
    boxed = [normalize_tex(extract_boxed_answer(s)) for s in shots]
    assert [normalize_tex(f) for f in finals] == ["[2,5)", "24", "16", r"-\frac{2}{3}"]
    assert boxed == [normalize_tex(f) for f in finals]  # each demo's box agrees with its line
    prompt = minerva_prompt("What is $1+1$?", MINERVA_MATH_FEWSHOT)
    assert prompt.endswith("I hope it is correct.\n\nProblem:\nWhat is $1+1$?\n\nSolution:")
