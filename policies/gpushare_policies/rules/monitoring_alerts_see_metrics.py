"""Every alert and recording rule of the stack's PrometheusRules, and every query of its Grafana dashboards, parses,
reads only metrics some component of the stack exports, and spells label values as the exporter writes them."""

from __future__ import annotations

import re
from collections.abc import Iterator

import promql_parser as pql

from gpushare import metrics

from ..promql import PROMETHEUS_RULE, alert_rules, dashboard_queries, metric_name, parse, selectors
from ..rule import Finding, Rule, finding_about
from ..stack import StackView

CATALOGUE = "gpushare/monitoring/metrics.yaml"
_UNSANITIZED = re.compile(r"[^a-zA-Z0-9_]")


def _sanitized(value: str) -> str:
    return _UNSANITIZED.sub("_", value)


def check_alerts_see_metrics(view: StackView, _config: None) -> Iterator[Finding]:
    known, sanitized = metrics.known_metrics(), metrics.sanitized_labels()
    for rule in (*alert_rules(view), *dashboard_queries(view)):
        subject = f"{rule.where} ({rule.name})"
        is_rule = rule.resource.type == PROMETHEUS_RULE
        effect = "the alert never fires" if is_rule else "the panel stays empty"
        tree, error = parse(rule.expr)
        if tree is None:
            yield finding_about(
                rule.resource,
                f"{subject}.expr does not parse as PromQL ({error}): "
                + ("Prometheus refuses the whole rule group" if is_rule else "the panel shows an error"),
                "write the expression as PromQL (`make rules-test` checks it with promtool)",
            )
            continue
        for selector in selectors(tree):
            name = metric_name(selector)
            if name is not None and name not in known:
                yield finding_about(
                    rule.resource,
                    f"{subject} reads metric {name}, which no component of the stack exports ({CATALOGUE} lists what "
                    f"each pinned exporter does): the series never exists, so {effect}",
                    f"use a metric listed in {CATALOGUE}, or list the exporter's metric there with its source",
                )
            for matcher in selector.matchers.matchers:
                if matcher.name not in sanitized.get(name or "", ()):
                    continue
                literal = matcher.op in (pql.MatchOp.Equal, pql.MatchOp.NotEqual)
                spelled = _UNSANITIZED.search(matcher.value) if literal else "/" in matcher.value
                if spelled:
                    fixed = _sanitized(matcher.value) if literal else matcher.value.replace("/", "_")
                    yield finding_about(
                        rule.resource,
                        f'{subject} matches {name}{{{matcher.name}{_op(matcher)}"{matcher.value}"}}, but '
                        f"kube-state-metrics writes that label sanitized (every character outside [a-zA-Z0-9_] as _): "
                        f"the selector matches nothing, so {effect}",
                        f'write {matcher.name}{_op(matcher)}"{fixed}"',
                    )


_OPERATORS = ((pql.MatchOp.Equal, "="), (pql.MatchOp.NotEqual, "!="), (pql.MatchOp.Re, "=~"), (pql.MatchOp.NotRe, "!~"))


def _op(matcher: pql.Matcher) -> str:
    """How PromQL writes the matcher's operator (MatchOp is not hashable)."""
    return next(text for op, text in _OPERATORS if matcher.op == op)


RULE = Rule(
    name="monitoring-alerts-see-metrics",
    order=64,
    description="Every PrometheusRule expression and dashboard query parses, reads only metrics a component of "
    "the stack exports "
    f"({CATALOGUE}), and matches kube-state-metrics' sanitized resource names (nvidia_com_gpu, not nvidia.com/gpu).",
    why="An expression over a metric nobody exports, or a label value spelled the Kubernetes way where the exporter "
    "sanitizes it, selects nothing: the alert is loaded, green, and can never fire.",
    remediation=f"Use the metric names and label spellings of {CATALOGUE} (`make rules-test` checks them with "
    "Prometheus's own parser too).",
    enforcement="mandatory",
    severity="high",
    check=check_alerts_see_metrics,
)
