"""The claim contract: what a paper's reproduction declares and what running it produces.

A claim is a function ``fn(scale, seed) -> Measurement`` (optionally ``fn(scale, seed, progress)``)
that runs a method and its baseline side by side and returns the numbers it measured. The
``@claim`` decorator attaches the *rule* that turns those numbers into a verdict and what the
paper reports for the comparable setting::

    from iclr24.claims import Measurement, Scale, claim, sizes

    @claim(
        rule={"smoke": "ratio >= 2", "small": "ratio >= 10"},
        paper="Fig. 4: LCOT is orders of magnitude faster than COT for K >= 10.",
        paper_numbers={"ratio": 100.0},
    )
    def speedup(scale: Scale, seed: int) -> Measurement:
        k = sizes(scale, smoke=8, small=32, full=64)
        ...
        return Measurement(metrics={"ratio": t_cot / t_lcot, ...}, figure=fig)

The verdict is never set by hand: :meth:`Claim.verdict` evaluates the rule on the metrics. A
rule is a Python expression over metric names (comparisons, ``and``/``or``/``not``, arithmetic,
``abs``/``min``/``max``), a mapping from scale to such an expression, or a callable
``metrics -> bool | None``. A metric the rule names but the claim did not measure is an error,
not a silent "fails".

Verdicts are three-valued. A metric is a plain number or an :class:`Estimate` (a value with an
interval over seeds or bootstrap resamples). A comparison that involves an estimate is *true*
when it holds for every point of the interval, *false* when it fails for every point, and
*unknown* otherwise; ``and``/``or``/``not`` follow Kleene's strong logic. The rule's truth value
maps to ``holds`` / ``fails`` / ``inconclusive``, and every *inconclusive* carries its reason
(:class:`Judgement`). A metric the rule reads that is NaN or infinite never decides: the verdict
is *inconclusive* ("metric `sat_auroc` is NaN"), since a measurement that could not be made is
not a failed reproduction. Arithmetic between an estimate and anything
else inside a rule is refused: the seeds behind two estimates are correlated, so interval
arithmetic would mislead; build the difference or ratio as its own estimate in the claim
(:meth:`Estimate.difference`, :meth:`Estimate.bootstrap`). ``abs(e)`` and ``-e`` are exact
and allowed.

A claim may add a ``control``: a second rule over the same metrics that states what must be
true for the verdict to mean anything (a positive control reaches its level; the null arm a
sceptic would try, measured in the same run, does not pass the main rule). A control that is
false or unknown makes the verdict *inconclusive*, "the test bed cannot tell". ``against`` says
in words what the claim compares against (a baseline, a null arm, a closed form).

This module imports nothing heavy: papers import it from their ``claims.py`` only.
"""

from __future__ import annotations

import ast
import enum
import inspect
import math
import operator
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "Scale",
    "Estimate",
    "Measurement",
    "seed_metric",
    "seed_difference",
    "Claim",
    "claim",
    "sizes",
    "Rule",
    "RuleError",
    "Judgement",
    "evaluate_rule",
    "assess_rule",
    "rule_metric_names",
    "HOLDS",
    "FAILS",
    "INCONCLUSIVE",
]

HOLDS, FAILS, INCONCLUSIVE = "holds", "fails", "inconclusive"


class Scale(str, enum.Enum):
    """How big a claim's run is. Scales change sizes, never the logic.

    smoke: < 30 s on a 2-core CPU (CI runs every smoke claim);
    small: < 5 min, the default of ``iclr24 run``;
    full: as close to the paper as a big machine allows (may want a GPU).
    """

    SMOKE = "smoke"
    SMALL = "small"
    FULL = "full"

    @classmethod
    def parse(cls, value: str | Scale) -> Scale:
        if isinstance(value, Scale):
            return value
        try:
            return cls(str(value).lower())
        except ValueError:
            valid = ", ".join(s.value for s in cls)
            raise ValueError(f"scale must be one of {valid}; got {value!r}") from None


