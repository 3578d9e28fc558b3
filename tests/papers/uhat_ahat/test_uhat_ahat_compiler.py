"""Compiled encoders against the semantics: exact (Fraction) and float64 agreement on random
formulas and words, exact 0/1 registers, tie rules, counting, and compile-time errors."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from iclr24.papers.uhat_ahat import (
    AttentionHead,
    EncoderLayer,
    HardAttentionEncoder,
    Linear,
    compile_ahat,
    compile_uhat,
    fo,
    ltl,
    random_formula,
    random_words,
)

PREDS = ("odd", "prime", "mod3", "first", "last")


@settings(max_examples=40)
@given(seed=st.integers(0, 10**6), depth=st.integers(0, 4))
def test_uhat_exact_agreement_on_random_formulas(seed, depth):
    rng = np.random.default_rng(seed)
    f = random_formula(depth, "abc", PREDS, rng)
    enc = compile_uhat(f, "abc")
    for w in random_words("abc", 9, 4, rng):
        x = enc.run(w, "fraction")
        assert enc.accepts(w, "fraction") == ltl.holds(f, w)
        # every subformula's register is exactly its truth value at every position
        for g, aff in enc.readout_of.items():
            vals = [aff.bias + sum(c * x[i, r] for r, c in aff.terms) for i in range(len(w))]
            assert all(isinstance(v, (Fraction, int)) for v in vals)
            assert vals == [Fraction(int(t)) for t in ltl.evaluate(g, w)]


@settings(max_examples=15)
@given(seed=st.integers(0, 10**6))
def test_uhat_float64_agreement_up_to_n150(seed):
    rng = np.random.default_rng(seed)
    f = random_formula(4, "abc", PREDS, rng)
    enc = compile_uhat(f, "abc")
    words = random_words("abc", 150, 6, rng, n_min=100)
    assert [enc.accepts(w, "float64") for w in words] == [ltl.holds(f, w) for w in words]


@settings(max_examples=20)
@given(seed=st.integers(0, 10**6))
def test_ahat_counting_with_random_inner_formulas(seed):
    rng = np.random.default_rng(seed)
    phi, psi = random_formula(2, "ab", ("odd",), rng), random_formula(2, "ab", ("odd",), rng)
    c = int(rng.integers(-2, 3))
    f = ltl.Or(ltl.Count(((1, phi), (-2, psi)), c), ltl.F(ltl.Letter("b")))
    enc = compile_ahat(f, "ab")
    for w in random_words("ab", 12, 5, rng):
        assert enc.accepts(w, "fraction") == ltl.holds(f, w)
        assert enc.accepts(w, "float64") == ltl.holds(f, w)


def test_uhat_and_ahat_agree_on_counting_free_formulas():
    rng = np.random.default_rng(5)
    for _ in range(10):
        f = random_formula(3, "abc", PREDS, rng)
        u, a = compile_uhat(f, "abc"), compile_ahat(f, "abc")
        for w in random_words("abc", 30, 10, rng):
            assert u.accepts(w) == a.accepts(w) == ltl.holds(f, w)


def test_majority_needs_averaging():
    enc = compile_ahat("{#a > #b}", "ab")
    words = ["a", "b", "ab", "ba", "aab", "abb", "baa", "bbaaa", "bbbaa"]
    assert [enc.accepts(w, "fraction") for w in words] == [w.count("a") > w.count("b") for w in words]
    # leftmost tie-breaking reads the first letter instead of the average
    tie = [enc.accepts(w, "fraction", attention="unique") for w in words]
    assert tie != [w.count("a") > w.count("b") for w in words]
    assert tie[words.index("abb")] is True and tie[words.index("baa")] is False


def test_prefix_counts_need_the_causal_extension():
    with pytest.raises(ValueError, match="explicit causal-mask extension"):
        compile_ahat("{#<a >= #<b}", "ab")
    enc = compile_ahat("{#<a >= #<b} & G {#<a >= #<b}", "ab", causal_extension=True)
    f = enc.formula
    for w in random_words("ab", 14, 80, rng=2):  # Dyck-like prefix condition
        assert enc.accepts(w, "fraction") == ltl.holds(f, w)


def test_executor_tie_rules_on_a_hand_built_head():
    """One head with all-zero scores: UHA copies position 1's value, AHA averages."""
    zero = (Linear(),)
    enc = HardAttentionEncoder(alphabet=("a", "b"), registers=["a", "b", "out"], positional=[],
                               layers=[EncoderLayer((AttentionHead(zero, zero, ((0, 2),), "unique"),))],
                               output=Linear(Fraction(0), ((2, Fraction(1)),)))
    x = enc.run("baab", "fraction")
    assert list(x[:, 2]) == [0, 0, 0, 0]
    x = enc.run("baab", "fraction", attention="average")
    assert list(x[:, 2]) == [Fraction(1, 2)] * 4
    xf = enc.run("abbb", "float64", attention="average")
    assert np.allclose(xf[:, 2], 0.25)
    soft = enc.run("abbb", "float64", softmax_temperature=1.0)
    assert np.allclose(soft[:, 2], 0.25)  # equal scores: softmax = average


