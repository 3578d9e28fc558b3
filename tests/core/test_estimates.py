"""Estimates and three-valued rules: constructors against SciPy, comparisons against a
brute-force definition, Kleene logic, refused arithmetic, formatting."""

import math
import operator

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from iclr24.claims import (Estimate, Measurement, RuleError, claim, compare_intervals,
                           evaluate_rule, verdict_of)

# --- constructors ---------------------------------------------------------------------------


def test_mean_of_is_the_student_t_interval():
    x = np.array([0.91, 0.95, 0.93, 0.97, 0.92])
    e = Estimate.mean_of(x, confidence=0.9)
    lo, hi = stats.t.interval(0.9, len(x) - 1, loc=x.mean(), scale=stats.sem(x))
    assert e.value == pytest.approx(x.mean())
    assert (e.low, e.high) == (pytest.approx(lo), pytest.approx(hi))
    assert e.n == 5 and e.confidence == 0.9 and e.method == "t"


def test_difference_is_welch_and_paired_is_t_on_differences():
    a = np.array([1.0, 1.4, 0.9, 1.3, 1.2, 1.1])
    b = np.array([0.7, 0.8, 0.75, 0.95, 0.5, 0.6])
    welch = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
    e = Estimate.difference(a, b)
    assert e.value == pytest.approx(a.mean() - b.mean())
    assert (e.low, e.high) == (pytest.approx(welch.low), pytest.approx(welch.high))
    paired = stats.ttest_rel(a, b).confidence_interval(0.95)
    p = Estimate.difference(a, b, paired=True)
    assert (p.low, p.high) == (pytest.approx(paired.low), pytest.approx(paired.high))
    assert p.method == "paired-t" and e.method == "welch"
    with pytest.raises(ValueError, match="equal lengths"):
        Estimate.difference(a, b[:4], paired=True)


def test_bootstrap_is_reproducible_and_covers_the_statistic():
    x = np.random.default_rng(0).exponential(size=40)
    e1 = Estimate.bootstrap(x, np.median, seed=3)
    e2 = Estimate.bootstrap(x, np.median, seed=3)
    assert e1 == e2 and e1.low <= np.median(x) <= e1.high and e1.method == "bootstrap"
    two = Estimate.bootstrap((x, x + 1.0), lambda a, b: b.mean() - a.mean(), seed=1,
                             paired=True)
    assert two.value == pytest.approx(1.0) and two.low == pytest.approx(1.0)  # paired: exact
    flat = Estimate.bootstrap(np.ones(6), np.mean)  # degenerate: BCa undefined
    assert (flat.low, flat.value, flat.high) == (1.0, 1.0, 1.0)


def test_bootstrap_interval_covers_the_mean_at_roughly_its_level():
    rng = np.random.default_rng(1)
    covered = 0
    for i in range(40):
        e = Estimate.bootstrap(rng.normal(size=30), np.mean, n_resamples=400, seed=i)
        covered += e.low <= 0.0 <= e.high
    assert covered >= 32  # nominal 95%: 38 of 40 expected


@pytest.mark.parametrize("make,match", [
    (lambda: Estimate.mean_of([1.0]), "at least 2 replicates"),
    (lambda: Estimate.mean_of([[1.0, 2.0]]), "1-D"),
    (lambda: Estimate.mean_of(["a", "b"]), "sequence of numbers"),
    (lambda: Estimate.mean_of([1.0, 2.0], confidence=95), r"confidence must be .* \(0, 1\)"),
    (lambda: Estimate(1.0, 2.0, 0.0, 3), "low <= high"),
    (lambda: Estimate(1.0, 0.0, 2.0, 0), "positive int"),
    (lambda: Estimate("x", 0.0, 2.0, 3), "must be a number"),
    (lambda: Estimate.bootstrap([1.0, 2.0], "mean"), "statistic must be callable"),
    (lambda: Estimate.bootstrap([1.0, 2.0], np.mean, n_resamples=10), "n_resamples"),
])
def test_bad_estimates_are_clear_errors(make, match):
    with pytest.raises((ValueError, TypeError), match=match):
        make()


def test_dict_round_trip_and_format():
    e = Estimate(0.0041, -0.0063, 0.0145, 5)
    assert Estimate.from_dict(e.to_dict()) == e
    assert str(e) == "0.0041 [\u22120.0063, 0.0145] (n=5)"
    assert f"{e:.2f}" == "0.00 [\u22120.01, 0.01] (n=5)"


def test_measurement_keeps_estimates():
    e = Estimate(1.0, 0.5, 1.5, 3)
    m = Measurement({"gain": e, "x": 2})
    assert m.metrics == {"gain": e, "x": 2.0}
    with pytest.raises(TypeError, match="number or an Estimate"):
        Measurement({"gain": (1.0, 0.5, 1.5)})


# --- three-valued comparisons against a brute-force definition --------------------------------

OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
       "==": operator.eq, "!=": operator.ne}


def _points(low: float, high: float, other: tuple[float, float]) -> list[float]:
    """Points of [low, high] that witness every case: its ends, interior points, and the
    other interval's ends where they fall inside (equality can only happen there)."""
    inside = {p for p in other if low <= p <= high}
    return sorted({low, high, (low + high) / 2, low + (high - low) / 3} | inside)


def brute(op, a: tuple[float, float], b: tuple[float, float]):
    """True if op holds for every pair of points, False if for none, else None."""
    results = {op(x, y) for x in _points(*a, b) for y in _points(*b, a)}
    return True if results == {True} else False if results == {False} else None