T = TypeVar("T")


def sizes(scale: Scale | str, *, smoke: T, small: T, full: T | None = None) -> T:
    """Pick the size for ``scale``; ``full`` defaults to ``small`` when not given."""
    scale = Scale.parse(scale)
    if scale is Scale.SMOKE:
        return smoke
    if scale is Scale.SMALL:
        return small
    return small if full is None else full


def _replicates(values: Any, name: str) -> Any:
    import numpy as np

    try:
        x = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a sequence of numbers, got {values!r}") from None
    if x.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one number per seed), got shape {x.shape}")
    if x.size < 2:
        raise ValueError(f"{name} needs at least 2 replicates to form an interval, got "
                         f"{x.size}; report a single run as a plain number")
    return x


def _check_confidence(confidence: float) -> float:
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) \
            or not 0 < confidence < 1:
        raise ValueError(f"confidence must be a number in (0, 1), got {confidence!r}")
    return float(confidence)


@dataclass(frozen=True)
class Estimate:
    """A measured number with its uncertainty: ``value`` and a ``confidence`` interval
    ``[low, high]`` from ``n`` replicates (seeds, folds, bootstrap samples of the data).

    Build it from samples rather than by hand:

    - :meth:`mean_of` - mean of replicates, Student-t interval;
    - :meth:`difference` - mean(a) - mean(b), Welch interval (or a paired t interval);
    - :meth:`bootstrap` - any statistic of one or more samples, bootstrap interval.

    A rule reads the whole interval (see the module docstring): ``diff > 0`` *holds* only when
    ``low > 0`` and *fails* only when ``high <= 0``.
    """

    value: float
    low: float
    high: float
    n: int
    confidence: float = 0.95
    method: str = "given"

    def __post_init__(self) -> None:
        for attr in ("value", "low", "high"):
            v = getattr(self, attr)
            if isinstance(v, bool) or not isinstance(v, (int, float)) and not hasattr(v, "item"):
                raise TypeError(f"Estimate.{attr} must be a number, got {v!r}")
            object.__setattr__(self, attr, float(v))
        if self.low > self.high:
            raise ValueError(f"Estimate needs low <= high, got [{self.low}, {self.high}]")
        if isinstance(self.n, bool) or not isinstance(self.n, int) or self.n < 1:
            raise ValueError(f"Estimate.n must be a positive int, got {self.n!r}")
        _check_confidence(self.confidence)
        if not isinstance(self.method, str):
            raise TypeError(f"Estimate.method must be a string, got {self.method!r}")

    @classmethod
    def mean_of(cls, values: Any, confidence: float = 0.95) -> Estimate:
        """Mean of replicates (one per seed) with a two-sided Student-t interval."""
        from iclr24.kits.statistics import mean_interval

        x = _replicates(values, "values")
        mean, low, high = mean_interval(x, _check_confidence(confidence))
        return cls(mean, low, high, int(x.size), confidence, "t")

    @classmethod
    def difference(cls, a: Any, b: Any, confidence: float = 0.95, *,
                   paired: bool = False) -> Estimate:
        """mean(a) - mean(b): a Welch interval for independent samples, or with ``paired=True``
        (a[i] and b[i] from the same seed/data) a Student-t interval on the differences."""
        from iclr24.kits.statistics import difference_interval, mean_interval

        x, y = _replicates(a, "a"), _replicates(b, "b")
        confidence = _check_confidence(confidence)
        if paired:
            if x.shape != y.shape:
                raise ValueError(f"paired samples need equal lengths, got {x.size} and {y.size}")
            d, low, high = mean_interval(x - y, confidence)
            return cls(d, low, high, int(x.size), confidence, "paired-t")
        d, low, high = difference_interval(x, y, confidence)
        return cls(d, low, high, int(min(x.size, y.size)), confidence, "welch")

    @classmethod
    def bootstrap(cls, samples: Any, statistic: Callable[..., float], confidence: float = 0.95,
                  *, n_resamples: int = 2000, seed: int = 0, paired: bool = False) -> Estimate:
        """``statistic`` over bootstrap resamples (SciPy's BCa, percentile where BCa is
        undefined). ``samples`` is one 1-D sample, or a tuple of samples that are resampled
        independently (``paired=True``: together, row for row); ``statistic(*samples)`` returns
        one number. ``seed`` makes the interval reproducible."""
        import numpy as np
        from scipy import stats

        if not callable(statistic):
            raise TypeError(f"statistic must be callable, got {statistic!r}")
        if isinstance(n_resamples, bool) or not isinstance(n_resamples, int) or n_resamples < 100:
            raise ValueError(f"n_resamples must be an int >= 100, got {n_resamples!r}")
        group = tuple(samples) if isinstance(samples, tuple) else (samples,)
        data = tuple(_replicates(s, "samples") for s in group)
        confidence = _check_confidence(confidence)
        value = float(statistic(*data))

        low = high = math.nan
        for method in ("BCa", "percentile"):
            with np.errstate(all="ignore"), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # BCa warns (and gives NaN) on degenerate data
                res = stats.bootstrap(data, lambda *xs: float(statistic(*xs)),
                                      vectorized=False, paired=paired,
                                      confidence_level=confidence, n_resamples=n_resamples,
                                      method=method, rng=np.random.default_rng(seed))
            low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
            if math.isfinite(low) and math.isfinite(high):
                break
        if not (math.isfinite(low) and math.isfinite(high)):
            low = high = value  # every resample gave the same statistic: a degenerate sample
        return cls(value, min(low, value), max(high, value), int(min(d.size for d in data)),
                   confidence, "bootstrap")

    @property
    def interval(self) -> tuple[float, float]:
        return self.low, self.high

    def to_dict(self) -> dict[str, Any]:
        return {"value": self.value, "low": self.low, "high": self.high, "n": self.n,
                "confidence": self.confidence, "method": self.method}

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any]) -> Estimate:
        def num(key: str) -> float:
            v = doc.get(key)
            return math.nan if v is None else float(v)

        return cls(num("value"), num("low"), num("high"), int(doc["n"]),
                   float(doc.get("confidence", 0.95)), str(doc.get("method", "given")))

    def __format__(self, spec: str) -> str:
        spec = spec or ".4g"

        def f(x: float) -> str:
            return format(x, spec).replace("-", "\u2212")

        return f"{f(self.value)} [{f(self.low)}, {f(self.high)}] (n={self.n})"

    def __str__(self) -> str:
        return format(self)


