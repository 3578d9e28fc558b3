"""The claim contract: rules, verdicts, measurements, the decorator's validation."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iclr24.claims import Measurement, RuleError, Scale, claim, evaluate_rule, sizes


def test_rule_comparisons_and_logic():
    m = {"a": 2.0, "b": 3.0, "c": -1.0}
    assert evaluate_rule("a < b", m) is True
    assert evaluate_rule("a > b", m) is False
    assert evaluate_rule("a < b and abs(c) == 1", m)
    assert evaluate_rule("a > b or not c > 0", m)
    assert evaluate_rule("0 < a < b", m)
    assert not evaluate_rule("0 < b < a", m)
    assert evaluate_rule("max(a, b) / min(a, b) == 1.5", m)
    assert evaluate_rule("a ** 2 - b * 1 == 1", m)
    assert evaluate_rule("-c == 1", m)


@given(st.floats(allow_nan=False, allow_infinity=False),
       st.floats(allow_nan=False, allow_infinity=False))
def test_rule_matches_python_semantics(x, y):
    m = {"x": x, "y": y}
    assert evaluate_rule("x >= y", m) == (x >= y)
    assert evaluate_rule("x < y or x == y", m) == (x <= y)


def test_nan_metric_is_unknown_not_false():
    # a measurement that could not be made is not a failed reproduction
    assert evaluate_rule("x >= 0", {"x": math.nan}) is None
    assert evaluate_rule("x < 0", {"x": math.nan}) is None


def test_rule_naming_unmeasured_metric_is_an_error():
    with pytest.raises(RuleError, match="'speed'.*measured: ratio"):
        evaluate_rule("speed > 1", {"ratio": 2.0})


@pytest.mark.parametrize("expr", ["__import__('os')", "x.real > 0", "[x][0] > 1", "x if x else 1",
                                  "open('f')"])
def test_rule_rejects_anything_but_arithmetic(expr):
    with pytest.raises(RuleError):
        evaluate_rule(expr, {"x": 1.0})


def test_callable_rule():
    def ratio_rule(m):
        """ratio must double"""
        return m["ratio"] >= 2

    c = claim(rule=ratio_rule, paper="p")(lambda scale, seed: Measurement({"ratio": 3}))
    assert c.verdict({"ratio": 3.0}, "smoke") == "holds"
    assert c.verdict({"ratio": 1.0}, "smoke") == "fails"
    assert c.rule_text("small") == "ratio must double"


def test_per_scale_rule_and_fallback():
    def fn(scale, seed):
        return Measurement({"n": 5})

    c = claim(rule={"smoke": "n >= 1", "small": "n >= 10"}, paper="p")(fn)
    assert c.verdict({"n": 5}, Scale.SMOKE) == "holds"
    assert c.verdict({"n": 5}, Scale.SMALL) == "fails"
    assert c.rule_text("full") == "n >= 10"  # full falls back to small
    only_smoke = claim(rule={"smoke": "n >= 1"}, paper="p")(fn)
    assert only_smoke.rule_text("full") == "n >= 1"


def test_decorator_validates_at_import_time():
    def fn(scale, seed):
        return Measurement({})

    with pytest.raises(RuleError, match="not a valid expression"):
        claim(rule="ratio >=", paper="p")(fn)
    with pytest.raises(ValueError, match="scale must be one of"):
        claim(rule={"huge": "x > 1"}, paper="p")
    with pytest.raises(TypeError, match="rule must be"):
        claim(rule=3, paper="p")
    with pytest.raises(ValueError, match="paper must say"):
        claim(rule="x > 1", paper="  ")
    with pytest.raises(TypeError, match=r"must take \(scale, seed"):
        claim(rule="x > 1", paper="p")(lambda n, seed: None)
    with pytest.raises(ValueError, match="finite"):
        claim(rule="x > 1", paper="p", paper_numbers={"x": math.inf})


def test_claim_call_checks_seed_and_return_type():
    good = claim(rule="x > 1", paper="p")(lambda scale, seed: Measurement({"x": seed}))
    assert good("smoke", 3).metrics == {"x": 3.0}
    with pytest.raises(TypeError, match="seed must be an int"):
        good("smoke", 1.5)
    with pytest.raises(ValueError, match="scale must be one of"):
        good("medium", 1)
    bad = claim(rule="x > 1", paper="p")(lambda scale, seed: {"x": 2})
    with pytest.raises(TypeError, match="must return a Measurement"):
        bad("smoke", 0)


def test_claim_scales_limit_where_it_runs():
    fn = lambda scale, seed: Measurement({"x": 2.0})
    assert claim(rule="x > 1", paper="p")(fn).scales == ("smoke", "small", "full")
    heavy = claim(rule="x > 1", paper="p", scales=("SMALL", "full", "small"))(fn)
    assert heavy.scales == ("small", "full") and heavy.runs_at("small")
    assert not heavy.runs_at("smoke")
    assert heavy("small", 0).metrics == {"x": 2.0}
    with pytest.raises(ValueError, match="runs at small, full, not at smoke"):
        heavy("smoke", 0)
    for bad in ((), "small"):
        with pytest.raises(ValueError, match="scales must be a non-empty sequence"):
            claim(rule="x > 1", paper="p", scales=bad)
    with pytest.raises(ValueError, match="scale must be one of"):
        claim(rule="x > 1", paper="p", scales=("medium",))


def test_measurement_validation():
    m = Measurement({"a": 1, "b": True, "c": 2.5})
    assert m.metrics == {"a": 1.0, "b": 1.0, "c": 2.5}
    with pytest.raises(TypeError, match="metric 'a' must be a number"):
        Measurement({"a": "fast"})
    with pytest.raises(ValueError, match="identifiers"):
        Measurement({"not a name": 1})
    with pytest.raises(TypeError, match="mapping"):
        Measurement([1, 2])
    with pytest.raises(TypeError, match="table 't'"):
        Measurement({}, tables={"t": [1, 2]})


def test_sizes_and_scale_parse():
    assert sizes("smoke", smoke=1, small=2, full=3) == 1
    assert sizes(Scale.SMALL, smoke=1, small=2, full=3) == 2
    assert sizes("full", smoke=1, small=2) == 2
    assert sizes("FULL", smoke=1, small=2, full=3) == 3
    with pytest.raises(ValueError, match="smoke, small, full"):
        Scale.parse("tiny")


def test_rule_metric_names():
    from iclr24.claims import rule_metric_names

    assert rule_metric_names("acc_a >= acc_b - 0.05 and abs(gap) < 1e-3 and acc_a > 0") == [
        "acc_a", "acc_b", "gap"]
    assert rule_metric_names("ratio >=") == []
