"""PromQL of the stack's PrometheusRules, parsed (promql-parser, a Python binding of a Rust PromQL parser) into
what the rules judge: the series selectors an expression reads, the time windows it needs, and the least and
greatest value each comparison can see."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import promql_parser as pql

from gpushare import metrics

from .stack import CONFIG_MAP, Resource, StackView

PROMETHEUS_RULE = "kubernetes:monitoring.coreos.com/v1:PrometheusRule"
UNBOUNDED = (-math.inf, math.inf)
# Functions and aggregations whose result lies within the values of their first vector argument.
_WITHIN_INPUT = frozenset(
    {"label_replace", "label_join", "max_over_time", "min_over_time", "avg_over_time", "last_over_time", "sort"}
)
_WITHIN_AGGREGATE = frozenset({"max", "min", "avg", "topk", "bottomk", "quantile"})


@dataclass(frozen=True)
class AlertRule:
    """One rule of a PrometheusRule, with where it sits (`spec.groups[0].rules[2]`)."""

    resource: Resource
    where: str
    name: str
    expr: str
    for_: Any


def alert_rules(view: StackView) -> Iterator[AlertRule]:
    for resource in view.of_type(PROMETHEUS_RULE):
        groups = resource.get("spec", "groups")
        for g, group in enumerate(groups if isinstance(groups, list) else []):
            rules = group.get("rules") if isinstance(group, dict) else None
            for r, rule in enumerate(rules if isinstance(rules, list) else []):
                if isinstance(rule, dict) and isinstance(rule.get("expr"), str):
                    name = str(rule.get("alert") or rule.get("record") or f"rule {r}")
                    yield AlertRule(resource, f"spec.groups[{g}].rules[{r}]", name, rule["expr"], rule.get("for"))


def dashboard_queries(view: StackView) -> Iterator[AlertRule]:
    """The PromQL of every Grafana dashboard the stack ships in a ConfigMap (recognised by its content: JSON with
    panels whose targets have an `expr`, whatever the sidecar label), as rules without a `for`."""
    for resource in view.of_type(CONFIG_MAP):
        data = resource.get("data")
        for key, text in sorted(data.items()) if isinstance(data, dict) else ():
            try:
                dashboard = json.loads(text) if isinstance(text, str) else None
            except ValueError:
                continue
            panels = dashboard.get("panels") if isinstance(dashboard, dict) else None
            for p, panel in enumerate(panels if isinstance(panels, list) else []):
                targets = panel.get("targets") if isinstance(panel, dict) else None
                for t, target in enumerate(targets if isinstance(targets, list) else []):
                    if isinstance(target, dict) and isinstance(target.get("expr"), str):
                        where = f'data["{key}"] panels[{p}].targets[{t}]'
                        yield AlertRule(resource, where, str(panel.get("title") or f"panel {p}"), target["expr"], None)


def parse(expr: str) -> tuple[Any, str | None]:
    """(syntax tree, None), or (None, the parser's message) when the expression does not parse."""
    try:
        return pql.parse(expr), None
    except ValueError as error:
        return None, str(error)


def duration(total: float) -> str:
    """Seconds as Prometheus writes a duration, in its largest whole unit (`20d`, `90m`)."""
    for unit, suffix in ((86400, "d"), (3600, "h"), (60, "m")):
        if total >= unit and total % unit == 0:
            return f"{int(total // unit)}{suffix}"
    return f"{total:g}s"


def _children(node: Any) -> list[Any]:
    if isinstance(node, pql.BinaryExpr):
        return [node.lhs, node.rhs]
    if isinstance(node, (pql.ParenExpr, pql.UnaryExpr, pql.SubqueryExpr)):
        return [node.expr]
    if isinstance(node, pql.AggregateExpr):
        return [node.expr, *([node.param] if node.param is not None else [])]
    if isinstance(node, pql.Call):
        return list(node.args)
    if isinstance(node, pql.MatrixSelector):
        return [node.vector_selector]
    return []


def walk(node: Any) -> Iterator[Any]:
    yield node
    for child in _children(node):
        yield from walk(child)


def metric_name(selector: Any) -> str | None:
    """The metric a vector selector reads (by name or `__name__="..."`); None for a pattern."""
    if selector.name:
        return str(selector.name)
    for matcher in selector.matchers.matchers:
        if matcher.name == "__name__" and matcher.op == pql.MatchOp.Equal:
            return str(matcher.value)
    return None


def selectors(tree: Any) -> list[Any]:
    return [node for node in walk(tree) if isinstance(node, pql.VectorSelector)]


def windows(tree: Any) -> list[float]:
    """Seconds of history each range selector and subquery reads."""
    return [
        node.range.total_seconds()
        for node in walk(tree)
        if isinstance(node, (pql.MatrixSelector, pql.SubqueryExpr)) and isinstance(node.range, timedelta)
    ]


def _label_values(selector: Any) -> dict[str, str]:
    return {m.name: m.value for m in selector.matchers.matchers if m.op == pql.MatchOp.Equal}


def _bounded_ratio(lhs: Any, rhs: Any) -> float | None:
    """The catalogue's bound on `lhs / rhs` when both read the two sides of one of its bounded ratios."""
    left, right = selectors(lhs), selectors(rhs)
    if len(left) != 1 or len(right) != 1:
        return None
    for ratio in metrics.bounded_ratios():
        if (
            metric_name(left[0]) == metric_name(right[0]) == ratio["metric"]
            and ratio["numerator"].items() <= _label_values(left[0]).items()
            and ratio["denominator"].items() <= _label_values(right[0]).items()
        ):
            return float(ratio["max"])
    return None


def _scaled(node: Any) -> tuple[float, Any]:
    """(c, X) for `c * X` or `X * c` with a positive number c, else (1, node)."""
    while isinstance(node, pql.ParenExpr):
        node = node.expr
    if isinstance(node, pql.BinaryExpr) and str(node.op) == "*":
        for number, other in ((node.lhs, node.rhs), (node.rhs, node.lhs)):
            if isinstance(number, pql.NumberLiteral) and number.val > 0:
                return number.val, other
    return 1.0, node


def bounds(node: Any) -> tuple[float, float]:
    """The least and greatest value `node` can take, from the catalogue's value ranges and bounded ratios; unbounded
    where the expression says nothing."""
    if isinstance(node, pql.NumberLiteral):
        return node.val, node.val
    if isinstance(node, pql.ParenExpr):
        return bounds(node.expr)
    if isinstance(node, pql.UnaryExpr):
        low, high = bounds(node.expr)
        return -high, -low
    if isinstance(node, pql.VectorSelector):
        return metrics.value_ranges().get(metric_name(node) or "", UNBOUNDED)
    if isinstance(node, pql.Call) and node.func.name in _WITHIN_INPUT and node.args:
        return bounds(node.args[0])
    if isinstance(node, pql.AggregateExpr) and str(node.op) in _WITHIN_AGGREGATE:
        return bounds(node.expr)
    if isinstance(node, pql.BinaryExpr):
        return _binary_bounds(node)
    return UNBOUNDED


def _binary_bounds(node: Any) -> tuple[float, float]:
    op = str(node.op)
    if op in ("and", "unless") or (op in COMPARISONS and not (node.modifier and node.modifier.return_bool)):
        return bounds(node.lhs)  # a filter keeps the left side's samples
    if op in COMPARISONS:
        return 0.0, 1.0
    if op == "or":
        (a, b), (c, d) = bounds(node.lhs), bounds(node.rhs)
        return min(a, c), max(b, d)
    if op == "/":
        scale, numerator = _scaled(node.lhs)
        ratio = _bounded_ratio(numerator, node.rhs)
        if ratio is not None:
            return 0.0, ratio * scale
    left, right = bounds(node.lhs), bounds(node.rhs)
    if op in ("+", "-", "*", "/") and all(math.isfinite(v) for v in (*left, *right)):
        if op == "/" and right[0] <= 0 <= right[1]:
            return UNBOUNDED
        combine = {"+": float.__add__, "-": float.__sub__, "*": float.__mul__, "/": float.__truediv__}[op]
        values = [combine(float(x), float(y)) for x in left for y in right]
        return min(values), max(values)
    if op in ("*", "/") and isinstance(node.rhs, pql.NumberLiteral) and node.rhs.val > 0:
        scale = node.rhs.val if op == "*" else 1 / node.rhs.val
        return left[0] * scale, left[1] * scale
    if op == "*" and isinstance(node.lhs, pql.NumberLiteral) and node.lhs.val > 0:
        return right[0] * node.lhs.val, right[1] * node.lhs.val
    return UNBOUNDED


COMPARISONS = frozenset({">", "<", ">=", "<=", "==", "!="})


def dead_comparisons(tree: Any) -> list[tuple[str, float, tuple[float, float]]]:
    """(operator, threshold, bounds of the left side) of every comparison with a number that no value of its left
    side can satisfy: that filter never passes a sample, so an alert on it never fires."""
    dead = []
    for node in walk(tree):
        if not isinstance(node, pql.BinaryExpr) or str(node.op) not in COMPARISONS:
            continue
        if not isinstance(node.rhs, pql.NumberLiteral) or (node.modifier and node.modifier.return_bool):
            continue  # only a filter against a number can drop every sample; `bool` keeps them all as 0/1
        low, high = bounds(node.lhs)
        threshold = node.rhs.val
        never = {
            ">": high <= threshold,
            ">=": high < threshold,
            "<": low >= threshold,
            "<=": low > threshold,
            "==": not low <= threshold <= high,
            "!=": low == high == threshold,
        }[str(node.op)]
        if never:
            dead.append((str(node.op), threshold, (low, high)))
    return dead