Metric = float | Estimate


def seed_metric(values: Any, confidence: float = 0.95) -> Metric:
    """A metric measured over seeds: an :meth:`Estimate.mean_of` for two or more, the plain
    number for one (e.g. a one-seed smoke run)."""
    values = list(values)
    if len(values) == 1:
        return float(values[0])
    return Estimate.mean_of(values, confidence)


def seed_difference(a: Any, b: Any, confidence: float = 0.95, *, paired: bool = True
                    ) -> Metric:
    """mean(a) - mean(b) over seeds as an :meth:`Estimate.difference` (paired by default:
    a[i] and b[i] share seed i), or the plain difference for a single seed."""
    a, b = list(a), list(b)
    if len(a) == len(b) == 1:
        return float(a[0]) - float(b[0])
    return Estimate.difference(a, b, confidence, paired=paired)


@dataclass
class Measurement:
    """What a claim function returns: numbers measured in this run, and how to show them.

    metrics: name -> number or :class:`Estimate` (the method's and the baseline's), what the
             rule reads. A number from several seeds is an Estimate, never a bare mean.
    figure:  an optional matplotlib Figure (stored as PNG, shown in the report).
    tables:  optional named tables (lists of row dicts) for the report, e.g. a benchmark per L.
    notes:   free text: what differs from the paper, how to read the numbers.
    """

    metrics: Mapping[str, float | int | bool | Estimate]
    figure: Any = None
    tables: Mapping[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    notes: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.metrics, Mapping):
            raise TypeError(f"metrics must be a mapping of name -> number, got {type(self.metrics)}")
        clean: dict[str, Metric] = {}
        for key, value in self.metrics.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ValueError(f"metric names must be identifiers, got {key!r}")
            if isinstance(value, Estimate):
                clean[key] = value
                continue
            try:
                clean[key] = float(value)
            except (TypeError, ValueError):
                raise TypeError(f"metric {key!r} must be a number or an Estimate, "
                                f"got {value!r}") from None
        self.metrics = clean
        if not isinstance(self.tables, Mapping):
            raise TypeError("tables must be a mapping of name -> list of row dicts")
        for name, rows in self.tables.items():
            if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
                raise TypeError(f"table {name!r} must be a list of row dicts")


