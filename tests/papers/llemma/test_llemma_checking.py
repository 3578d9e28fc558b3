"""Minerva/SymPy equivalence (out of process), math-verify, majority voting, the Python tool."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.llemma import (
    ANSWER_PAIRS,
    INVALID_ANSWER,
    SympyEquivalence,
    extract_program,
    is_equiv,
    majority_vote,
    program_answer,
    run_python,
)


@pytest.fixture(scope="module")
def checker():
    with SympyEquivalence(timeout=5.0) as c:
        yield c


def test_equivalent_forms(checker):
    assert checker.check("0.5", "\\frac{1}{2}").status == "sympy_equal"
    assert checker("x+1", "1+x")
    assert checker("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}")
    assert checker("2^{10}", "1024")


def test_not_equivalent_forms(checker):
    assert checker.check("\\frac{3}{2}", "\\frac{2}{3}").status == "sympy_different"
    assert not checker("x^2+1", "x^2-1")


def test_string_match_needs_no_sympy():
    c = SympyEquivalence()
    assert c.check("(1,2)", "(1,2)").status == "string_match"
    assert c._proc is None  # the child was never started


def test_unparsable_reference_is_not_equivalent_unless_strings_match(checker):
    assert checker.check("1", "\\frac{").status == "gold_unparsable"
    assert checker.check("\\frac{", "\\frac{").equivalent


def test_unparsable_prediction(checker):
    assert checker.check("\\frac{", "1").status == "pred_unparsable"


def test_zero_reference_quirk_is_official(checker):
    # the fork's `if not parsed_x2` treats a SymPy zero as a parse failure
    assert checker.check("0.0", "0").status == "gold_zero"
    assert checker.check("0", "0").equivalent
    assert checker.check("0", "0.0").status == "gold_zero"  # 0.0 parses to Float(0), falsy


def test_integer_shortcut_agrees_with_sympy(checker):
    for a, b in [("12", "12"), ("-3", "3"), ("-0", "0"), ("5", "0"), ("10", "1"), ("3", "-3")]:
        fast = checker.check(a, b)
        slow = checker._ask("minerva", a, b) if a != b else fast
        assert fast.equivalent == slow.equivalent, (a, b)
    # SymPy's LaTeX grammar rejects leading zeros, so they are not shortcut
    assert checker.check("007", "7").status == "pred_unparsable"


def test_default_is_equiv_and_bad_input():
    assert is_equiv("3", "3.0") is True
    with pytest.raises(TypeError, match="pred must be a str"):
        is_equiv(3, "3")
    with pytest.raises(ValueError, match="timeout must be a positive number"):
        SympyEquivalence(timeout=0)


def test_a_hung_worker_is_killed_and_restarted():
    import os
    import signal

    import iclr24.papers.llemma.equivalence as eq

    with SympyEquivalence(timeout=1.0) as c:
        c.check("0.5", "\\frac{1}{2}")  # starts the child
        # freeze the child, as if stuck in C code that no alarm reaches
        os.kill(c._proc.pid, signal.SIGSTOP)
        res = c.check("0.25", "\\frac{1}{4}")
        assert res == eq.EquivalenceResult(False, "killed") and c.restarts == 1
        assert c.check("0.25", "\\frac{1}{4}").status != "killed"  # a fresh child answers


def test_math_verify_reference(checker):
    assert checker.math_verify("$\\frac{1}{2}$", "0.5").equivalent
    assert checker.math_verify("$0.0$", "0").equivalent  # no zero quirk there
    assert not checker.math_verify("$3$", "4").equivalent


def test_answer_pairs_table_is_well_formed():
    assert len(ANSWER_PAIRS) >= 100
    assert len({(p.pred, p.gold) for p in ANSWER_PAIRS}) == len(ANSWER_PAIRS)
    assert 0.1 < sum(not p.equivalent for p in ANSWER_PAIRS) / len(ANSWER_PAIRS) < 0.5


# --- majority voting ----------------------------------------------------------------------

def _eq(a, b):
    return a == b


def test_majority_vote_counts_and_pass_rate():
    v = majority_vote(["5", "6", "5", INVALID_ANSWER], "5", is_equiv=_eq)
    assert (v.acc, v.pass_rate, v.elected) == (1, 0.5, "5")
    assert v.votes == [("5", 2), ("6", 1)]


def test_invalid_answers_cast_no_vote_but_count_in_the_denominator():
    v = majority_vote([INVALID_ANSWER] * 3 + ["7"], "7", is_equiv=_eq)
    assert (v.acc, v.pass_rate) == (1, 0.25)
    v = majority_vote([INVALID_ANSWER] * 2, "7", is_equiv=_eq)
    assert (v.acc, v.pass_rate, v.elected, v.votes) == (0, 0.0, None, [])


def test_wrong_majority_keeps_the_gold_pass_rate():
    v = majority_vote(["6", "6", "5"], "5", is_equiv=_eq)
    assert (v.acc, v.pass_rate, v.elected) == (0, pytest.approx(1 / 3), "6")


def test_grouping_is_greedy_by_equivalence_and_first_group_wins_ties():
    def num_eq(a, b):
        return float(a) == float(b)

    v = majority_vote(["0.5", "2", "0.50", "2.0"], "0.5", is_equiv=num_eq)
    assert v.votes == [("0.5", 2), ("2", 2)] and v.elected == "0.5" and v.acc == 1
    v = majority_vote(["2", "0.5", "0.50", "2.0"], "0.5", is_equiv=num_eq)
    assert v.elected == "2" and v.acc == 0 and v.pass_rate == 0.5


def test_vote_with_the_sympy_checker():
    v = majority_vote(["\\frac{1}{2}", "0.5", "1"], "0.5")
    assert v.acc == 1 and v.pass_rate == pytest.approx(2 / 3)


@settings(max_examples=50)
@given(st.lists(st.sampled_from(["1", "2", "3", INVALID_ANSWER]), min_size=1, max_size=12),
       st.sampled_from(["1", "2", "3"]))
def test_vote_invariants(answers, gold):
    v = majority_vote(answers, gold, is_equiv=_eq)
    valid = [a for a in answers if a != INVALID_ANSWER]
    assert v.pass_rate == pytest.approx(answers.count(gold) / len(answers))
    assert sum(c for _, c in v.votes) == len(valid)
    if valid:
        top = max(valid.count(a) for a in set(valid))
        assert v.votes[0][1] == top and v.acc == int(valid.count(gold) == top
                                                     and v.elected == gold)


def test_vote_bad_input():
    with pytest.raises(TypeError, match="answers must be a sequence"):
        majority_vote("55", "5")
    with pytest.raises(TypeError, match="gold must be a str"):
        majority_vote(["5"], 5)
    with pytest.raises(TypeError, match="is_equiv must be callable"):
        majority_vote(["5"], "5", is_equiv=None)
    assert majority_vote([], "5").acc == 0


# --- program-aided answers ---------------------------------------------------------------

def test_run_python_and_answer():
    res = run_python("x = 37 * 24\nprint(x + 5)\n")
    assert res.error is None and program_answer(res) == "893"


def test_run_python_errors_and_timeout():
    res = run_python("raise ValueError('nope')")
    assert res.error == "ValueError: nope" and program_answer(res) == INVALID_ANSWER
    res = run_python("while True:\n    pass\n", timeout=0.5)
    assert res.error == "timeout" and program_answer(res) == INVALID_ANSWER
    assert program_answer(run_python("pass")) == INVALID_ANSWER


def test_extract_program():
    text = "Let us compute.\n```python\nprint(1 + 2)\n```\nDone."
    assert extract_program(text) == "print(1 + 2)\n"
    assert extract_program("print(3)") == "print(3)"
    assert extract_program("```python\nprint(4)\n") == "print(4)\n"  # cut at the stop marker
    with pytest.raises(TypeError, match="completion must be a str"):
        extract_program(None)