def test_depth_and_width_follow_the_formula():
    assert compile_uhat("a", "ab").depth == 0
    assert compile_uhat("!a", "ab").depth == 0  # negation is affine, no layer
    assert compile_uhat("a U b", "ab").depth == 2
    assert compile_uhat("(a U b) U a", "ab").depth == 4
    assert compile_uhat("(a U b) & (b S a)", "ab").depth == 3  # both until/since in parallel
    small, big = compile_uhat("F a", "ab"), compile_uhat("F a & G b & X (a U b)", "ab")
    assert big.width > small.width


def test_compile_errors():
    with pytest.raises(ValueError, match="needs average hard attention"):
        compile_uhat("{#a > #b}", "ab")
    with pytest.raises(ValueError, match="letter 'c', which is not in the alphabet"):
        compile_uhat("a U c", "ab")
    with pytest.raises(ValueError, match="distinct letters"):
        compile_uhat("a", "aab")
    enc = compile_uhat("a U b", "ab")
    with pytest.raises(ValueError, match="letter 'c' at position 2"):
        enc.accepts("acb")
    with pytest.raises(ValueError, match="arithmetic must be"):
        enc.run("ab", "float32")
    with pytest.raises(ValueError, match="softmax attention needs arithmetic='float64'"):
        enc.run("ab", "fraction", softmax_temperature=0.1)
    with pytest.raises(ValueError, match="outside the guarded fragment"):
        compile_uhat(fo.parse("exists x. exists y. (x < y | a(y))"), "ab")


def test_fo_formulas_compile_directly():
    s = fo.parse("forall x. (a(x) -> exists y. (x < y & b(y)))")
    enc = compile_uhat(s, "ab")
    for w in random_words("ab", 8, 40, rng=4):
        assert enc.accepts(w, "fraction") == fo.holds(s, w)


def test_random_generators():
    f1 = random_formula(4, "ab", PREDS, rng=3)
    assert f1 == random_formula(4, "ab", PREDS, rng=3)
    assert all(isinstance(g, ltl._NODES) for g in ltl.subformulas(f1))
    ws = random_words("ab", 5, 50, rng=1, n_min=2)
    assert len(ws) == 50 and all(2 <= len(w) <= 5 and set(w) <= {"a", "b"} for w in ws)
    with pytest.raises(ValueError, match="depth"):
        random_formula(-1, "ab")
    with pytest.raises(ValueError, match="n_min"):
        random_words("ab", 3, 2, n_min=4)


def test_float64_max_length_is_the_normal_range_bound():
    """505 is the largest n with eps^n / (8n) >= 2^-1022 (the smallest normal float64)."""
    from iclr24.papers.uhat_ahat import EPSILON, FLOAT64_MAX_LENGTH

    def bound(n):
        return EPSILON**n / (8 * n)

    assert FLOAT64_MAX_LENGTH == 505
    assert bound(505) >= Fraction(1, 2**1022) > bound(506)
    assert float(EPSILON**537) > 0 and float(EPSILON**538) == 0.0  # where "a U b" broke
    assert compile_uhat("X a", "ab").float64_max_length == FLOAT64_MAX_LENGTH
    assert compile_ahat("{#a > #b} & G(b -> X a)", "ab").float64_max_length == FLOAT64_MAX_LENGTH
    # no until/since head: no length limit
    assert compile_uhat("a & !b", "ab").float64_max_length is None
    assert compile_ahat("{#a > #b}", "ab").float64_max_length is None


@pytest.mark.parametrize("text,word", [
    ("a U b", "a" * 504 + "b"),  # the first P-position at n: score eps^n (n - 3/2)/n
    ("F(a & X b)", "a" * 504 + "b"),  # X b at n - 1: the smallest score, eps^n / (2n)
    ("P(b & Y a)", "b" + "a" * 504),  # the mirror, through since
    ("G(a -> F b)", "ab" * 252 + "a"),
])
def test_float64_is_right_at_the_limit(text, word):
    enc = compile_uhat(text, "ab")
    assert len(word) == enc.float64_max_length
    assert enc.accepts(word, "float64") == ltl.holds(enc.formula, word)
    flipped = word[:-1] + ("a" if word[-1] == "b" else "b")
    assert enc.accepts(flipped, "float64") == ltl.holds(enc.formula, flipped)


def test_float64_registers_equal_exact_at_the_limit():
    enc = compile_uhat("F(a & X b)", "ab")
    word = "a" * 504 + "b"
    exact = enc.run(word, "fraction").astype(np.float64)
    assert np.array_equal(enc.run(word, "float64"), exact)


def test_float64_beyond_the_limit_falls_back_to_exact_or_raises():
    import dataclasses

    enc = compile_uhat("a U b", "ab")
    word = "a" * 537 + "b"  # n = 538: eps^538 rounds to 0 in float64
    assert ltl.holds(enc.formula, word)
    assert enc.accepts(word, "float64") is True  # switched to Fraction
    with pytest.raises(ValueError, match="arithmetic='float64' cannot separate.*length 538"):
        enc.run(word, "float64")
    with pytest.raises(ValueError, match="softmax_temperature needs float64"):
        enc.accepts(word, "float64", softmax_temperature=1.0)
    # without the limit, plain float64 is silently wrong there (what the limit prevents)
    unguarded = dataclasses.replace(enc, float64_max_length=None)
    assert unguarded.accepts(word, "float64") is False
    assert unguarded.accepts("a" * 536 + "b", "float64") is True  # n = 537 still right
    # the limit is the same for every word length beyond it, and shorter words stay in float64
    assert enc.accepts("a" * 505 + "b", "float64") is True