class RuleError(ValueError):
    """A rule that cannot be evaluated (bad syntax, unknown metric, forbidden construct)."""


Truth = bool | None  # Kleene's three values: True, False, None (unknown)
Rule = str | Callable[[Mapping[str, Metric]], Truth] | Mapping[str, str]

_BINOPS = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_CMPOPS = {
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
}
_FUNCS = {"abs": abs, "min": min, "max": max}


def _bounds(x: Any) -> tuple[float, float]:
    return (x.low, x.high) if isinstance(x, Estimate) else (x, x)


def compare_intervals(op: Callable[[Any, Any], bool], left: Any, right: Any) -> Truth:
    """Three-valued ``op(left, right)`` where either side may be an :class:`Estimate`.

    True when ``op(x, y)`` holds for every x in left's interval and y in right's, False when it
    fails for every such pair, None otherwise. A NaN anywhere gives None: nothing was measured.
    """
    (l1, h1), (l2, h2) = _bounds(left), _bounds(right)
    if any(isinstance(v, float) and math.isnan(v) for v in (l1, h1, l2, h2)):
        return None
    if op is operator.lt:
        return True if h1 < l2 else False if l1 >= h2 else None
    if op is operator.le:
        return True if h1 <= l2 else False if l1 > h2 else None
    if op is operator.gt:
        return True if l1 > h2 else False if h1 <= l2 else None
    if op is operator.ge:
        return True if l1 >= h2 else False if h1 < l2 else None
    point = l1 == h1 == l2 == h2
    disjoint = h1 < l2 or h2 < l1
    if op is operator.eq:
        return True if point else False if disjoint else None
    return False if point else True if disjoint else None  # operator.ne


def _kleene_and(values: list[Truth]) -> Truth:
    if any(v is False for v in values):
        return False
    return True if all(v is True for v in values) else None


def _kleene_or(values: list[Truth]) -> Truth:
    if any(v is True for v in values):
        return True
    return False if all(v is False for v in values) else None


def _truth(value: Any) -> Truth:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, Estimate):
        raise RuleError("an estimate is not a truth value: compare it (e.g. `diff > 0`)")
    return bool(value)


def _no_estimate(values: list[Any], what: str) -> None:
    if any(isinstance(v, Estimate) for v in values):
        raise RuleError(f"{what} on an estimate is refused inside a rule: the seeds behind "
                        "estimates are correlated, so interval arithmetic would mislead; build "
                        "the combined quantity as its own Estimate in the claim (e.g. "
                        "Estimate.difference(a, b) or Estimate.bootstrap(...))")


@dataclass
class _Trace:
    """What evaluating a rule touched: the metrics it read, the comparisons left unknown."""

    read: list[str] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)


