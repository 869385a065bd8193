"""The stack's own Prometheus selects the stack's PrometheusRules and ServiceMonitors."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..prometheus import Selection, agent_mode, kube_prometheus_stack, selection
from ..rule import Finding, Rule, finding
from ..selectors import namespace_labels, selects
from ..stack import NAMESPACE, Resource, StackView, sorted_by_name

KINDS = {"rule": "PrometheusRule", "serviceMonitor": "ServiceMonitor"}


def _labels(resource: Resource) -> dict[str, str]:
    labels = resource.get("metadata", "labels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def _missed(view: StackView, chosen: Selection, objects: list[Resource]) -> list[Resource]:
    namespaces = {n.object_name: n.get("metadata", "labels") for n in view.of_type(NAMESPACE)}
    missed = []
    for obj in objects:
        namespace = str(obj.get("metadata", "namespace") or "default")
        in_namespace = selects(chosen.namespace_selector, namespace_labels(namespace, namespaces.get(namespace)))
        if chosen.selector is None or not in_namespace or not selects(chosen.selector, _labels(obj)):
            missed.append(obj)
    return missed


def check_prometheus_selects(view: StackView, _config: None) -> Iterator[Finding]:
    release = kube_prometheus_stack(view)
    if release is None:
        return  # an existing Prometheus: its selectors are not in the stack
    rules = view.of_type(f"kubernetes:{names.MONITORING_API}:PrometheusRule")
    if agent_mode(release) and rules:
        yield finding(
            release,
            "values.prometheus.agentMode",
            True,
            "an agent-mode Prometheus evaluates no rules: the stack's GPU alerts never run",
            "leave agentMode off for the stack's own Prometheus",
        )
    for kind, kind_name in KINDS.items():
        objects = view.of_type(f"kubernetes:{names.MONITORING_API}:{kind_name}")
        chosen = selection(release, kind)
        missed = _missed(view, chosen, objects)
        if not missed:
            continue
        shown = ", ".join(f"{o.object_name} (labels {_labels(o) or 'none'})" for o in sorted_by_name(missed))
        yield finding(
            release,
            chosen.key,
            chosen.value,
            f"the Prometheus it renders then selects {kind_name}s by "
            f"{'nothing (no selector: none at all)' if chosen.selector is None else chosen.selector}"
            f"{' in namespaces ' + str(chosen.namespace_selector) if chosen.namespace_selector else ''}, which "
            f"leaves out {shown}: Prometheus ignores them, so their "
            f"{'alerts never fire' if kind == 'rule' else 'targets are never scraped'}",
            f"set {kind}SelectorNilUsesHelmValues: false with no {kind}Selector (every {kind_name}, as gpushare "
            "renders), or a selector the stack's objects match",
        )


RULE = Rule(
    name="prometheus-selects-stack-objects",
    order=66,
    description="The kube-prometheus-stack Prometheus (ruleSelector, serviceMonitorSelector, their "
    "*SelectorNilUsesHelmValues and namespace selectors, as chart 88.5.3 renders them) selects every PrometheusRule "
    "and ServiceMonitor of the stack, and is not an agent.",
    why="The chart's defaults select only objects labelled release: <release>; gpushare's objects carry no such "
    "label, so Prometheus silently ignores the GPU alerts and HAMi/Karpenter scrape targets.",
    remediation="Keep gpushare's values (every *SelectorNilUsesHelmValues false, no selectors), or label the objects "
    "the way a custom selector asks.",
    enforcement="mandatory",
    severity="high",
    check=check_prometheus_selects,
)