def as_metric(bounds: tuple[float, float], plain: bool):
    low, high = bounds
    if plain and low == high:
        return low
    return Estimate((low + high) / 2, low, high, 3)


interval = st.tuples(st.integers(-4, 4), st.integers(0, 3)).map(
    lambda t: (float(t[0]), float(t[0] + t[1])))


@given(interval, interval, st.sampled_from(sorted(OPS)), st.booleans(), st.booleans())
def test_comparisons_match_the_brute_force_definition(a, b, op, plain_a, plain_b):
    m = {"a": as_metric(a, plain_a), "b": as_metric(b, plain_b)}
    assert evaluate_rule(f"a {op} b", m) is brute(OPS[op], a, b)
    assert compare_intervals(OPS[op], m["a"], m["b"]) is brute(OPS[op], a, b)


def kleene_and(x, y):
    return False if False in (x, y) else True if (x, y) == (True, True) else None


def kleene_or(x, y):
    return True if True in (x, y) else False if (x, y) == (False, False) else None


def kleene_not(x):
    return None if x is None else not x


@given(interval, interval, interval, st.sampled_from(sorted(OPS)),
       st.sampled_from(sorted(OPS)))
def test_connectives_follow_kleene(a, b, c, op1, op2):
    m = {"a": as_metric(a, False), "b": as_metric(b, True), "c": as_metric(c, False)}
    p, q = brute(OPS[op1], a, b), brute(OPS[op2], c, b)
    assert evaluate_rule(f"a {op1} b and c {op2} b", m) is kleene_and(p, q)
    assert evaluate_rule(f"a {op1} b or c {op2} b", m) is kleene_or(p, q)
    assert evaluate_rule(f"not (a {op1} b) or c {op2} b", m) is kleene_or(kleene_not(p), q)
    assert evaluate_rule(f"a {op1} b {op2} c", m) is kleene_and(p, brute(OPS[op2], b, c))


def test_the_fedimpro_case_is_inconclusive():
    m = {"diff": Estimate(0.0041, -0.0063, 0.0145, 5)}
    assert evaluate_rule("diff >= 0", m) is None
    assert verdict_of(evaluate_rule("diff >= 0", m)) == "inconclusive"
    assert verdict_of(evaluate_rule("diff >= -0.01", m)) == "holds"
    assert verdict_of(evaluate_rule("diff >= 0.02", m)) == "fails"


def test_unary_minus_and_abs_are_exact_on_intervals():
    m = {"d": Estimate(0.5, -1.0, 2.0, 4), "e": Estimate(-2.0, -3.0, -1.0, 4)}
    assert evaluate_rule("-d < 0.5", m) is None and evaluate_rule("-d <= 1", m) is True
    assert evaluate_rule("abs(d) >= 0", m) is True and evaluate_rule("abs(d) <= 2", m) is True
    assert evaluate_rule("abs(e) >= 1", m) is True and evaluate_rule("abs(e) > 2", m) is None


@pytest.mark.parametrize("rule", ["a - b > 0", "a / 2 > 0", "max(a, b) > 0", "a * 1 > 0",
                                  "a ** 2 > 0", "x + a > 0"])
def test_arithmetic_on_estimates_is_refused(rule):
    m = {"a": Estimate(1.0, 0.5, 1.5, 3), "b": Estimate(0.2, 0.1, 0.3, 3), "x": 1.0}
    with pytest.raises(RuleError, match="build the combined quantity as its own Estimate"):
        evaluate_rule(rule, m)


def test_plain_arithmetic_still_works_beside_estimates():
    m = {"a": Estimate(1.0, 0.5, 1.5, 3), "x": 2.0, "y": 1.0}
    assert evaluate_rule("x - y > 0 and a > 0.4", m) is True


def test_nan_estimate_is_unknown():
    m = {"a": Estimate(math.nan, math.nan, math.nan, 3)}
    assert evaluate_rule("a > 0", m) is None and evaluate_rule("a <= 0", m) is None


def test_a_bare_estimate_is_not_a_rule():
    with pytest.raises(RuleError, match="comparison"):
        evaluate_rule("a", {"a": Estimate(1.0, 0.5, 1.5, 3)})


def test_callable_rules_may_say_unknown():
    c = claim(rule=lambda m: None if m["x"] == 0 else m["x"] > 0, paper="p")(
        lambda scale, seed: Measurement({"x": 0}))
    assert c.verdict({"x": 0.0}, "smoke") == "inconclusive"
    assert c.verdict({"x": 1.0}, "smoke") == "holds"
    bad = claim(rule=lambda m: "yes", paper="p")(lambda scale, seed: Measurement({"x": 0}))
    with pytest.raises(RuleError, match="True, False or None"):
        bad.verdict({"x": 0.0}, "smoke")


def test_resources_are_validated_and_per_scale():
    def fn(scale, seed):
        return Measurement({})

    c = claim(rule="x > 0", paper="p", resources={"cpus": 2, "gpus": {"full": 1}})(fn)
    assert c.resources_for("smoke") == {"cpus": 2, "gpus": 0}
    assert c.resources_for("full") == {"cpus": 2, "gpus": 1.0}
    with pytest.raises(ValueError, match="'cpus' and 'gpus'"):
        claim(rule="x > 0", paper="p", resources={"ram": 3})
    with pytest.raises(ValueError, match=r"resources\['cpus'\] must be an int >= 1"):
        claim(rule="x > 0", paper="p", resources={"cpus": 0.5})