def _eval_node(node: ast.AST, metrics: Mapping[str, Metric], trace: _Trace) -> Any:
    if isinstance(node, ast.Expression):
        return _eval_node(node.body, metrics, trace)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in metrics:
            known = ", ".join(sorted(metrics)) or "(none)"
            raise RuleError(f"rule names metric {node.id!r}, which the claim did not measure; "
                            f"measured: {known}")
        trace.read.append(node.id)
        return metrics[node.id]
    if isinstance(node, ast.BoolOp):
        values = [_truth(_eval_node(v, metrics, trace)) for v in node.values]
        return _kleene_and(values) if isinstance(node.op, ast.And) else _kleene_or(values)
    if isinstance(node, ast.UnaryOp):
        value = _eval_node(node.operand, metrics, trace)
        if isinstance(node.op, ast.Not):
            t = _truth(value)
            return None if t is None else not t
        if isinstance(value, Estimate):
            if isinstance(node.op, ast.USub):  # exact: the interval flips
                return Estimate(-value.value, -value.high, -value.low, value.n,
                                value.confidence, value.method)
            if isinstance(node.op, ast.UAdd):
                return value
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        left = _eval_node(node.left, metrics, trace)
        right = _eval_node(node.right, metrics, trace)
        _no_estimate([left, right], "arithmetic")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.Compare):
        left = _eval_node(node.left, metrics, trace)
        results: list[Truth] = []
        for op, comparator in zip(node.ops, node.comparators):
            if type(op) not in _CMPOPS:
                raise RuleError(f"unsupported comparison in rule: {type(op).__name__}")
            right = _eval_node(comparator, metrics, trace)
            if left is None or right is None:
                raise RuleError("a comparison's operand is an unknown truth value")
            truth = compare_intervals(_CMPOPS[type(op)], left, right)
            if truth is None:
                trace.unknown.append(ast.unparse(node))
            results.append(truth)
            left = right
        return _kleene_and(results)
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS and not node.keywords):
        args = [_eval_node(a, metrics, trace) for a in node.args]
        if node.func.id == "abs" and len(args) == 1 and isinstance(args[0], Estimate):
            e = args[0]  # exact image of the interval under |.|
            lo = 0.0 if e.low <= 0 <= e.high else min(abs(e.low), abs(e.high))
            return Estimate(abs(e.value), lo, max(abs(e.low), abs(e.high)), e.n, e.confidence,
                            e.method)
        _no_estimate(args, f"{node.func.id}()")
        return _FUNCS[node.func.id](*args)
    raise RuleError(f"unsupported construct in rule: {ast.dump(node)[:80]}")


def _parse_rule(expr: str) -> ast.Expression:
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise RuleError(f"rule {expr!r} is not a valid expression: {exc.msg}") from None
    return tree


def rule_metric_names(rule: str) -> list[str]:
    """Metric names an expression rule reads, in order of appearance ([] if not an expression)."""
    try:
        tree = ast.parse(rule, mode="eval")
    except SyntaxError:
        return []
    names = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id not in _FUNCS]
    return list(dict.fromkeys(names))


class _Recording(dict):
    """The metrics handed to a callable rule, remembering which ones it read."""

    def __init__(self, metrics: Mapping[str, Metric], trace: _Trace):
        super().__init__(metrics)
        self._trace = trace

    def __getitem__(self, key: str) -> Metric:
        value = super().__getitem__(key)
        self._trace.read.append(key)
        return value

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            return self[key]
        return default


def _not_finite(name: str, value: Metric) -> str:
    """Why ``value`` cannot decide a verdict ('' when it can)."""
    if isinstance(value, Estimate):
        bad = [b for b in ("value", "low", "high") if not math.isfinite(getattr(value, b))]
        if bad:
            return f"metric `{name}` has a non-finite {' and '.join(bad)} ({value})"
        return ""
    if isinstance(value, (int, float)) and not math.isfinite(value):
        return f"metric `{name}` is {'NaN' if math.isnan(value) else 'infinite'}"
    return ""


