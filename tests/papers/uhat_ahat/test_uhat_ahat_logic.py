"""LTL(Mon) and FO(Mon): parsing, the reference semantics against independent recurrences and
hand-checked words, the guarded FO front-end, and input errors."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.uhat_ahat import NumericalPredicate, fo, ltl, random_formula, random_words

PREDS = ("odd", "prime", "mod3", "first", "last")


def test_strict_temporal_operators_by_hand():
    v = lambda s, w: list(ltl.evaluate(ltl.parse(s), w))
    assert v("X b", "abab") == [True, False, True, False]
    assert v("F a", "aab") == [True, False, False]  # strict: the current position does not count
    assert v("G b", "abb") == [True, True, True]  # G at the last position is vacuously true
    assert v("a U b", "aacb") == [False, False, True, False]  # at 1: position 3 is c, not a
    assert v("a U b", "aab") == [True, True, False]
    assert v("Y a", "abb") == [False, True, False]
    assert v("b S a", "abbc") == [False, True, True, True]
    assert v("H a", "aab") == [True, True, True]
    assert v("prime & last", "aaaaa") == [False, False, False, False, True]
    assert v("{#a > #b}", "aab") == [True] * 3
    assert v("{#a = 2*#b}", "abab") == [False] * 4
    assert v("{#<a >= 2}", "abaa") == [False, False, True, True]  # prefix count over j <= i


def _until_by_recurrence(phi, psi):
    """(phi U psi)(i) = psi(i+1) | (phi(i+1) & (phi U psi)(i+1)): an independent O(n) check."""
    n = len(phi)
    out = [False] * n
    for i in range(n - 2, -1, -1):
        out[i] = psi[i + 1] or (phi[i + 1] and out[i + 1])
    return out


@settings(max_examples=60)
@given(seed=st.integers(0, 10**6), n=st.integers(1, 25))
def test_until_and_since_match_recurrences(seed, n):
    rng = np.random.default_rng(seed)
    w = random_words("abc", n, 1, rng, n_min=n)[0]
    phi, psi = random_formula(2, "abc", PREDS, rng), random_formula(2, "abc", PREDS, rng)
    p, q = list(ltl.evaluate(phi, w)), list(ltl.evaluate(psi, w))
    assert list(ltl.evaluate(ltl.Until(phi, psi), w)) == _until_by_recurrence(p, q)
    since = _until_by_recurrence(p[::-1], q[::-1])[::-1]
    assert list(ltl.evaluate(ltl.Since(phi, psi), w)) == since


@settings(max_examples=80)
@given(seed=st.integers(0, 10**6), depth=st.integers(0, 5))
def test_print_parse_round_trip(seed, depth):
    f = random_formula(depth, "abc", PREDS, seed)
    assert ltl.parse(str(f)) == f


def test_parse_precedence_and_counting_normal_form():
    assert ltl.parse("a | b & c") == ltl.Or(ltl.Letter("a"), ltl.And(ltl.Letter("b"), ltl.Letter("c")))
    assert ltl.parse("a U b U c") == ltl.Until(ltl.Letter("a"), ltl.Until(ltl.Letter("b"), ltl.Letter("c")))
    assert ltl.parse("!a U b") == ltl.Until(ltl.Not(ltl.Letter("a")), ltl.Letter("b"))
    assert ltl.parse("X b") == ltl.Until(ltl.Const(False), ltl.Letter("b"))
    a, b = ltl.Letter("a"), ltl.Letter("b")
    assert ltl.parse("{#a > #b}") == ltl.Count(((1, a), (-1, b)), 1)
    assert ltl.parse("{3 >= 2*#a}") == ltl.Count(((-2, a),), -3)
    eq = ltl.parse("{#a = 2*#b}")
    assert isinstance(eq, ltl.And)
    for w in ["aab", "ab", "aabaab", "b"]:
        assert ltl.holds(eq, w) == (w.count("a") == 2 * w.count("b"))


def test_parse_errors():
    with pytest.raises(ValueError, match="expected"):
        ltl.parse("a &")
    with pytest.raises(ValueError, match="unexpected"):
        ltl.parse("a b")
    with pytest.raises(ValueError, match="comparison"):
        ltl.parse("{#a}")
    with pytest.raises(ValueError, match="mix # and #<"):
        ltl.parse("{#a >= #<b}")
    with pytest.raises(TypeError):
        ltl.parse(3)


def test_word_errors():
    f = ltl.parse("a")
    with pytest.raises(ValueError, match="letter 'z' at position 3, outside the alphabet"):
        ltl.holds(f, "abz", alphabet="abc")
    with pytest.raises(ValueError, match="non-empty"):
        ltl.holds(f, "")
    with pytest.raises(ValueError, match="position in 1..2"):
        ltl.holds(f, "ab", i=3)
    with pytest.raises(ValueError, match="predicate 'square'"):
        ltl.evaluate(ltl.Pred("square"), "ab")


def test_numerical_predicates_depend_on_n():
    half = NumericalPredicate("h", lambda i, n: n % 2 == 0 and 2 * i <= n)
    f = ltl.parse("h", {"h": half})
    assert list(ltl.evaluate(f, "aaaa", {"h": half})) == [True, True, False, False]
    assert list(ltl.evaluate(f, "aaa", {"h": half})) == [False, False, False]
    with pytest.raises(ValueError, match="reserved"):
        NumericalPredicate("G", lambda i, n: True)
    with pytest.raises(ValueError, match="1 <= i <= n"):
        half(0, 3)


SENTENCES = {
    "exists x. (a(x) & exists y. (x < y & b(y) & forall z. ((x < z & z < y) -> !c(z))))":
        lambda w: any(w[i] == "a" and any(w[j] == "b" and "c" not in w[i + 1:j]
                                          for j in range(i + 1, len(w))) for i in range(len(w))),
    "forall x. ((a(x) -> prime(x)) & (prime(x) -> a(x)))":
        lambda w: all((c == "a") == (i + 1 in (2, 3, 5, 7, 11, 13)) for i, c in enumerate(w)),
    "forall x. (a(x) -> !(exists y. (x < y & a(y) & !(exists z. (x < z & z < y)))))":
        lambda w: "aa" not in w,
    "exists x. (a(x) & forall y. (x < y -> b(y)))":
        lambda w: any(c == "a" and set(w[i + 1:]) <= {"b"} for i, c in enumerate(w)),
    "forall x. (b(x) -> exists y. (y < x & a(y)))":
        lambda w: all("a" in w[:i] for i, c in enumerate(w) if c == "b"),
}


@pytest.mark.parametrize("text", list(SENTENCES))
def test_fo_brute_force_and_translation_agree_with_python(text):
    s = fo.parse(text)
    f = fo.to_ltl(s)
    for w in random_words("abc", 9, 120, rng=7):
        want = SENTENCES[text](w)
        assert fo.holds(s, w) == want, w
        assert ltl.holds(f, w) == want, w


def test_fo_translation_rules_with_a_free_variable():
    assert fo.to_ltl(fo.parse("exists y. (x < y & b(y))")) == ltl.F(ltl.Letter("b"))
    assert fo.to_ltl(fo.parse("exists y. (y < x & b(y))")) == ltl.P(ltl.Letter("b"))
    until = fo.parse("exists y. (x < y & b(y) & forall z. ((x < z & z < y) -> a(z)))")
    assert fo.to_ltl(until) == ltl.Until(ltl.Letter("a"), ltl.Letter("b"))
    nxt = fo.parse("exists y. (x < y & b(y) & !(exists z. (x < z & z < y)))")
    assert fo.to_ltl(nxt) == ltl.X(ltl.Letter("b"))
    f = fo.parse("a(x) & exists y. (x < y & b(y))")
    for w in random_words("ab", 8, 60, rng=3):
        for i in range(1, len(w) + 1):
            assert fo.holds(f, w, {"x": i}) == ltl.holds(fo.to_ltl(f), w, i)


def test_fo_outside_the_guarded_fragment_names_the_subformula():
    with pytest.raises(ValueError, match=r"subformula \(exists y\. \(x < y \| a\(y\)\)\) is outside the guarded fragment"):
        fo.to_ltl(fo.parse("exists x. exists y. (x < y | a(y))"))
    with pytest.raises(ValueError, match="at most one"):
        fo.to_ltl(fo.parse("x < y"))
    with pytest.raises(ValueError, match="outside the guarded fragment"):
        fo.to_ltl(fo.parse("exists x. (a(x) & exists y. (x < y & exists z. (y < z & x < z)))"))
    with pytest.raises(ValueError, match="expected"):
        fo.parse("exists x a(x)")
    with pytest.raises(TypeError, match="FO formula"):
        fo.to_ltl(ltl.parse("a"))
