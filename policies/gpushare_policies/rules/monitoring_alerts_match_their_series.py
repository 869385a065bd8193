"""Every label matcher of the stack's alerts and dashboard queries can match the series it reads, as the stack's
Prometheus scrapes them, and every list of team namespaces names every team of the kind it lists.

The label sets come from gpushare/monitoring/metrics.yaml (each exporter's labels, read from its source, and how the
stack scrapes it), turned into what a query sees by scrape.py: a label the exporter writes that clashes with a
target label arrives as exported_<name> when honorLabels is off (Karpenter's pod namespace on
karpenter_pods_provisioning_unbound_time_seconds), and `namespace` is then the scrape target's. A matcher that
cannot match the empty string needs the label to exist; one on the target's namespace needs a value it can hold.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import promql_parser as pql

from gpushare import names

from ..promql import PROMETHEUS_RULE, alert_rules, dashboard_queries, metric_name, parse, selectors
from ..rule import Finding, Rule, finding_about
from ..scrape import ScrapedSeries, scraped_series
from ..stack import NAMESPACE, StackView

_NAME = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_OPERATORS = ((pql.MatchOp.Equal, "="), (pql.MatchOp.NotEqual, "!="), (pql.MatchOp.Re, "=~"), (pql.MatchOp.NotRe, "!~"))


def _op(matcher: pql.Matcher) -> str:
    return next(text for op, text in _OPERATORS if matcher.op == op)


def _matches(matcher: pql.Matcher, value: str) -> bool:
    """Whether a positive matcher (= or =~, anchored as Prometheus anchors regexes) admits `value`."""
    if matcher.op == pql.MatchOp.Equal:
        return matcher.value == value
    try:
        return re.fullmatch(matcher.value, value) is not None
    except re.error:
        return True  # a regex Python reads differently from RE2 is not judged


def _teams(view: StackView) -> tuple[set[str], set[str]]:
    """(every team namespace, those whose pods go through HAMi: not labelled for HAMi's webhook to skip)."""
    teams, hami = set(), set()
    for namespace in view.of_type(NAMESPACE):
        labels = namespace.get("metadata", "labels") or {}
        if names.TEAM_LABEL in labels:
            teams.add(namespace.object_name)
            if labels.get(names.HAMI_WEBHOOK_IGNORE[0]) != names.HAMI_WEBHOOK_IGNORE[1]:
                hami.add(namespace.object_name)
    return teams, hami


def _matcher_problems(
    metric: str, series: ScrapedSeries, matcher: pql.Matcher, teams: tuple[set[str], set[str]]
) -> Iterator[tuple[str, str]]:
    """(problem, fix) for one matcher that keeps the selector from ever matching what it is about."""
    shown = f'{metric}{{{matcher.name}{_op(matcher)}"{matcher.value}"}}'
    positive = matcher.op in (pql.MatchOp.Equal, pql.MatchOp.Re)
    if not positive or _matches(matcher, ""):
        return
    exported = f"exported_{matcher.name}"
    if not series.carries(matcher.name):
        renamed = series.carries(exported)
        yield (
            f"matches {shown}, but {metric} carries no label {matcher.name} as the stack scrapes it ({series.source}"
            + (f": the exporter's {matcher.name} arrives as {exported}" if renamed else "")
            + ")",
            f"match {exported}" if renamed else f"match one of its labels ({', '.join(sorted(series.labels))})",
        )
    elif matcher.name == "namespace" and series.target_namespaces is not None:
        held = series.target_namespaces
        if not any(_matches(matcher, namespace) for namespace in held):
            yield (
                f"matches {shown}, but namespace there is the scrape target's ({', '.join(sorted(held))}; "
                f"{series.source}), never a workload's",
                f"match {exported}, where the exporter's own namespace label arrives"
                if series.carries(exported)
                else "match a label of the series that holds the namespace",
            )
    if matcher.op != pql.MatchOp.Re:
        return
    listed = {part for part in matcher.value.split("|") if _NAME.fullmatch(part)}
    every, hami = teams
    if len(listed) < 2 or not listed & every or not listed <= every:
        return
    kind, expected = ("teams on HAMi pools", hami) if listed <= hami else ("teams", every)
    missing = sorted(expected - listed)
    if missing:
        yield (
            f"matches {shown}, a list of {kind} that leaves out {', '.join(missing)}, whose pods use the same kind "
            "of pools: for them it can never fire",
            f"list every one of the stack's {kind} ({', '.join(sorted(expected))})",
        )


def check_series(view: StackView, _config: None) -> Iterator[Finding]:
    teams = _teams(view)
    for rule in (*alert_rules(view), *dashboard_queries(view)):
        tree, _error = parse(rule.expr)
        if tree is None:
            continue  # monitoring-alerts-see-metrics reports it
        effect = "the alert never fires" if rule.resource.type == PROMETHEUS_RULE else "the panel stays empty"
        for selector in selectors(tree):
            metric = metric_name(selector)
            series = scraped_series(view, metric) if metric is not None else None
            if metric is None or series is None:
                continue
            for matcher in selector.matchers.matchers:
                if matcher.name == "__name__":
                    continue
                for problem, fix in _matcher_problems(metric, series, matcher, teams):
                    yield finding_about(rule.resource, f"{rule.where} ({rule.name}) {problem}: {effect}", fix)


RULE = Rule(
    name="monitoring-alerts-match-their-series",
    order=75,
    description="Every label matcher of the stack's PrometheusRules and dashboard queries names a label its series "
    "carry as the stack's Prometheus scrapes them (gpushare/monitoring/metrics.yaml: the exporters' labels, renamed "
    "exported_<name> where they clash with the target's), never the target's namespace for a workload's, and a "
    "list of team namespaces names every team of the kind it lists (all teams, or all teams on HAMi pools).",
    why="A matcher on a label the series lack, or on Karpenter's namespace label where the pod's arrives as "
    "exported_namespace, selects nothing; a team missing from the list is never alerted on: the alert loads, stays "
    "green and the failure goes unseen.",
    remediation="Match the labels metrics.yaml lists for the metric as scraped, and list every team (gpushare "
    "renders the lists from the stack's teams).",
    enforcement="mandatory",
    severity="high",
    check=check_series,
)