def assess_rule(rule: str | Callable[[Mapping[str, Metric]], Truth],
                metrics: Mapping[str, Metric]) -> tuple[Truth, str]:
    """Evaluate one rule: its truth value, and why when it is unknown.

    A metric the rule reads that is NaN or infinite makes the result unknown, whatever the rest
    of the rule says ("metric `x` is NaN"); an interval that straddles a comparison's boundary
    makes it unknown when the rest cannot decide ("interval straddles the boundary of `d > 0`:
    d = 0.004 [-0.006, 0.015] (n=3)")."""
    trace = _Trace()
    if callable(rule):
        out = rule(_Recording(metrics, trace))
        if out is not None and not isinstance(out, (bool, int)) or isinstance(out, Estimate):
            raise RuleError(f"a callable rule must return True, False or None, got {out!r}")
        truth: Truth = None if out is None else bool(out)
    else:
        result = _eval_node(_parse_rule(rule), metrics, trace)
        if isinstance(result, Estimate):
            raise RuleError("a rule must end in a comparison, not an estimate")
        truth = _truth(result)
    read = list(dict.fromkeys(trace.read))
    broken = [why for why in (_not_finite(n, metrics[n]) for n in read) if why]
    if broken:
        return None, "; ".join(broken)
    if truth is not None:
        return truth, ""
    if trace.unknown:
        shown = ", ".join(f"{n} = {metrics[n]}" for n in read
                          if isinstance(metrics[n], Estimate))
        return None, ("interval straddles the boundary of "
                      + ", ".join(f"`{u}`" for u in dict.fromkeys(trace.unknown))
                      + (f": {shown}" if shown else ""))
    return None, "the rule returned unknown (an interval it reads straddles its boundary)"


def evaluate_rule(rule: str | Callable[[Mapping[str, Metric]], Truth],
                  metrics: Mapping[str, Metric]) -> Truth:
    """Evaluate one rule on measured metrics: True, False or None (unknown: an interval
    straddles the rule's boundary, or a metric it reads is NaN or infinite)."""
    return assess_rule(rule, metrics)[0]


def verdict_of(truth: Truth) -> str:
    """The verdict word for a rule's truth value."""
    return HOLDS if truth is True else FAILS if truth is False else INCONCLUSIVE


@dataclass(frozen=True)
class Judgement:
    """A verdict and why: ``reason`` is never empty for *inconclusive* (interval straddles the
    boundary, metric not finite, the test bed cannot tell)."""

    verdict: str
    reason: str = ""


def _at_scale(rule: Rule, scale: Scale | str) -> Any:
    """A rule or control at ``scale``: a per-scale mapping falls back small -> smoke."""
    scale = Scale.parse(scale)
    if isinstance(rule, Mapping):
        for candidate in (scale.value, "small", "smoke"):
            if candidate in rule:
                return rule[candidate]
        return None
    return rule


def _rule_text(rule: str | Callable[..., Truth]) -> str:
    if callable(rule):
        return (inspect.getdoc(rule) or getattr(rule, "__name__", "callable rule")).strip()
    return rule


def _check_rule(rule: Any, what: str) -> None:
    """Refuse a malformed rule or control at decoration time (a typo fails on import)."""
    if isinstance(rule, str):
        _parse_rule(rule)
    elif isinstance(rule, Mapping):
        if not rule:
            raise RuleError(f"a per-scale {what} mapping must not be empty")
        for key, expr in rule.items():
            Scale.parse(key)
            if not isinstance(expr, str):
                raise RuleError(f"per-scale {what}s must be strings; {key!r} -> {expr!r}")
            _parse_rule(expr)
    elif not callable(rule):
        raise TypeError(f"{what} must be an expression string, a scale->expression mapping or "
                        f"a callable, got {type(rule)}")


