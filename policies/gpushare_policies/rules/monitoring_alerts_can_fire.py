"""Every alert of the stack's PrometheusRules can fire: no threshold beyond what its expression can reach, no wait
or window longer than the stack's Prometheus keeps samples."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.metrics import duration_seconds

from ..promql import alert_rules, dead_comparisons, duration, parse, windows
from ..rule import Finding, Rule, finding_about
from ..stack import StackView

# kube-prometheus-stack values.yaml (88.5.3): prometheus.prometheusSpec.retention defaults to 10d.
CHART_DEFAULT_RETENTION = "10d"


# What a wait beyond the retention does: Prometheus restores a pending alert after a restart (any upgrade or
# reschedule) only from the samples it kept, and a range reads only what is kept.
_FOR = "every restart in between starts the wait again from what is kept, so in practice it never fires"
_RANGE = "the expression sees only the retained part of that window, less history than it states"


def _retention(view: StackView) -> tuple[str, float] | None:
    """The stack's own Prometheus retention (None when the stack uses an existing Prometheus)."""
    release = view.release(names.KUBE_PROMETHEUS_STACK_CHART)
    if release is None:
        return None
    given = release.get("values", "prometheus", "prometheusSpec", "retention") or CHART_DEFAULT_RETENTION
    kept = duration_seconds(given)
    return (str(given), kept) if kept is not None else None


def _shown(value: float) -> str:
    return f"{value:g}"


def check_alerts_can_fire(view: StackView, _config: None) -> Iterator[Finding]:
    retention = _retention(view)
    for rule in alert_rules(view):
        tree, _error = parse(rule.expr)
        if tree is None:
            continue  # monitoring-alerts-see-metrics reports it
        subject = f"{rule.where} ({rule.name})"
        for operator, threshold, (low, high) in dead_comparisons(tree):
            yield finding_about(
                rule.resource,
                f"{subject} compares {operator} {_shown(threshold)}, but its left side only takes values from "
                f"{_shown(low)} to {_shown(high)} (value ranges and bounded ratios of the metric catalogue): the "
                "comparison never holds, so the alert never fires",
                f"compare with a threshold inside {_shown(low)}..{_shown(high)} (a percentage needs the ratio "
                "multiplied by 100)",
            )
        if retention is None:
            continue
        given, kept = retention
        waits = [("for", rule.for_, duration_seconds(rule.for_), _FOR)] if rule.for_ else []
        waits += [("a range of", duration(w), w, _RANGE) for w in windows(tree)]
        for what, shown, wait, effect in waits:
            if wait is not None and wait > kept:
                yield finding_about(
                    rule.resource,
                    f"{subject} needs {what} {shown}, longer than the {given} the stack's Prometheus keeps samples "
                    f"(kube-prometheus-stack prometheusSpec.retention): {effect}",
                    f"shorten it below {given} or raise gpushare:monitoring.retention",
                )


RULE = Rule(
    name="monitoring-alerts-can-fire",
    order=65,
    description="No PrometheusRule alert compares beyond the range its expression can take (a ratio > 1, a percent "
    "> 100) or waits (`for`, a range) longer than the stack's Prometheus retention.",
    why="Such an alert loads and stays green forever: the failure it watches for goes unseen.",
    remediation="Keep thresholds within what the expression can reach and waits within the retention.",
    enforcement="mandatory",
    severity="medium",
    check=check_alerts_can_fire,
)
