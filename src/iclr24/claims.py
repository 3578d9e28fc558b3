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

``holds`` is never set by hand: :meth:`Claim.verdict` evaluates the rule on the metrics. A rule
is a Python expression over metric names (comparisons, ``and``/``or``/``not``, arithmetic,
``abs``/``min``/``max``), a mapping from scale to such an expression, or a callable
``metrics -> bool``. A metric the rule names but the claim did not measure is an error, not a
silent "fails".

This module imports nothing heavy: papers import it from their ``claims.py`` only.
"""

from __future__ import annotations

import ast
import enum
import inspect
import math
import operator
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "Scale",
    "Measurement",
    "Claim",
    "claim",
    "sizes",
    "Rule",
    "RuleError",
    "evaluate_rule",
    "rule_metric_names",
]


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


@dataclass
class Measurement:
    """What a claim function returns: numbers measured in this run, and how to show them.

    metrics: name -> number (the method's and the baseline's), what the rule reads.
    figure:  an optional matplotlib Figure (stored as PNG, shown in the report).
    tables:  optional named tables (lists of row dicts) for the report, e.g. a benchmark per L.
    notes:   free text: what differs from the paper, how to read the numbers.
    """

    metrics: Mapping[str, float | int | bool]
    figure: Any = None
    tables: Mapping[str, list[Mapping[str, Any]]] = field(default_factory=dict)
    notes: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.metrics, Mapping):
            raise TypeError(f"metrics must be a mapping of name -> number, got {type(self.metrics)}")
        clean: dict[str, float] = {}
        for key, value in self.metrics.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ValueError(f"metric names must be identifiers, got {key!r}")
            try:
                clean[key] = float(value)
            except (TypeError, ValueError):
                raise TypeError(f"metric {key!r} must be a number, got {value!r}") from None
        self.metrics = clean
        if not isinstance(self.tables, Mapping):
            raise TypeError("tables must be a mapping of name -> list of row dicts")
        for name, rows in self.tables.items():
            if not isinstance(rows, list) or not all(isinstance(r, Mapping) for r in rows):
                raise TypeError(f"table {name!r} must be a list of row dicts")


class RuleError(ValueError):
    """A rule that cannot be evaluated (bad syntax, unknown metric, forbidden construct)."""


Rule = str | Callable[[Mapping[str, float]], bool] | Mapping[str, str]

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


def _eval_node(node: ast.AST, metrics: Mapping[str, float]) -> Any:
    if isinstance(node, ast.Expression):
        return _eval_node(node.body, metrics)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, bool)):
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in metrics:
            known = ", ".join(sorted(metrics)) or "(none)"
            raise RuleError(f"rule names metric {node.id!r}, which the claim did not measure; "
                            f"measured: {known}")
        return metrics[node.id]
    if isinstance(node, ast.BoolOp):
        values = [bool(_eval_node(v, metrics)) for v in node.values]
        return all(values) if isinstance(node.op, ast.And) else any(values)
    if isinstance(node, ast.UnaryOp):
        value = _eval_node(node.operand, metrics)
        if isinstance(node.op, ast.Not):
            return not value
        if isinstance(node.op, ast.USub):
            return -value
        if isinstance(node.op, ast.UAdd):
            return +value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
        return _BINOPS[type(node.op)](_eval_node(node.left, metrics),
                                      _eval_node(node.right, metrics))
    if isinstance(node, ast.Compare):
        left = _eval_node(node.left, metrics)
        for op, comparator in zip(node.ops, node.comparators):
            if type(op) not in _CMPOPS:
                break
            right = _eval_node(comparator, metrics)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        else:
            return True
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id in _FUNCS and not node.keywords):
        return _FUNCS[node.func.id](*(_eval_node(a, metrics) for a in node.args))
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


def evaluate_rule(rule: str | Callable[[Mapping[str, float]], bool],
                  metrics: Mapping[str, float]) -> bool:
    """Evaluate one rule on measured metrics. NaN compares false, so a NaN metric fails."""
    if callable(rule):
        return bool(rule(dict(metrics)))
    return bool(_eval_node(_parse_rule(rule), metrics))


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

    def rule_for(self, scale: Scale | str) -> str | Callable[[Mapping[str, float]], bool]:
        """The rule that applies at ``scale`` (a per-scale mapping falls back small -> smoke)."""
        scale = Scale.parse(scale)
        if isinstance(self.rule, Mapping):
            for candidate in (scale.value, "small", "smoke"):
                if candidate in self.rule:
                    return self.rule[candidate]
            raise RuleError(f"claim {self.name!r} has no rule for scale {scale.value!r}")
        return self.rule

    def rule_text(self, scale: Scale | str) -> str:
        rule = self.rule_for(scale)
        if callable(rule):
            return (inspect.getdoc(rule) or getattr(rule, "__name__", "callable rule")).strip()
        return rule

    def verdict(self, metrics: Mapping[str, float], scale: Scale | str) -> bool:
        """Whether the claim holds, computed from the metrics by the declared rule."""
        return evaluate_rule(self.rule_for(scale), metrics)

    @property
    def wants_progress(self) -> bool:
        return "progress" in inspect.signature(self.fn).parameters

    def __call__(self, scale: Scale | str, seed: int, progress: Callable[..., None] | None = None
                 ) -> Measurement:
        scale = Scale.parse(scale)
        if not isinstance(seed, int) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {seed!r}")
        if self.wants_progress:
            out = self.fn(scale, seed, progress=progress or (lambda *a, **k: None))
        else:
            out = self.fn(scale, seed)
        if not isinstance(out, Measurement):
            raise TypeError(f"claim {self.name!r} must return a Measurement, got {type(out)}")
        return out


def claim(
    *,
    rule: Rule,
    paper: str,
    paper_numbers: Mapping[str, float] | None = None,
    name: str | None = None,
) -> Callable[[Callable[..., Measurement]], Claim]:
    """Declare a claim. ``rule`` judges the metrics; ``paper`` (text) and ``paper_numbers``
    (metric name -> the paper's value for the comparable setting) are shown beside ours.

    String rules are parsed at decoration time so a typo fails on import, not after a run.
    """
    if isinstance(rule, str):
        _parse_rule(rule)
    elif isinstance(rule, Mapping):
        if not rule:
            raise RuleError("a per-scale rule mapping must not be empty")
        for key, expr in rule.items():
            Scale.parse(key)
            if not isinstance(expr, str):
                raise RuleError(f"per-scale rules must be strings; {key!r} -> {expr!r}")
            _parse_rule(expr)
    elif not callable(rule):
        raise TypeError("rule must be an expression string, a scale->expression mapping or a "
                        f"callable, got {type(rule)}")
    if not isinstance(paper, str) or not paper.strip():
        raise ValueError("paper must say what the paper reports for the comparable setting")
    numbers = {str(k): float(v) for k, v in (paper_numbers or {}).items()}
    for key, value in numbers.items():
        if not math.isfinite(value):
            raise ValueError(f"paper_numbers[{key!r}] must be finite")

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
        )

    return decorate