@dataclass(frozen=True)
class Claim:
    """A paper's claim: the function that measures, the rule that judges, what the paper says."""

    name: str
    fn: Callable[..., Measurement]
    rule: Rule
    paper: str
    paper_numbers: Mapping[str, float]
    description: str
    module: str
    resources: Mapping[str, Any] = field(default_factory=dict)
    scales: tuple[str, ...] = tuple(s.value for s in Scale)
    control: Rule | None = None
    against: str = ""

    def runs_at(self, scale: Scale | str) -> bool:
        """Whether the claim is run at ``scale`` (``scales=`` of the decorator)."""
        return Scale.parse(scale).value in self.scales

    def rule_for(self, scale: Scale | str) -> str | Callable[[Mapping[str, float]], bool]:
        """The rule that applies at ``scale`` (a per-scale mapping falls back small -> smoke)."""
        rule = _at_scale(self.rule, scale)
        if rule is None:
            raise RuleError(f"claim {self.name!r} has no rule for scale {Scale.parse(scale).value!r}")
        return rule

    def control_for(self, scale: Scale | str) -> str | Callable[..., Truth] | None:
        """The control that applies at ``scale`` (None: the claim declares none there)."""
        return None if self.control is None else _at_scale(self.control, scale)

    def rule_text(self, scale: Scale | str) -> str:
        return _rule_text(self.rule_for(scale))

    def control_text(self, scale: Scale | str) -> str:
        control = self.control_for(scale)
        return "" if control is None else _rule_text(control)

    def judge(self, metrics: Mapping[str, Metric], scale: Scale | str) -> Judgement:
        """The verdict with its reason, computed from the metrics by the rule and the control.

        The control is read first: false or unknown, the test bed cannot tell, and the verdict
        is *inconclusive* whatever the rule says (the rule's own verdict is named in the
        reason). Otherwise the rule decides; a metric it reads that is not finite, or an
        interval across its boundary, gives *inconclusive* with that reason."""
        truth, why = assess_rule(self.rule_for(scale), metrics)
        control = self.control_for(scale)
        if control is not None:
            ctruth, cwhy = assess_rule(control, metrics)
            if ctruth is not True:
                state = "is false" if ctruth is False else f"is unknown ({cwhy})"
                return Judgement(INCONCLUSIVE, f"the test bed cannot tell: control "
                                               f"`{self.control_text(scale)}` {state}; the rule "
                                               f"alone: {verdict_of(truth)}")
        return Judgement(verdict_of(truth), why)

    def verdict(self, metrics: Mapping[str, Metric], scale: Scale | str) -> str:
        """``holds`` / ``fails`` / ``inconclusive``, computed from the metrics by the rule (and
        the control, see :meth:`judge`)."""
        return self.judge(metrics, scale).verdict

    def resources_for(self, scale: Scale | str) -> dict[str, float]:
        """What one run at ``scale`` asks of a machine: ``{"cpus": int, "gpus": float}``."""
        scale = Scale.parse(scale)
        out = {"cpus": 1, "gpus": 0}
        for key, value in self.resources.items():
            if isinstance(value, Mapping):
                value = next((value[c] for c in (scale.value, "small", "smoke") if c in value),
                             out[key])
            out[key] = value
        return out

    @property
    def wants_progress(self) -> bool:
        return "progress" in inspect.signature(self.fn).parameters

    def __call__(self, scale: Scale | str, seed: int, progress: Callable[..., None] | None = None
                 ) -> Measurement:
        scale = Scale.parse(scale)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {seed!r}")
        if not self.runs_at(scale):
            raise ValueError(f"claim {self.name!r} runs at {', '.join(self.scales)}, "
                             f"not at {scale.value}")
        if self.wants_progress:
            out = self.fn(scale, seed, progress=progress or (lambda *a, **k: None))
        else:
            out = self.fn(scale, seed)
        if not isinstance(out, Measurement):
            raise TypeError(f"claim {self.name!r} must return a Measurement, got {type(out)}")
        return out


def _check_resources(resources: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(resources, Mapping):
        raise TypeError(f"resources must be a mapping like {{'cpus': 2}}, got {resources!r}")

    def amount(key: str, v: Any) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or v < 0 or (key == "cpus" and (v < 1 or v != int(v))):
            want = "an int >= 1" if key == "cpus" else "a number >= 0"
            raise ValueError(f"resources[{key!r}] must be {want}, got {v!r}")
        return int(v) if key == "cpus" else float(v)

    out: dict[str, Any] = {}
    for key, value in resources.items():
        if key not in ("cpus", "gpus"):
            raise ValueError(f"resources keys are 'cpus' and 'gpus', got {key!r}")
        if isinstance(value, Mapping):
            out[key] = {Scale.parse(s).value: amount(key, v) for s, v in value.items()}
        else:
            out[key] = amount(key, value)
    return out


def claim(
    *,
    rule: Rule,
    paper: str,
    paper_numbers: Mapping[str, float] | None = None,
    name: str | None = None,
    resources: Mapping[str, Any] | None = None,
    scales: Sequence[str] | None = None,
    control: Rule | None = None,
    against: str | None = None,
) -> Callable[[Callable[..., Measurement]], Claim]:
    """Declare a claim. ``rule`` judges the metrics; ``paper`` (text) and ``paper_numbers``
    (metric name -> the paper's value for the comparable setting) are shown beside ours.
    ``control`` (same forms as ``rule``) states what the test bed must show for the verdict to
    mean anything, e.g. ``"null_gain <= 0"`` for a null arm measured in the same run: false or
    unknown gives *inconclusive*, "the test bed cannot tell". ``against`` says in words what
    the claim compares against (a literal string: the baseline, the null arm, the closed form).
    ``resources`` says what one run needs: ``{"cpus": 2, "gpus": {"full": 1}}`` (a number, or
    a scale -> number mapping); ``--jobs`` and the Ray executor respect it. Default: 1 CPU.
    ``scales`` (a literal tuple such as ``("small", "full")``) names the scales the claim runs
    at, for a claim whose smallest honest run cannot fit the smoke budget (say why in its
    docstring, and cover it by a test); default: every scale.

    String rules are parsed at decoration time so a typo fails on import, not after a run.
    """
    _check_rule(rule, "rule")
    if control is not None:
        _check_rule(control, "control")
    if against is not None and (not isinstance(against, str) or not against.strip()):
        raise ValueError(f"against must say what the claim compares against, got {against!r}")
    if not isinstance(paper, str) or not paper.strip():
        raise ValueError("paper must say what the paper reports for the comparable setting")
    numbers = {str(k): float(v) for k, v in (paper_numbers or {}).items()}
    for key, value in numbers.items():
        if not math.isfinite(value):
            raise ValueError(f"paper_numbers[{key!r}] must be finite")

    wanted = _check_resources(resources or {})
    if scales is None:
        runs_at = tuple(s.value for s in Scale)
    elif isinstance(scales, str) or not scales:
        raise ValueError(f"scales must be a non-empty sequence of scale names, got {scales!r}")
    else:
        runs_at = tuple(dict.fromkeys(Scale.parse(s).value for s in scales))

    def decorate(fn: Callable[..., Measurement]) -> Claim:
        params = list(inspect.signature(fn).parameters)
        if params[:2] != ["scale", "seed"]:
            raise TypeError(f"claim function {fn.__name__} must take (scale, seed[, progress]), "
                            f"got ({', '.join(params)})")
        return Claim(
            name=name or fn.__name__,
            fn=fn,
            rule=rule,
            paper=paper.strip(),
            paper_numbers=numbers,
            description=(inspect.getdoc(fn) or "").strip(),
            module=fn.__module__,
            resources=wanted,
            scales=runs_at,
            control=control,
            against=(against or "").strip(),
        )

    return decorate
