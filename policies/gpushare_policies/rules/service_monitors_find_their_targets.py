"""Every ServiceMonitor of the stack selects a Service the pinned HAMi, Karpenter or HAMi-WebUI chart renders, in
the namespace it runs in, and scrapes a port that Service has; the WebUI backend has one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpushare import names

from ..rule import Finding, Rule, finding, finding_about
from ..scrape import WEBUI_BACKEND, ChartService, chart_services
from ..selectors import selects
from ..stack import Resource, StackView, sorted_by_name

SERVICE_MONITOR = f"kubernetes:{names.MONITORING_API}:ServiceMonitor"


def _namespaces_selected(monitor: Resource, namespace: str) -> set[str] | None:
    """prometheus-operator's NamespaceSelector: `any: true` every namespace (None), `matchNames` those, neither the
    ServiceMonitor's own namespace."""
    selector = monitor.get("spec", "namespaceSelector") or {}
    if selector.get("any") is True:
        return None
    listed = selector.get("matchNames")
    return {str(n) for n in listed} if isinstance(listed, list) and listed else {namespace}


def _shown(services: list[ChartService]) -> str:
    return "; ".join(f"{s.component} in {s.namespace} (ports {', '.join(s.ports)})" for s in services)


def check_service_monitor_targets(view: StackView, _config: None) -> Iterator[Finding]:
    services = chart_services(view)
    if not services:
        return  # no chart whose Services we know
    scraped: set[tuple[int, object]] = set()  # (Service, port) pairs some ServiceMonitor scrapes
    for monitor in sorted_by_name(view.of_type(SERVICE_MONITOR)):
        namespace = str(monitor.get("metadata", "namespace") or "default")
        selector: Any = monitor.get("spec", "selector") or {}
        by_labels = [s for s in services if selects(selector, s.labels)]
        namespaces = _namespaces_selected(monitor, namespace)
        found = [s for s in by_labels if namespaces is None or s.namespace in namespaces]
        if not found:
            wrong_namespace = bool(by_labels)
            yield finding(
                monitor,
                "spec.namespaceSelector.matchNames" if wrong_namespace else "spec.selector",
                monitor.get("spec", "namespaceSelector", "matchNames") if wrong_namespace else selector,
                (
                    f"its Services run in {', '.join(sorted({s.namespace for s in by_labels}))} "
                    f"({_shown(by_labels)}), outside the namespaces it selects"
                    if wrong_namespace
                    else f"no Service the pinned charts render has these labels (they render: {_shown(services)})"
                )
                + "; Prometheus finds no target, so the HAMi/Karpenter alerts on it can never fire",
                f"select [{', '.join(sorted({s.namespace for s in by_labels}))}]"
                if wrong_namespace
                else "select the chart Service's labels (app.kubernetes.io/name, instance and component)",
            )
            continue
        ports = {port for s in found for port in s.ports}
        endpoints = monitor.get("spec", "endpoints")
        for index, endpoint in enumerate(endpoints if isinstance(endpoints, list) else []):
            port = endpoint.get("port") if isinstance(endpoint, dict) else None
            scraped.update((id(s), port) for s in found if port in s.ports)
            if port is not None and port not in ports:
                yield finding(
                    monitor,
                    f"spec.endpoints[{index}].port",
                    port,
                    f"the Services it selects have no port of that name ({_shown(found)}): Prometheus scrapes "
                    "nothing from them",
                    f"name one of {', '.join(sorted(ports))}",
                )
    for service in services:
        if service.component == WEBUI_BACKEND and (id(service), names.WEBUI_METRICS_PORT) not in scraped:
            yield finding_about(
                service.release,
                f"no ServiceMonitor scrapes port {names.WEBUI_METRICS_PORT} of the WebUI's Service, whose /metrics "
                "computes the hami_* series every WebUI page queries: the WebUI shows no data",
                f"declare a ServiceMonitor for that Service in {service.namespace}, port {names.WEBUI_METRICS_PORT}",
            )


RULE = Rule(
    name="service-monitors-find-their-targets",
    order=27,
    description="Every ServiceMonitor selects, by labels and namespaces evaluated as sets, a Service the pinned HAMi, "
    "Karpenter or HAMi-WebUI chart renders, and scrapes a port name that Service has; a ServiceMonitor scrapes the "
    "WebUI backend's port metrics.",
    why="A ServiceMonitor that matches no Service, looks in the wrong namespace or names a missing port scrapes "
    "nothing, so HamiSchedulerDown and the NodeClaim alerts never fire; the WebUI's hami_* series exist only "
    "when its backend is scraped.",
    remediation="Select the chart Service's labels in the namespace of its release and name its metrics port; keep "
    "the WebUI ServiceMonitor gpushare renders.",
    enforcement="mandatory",
    severity="medium",
    check=check_service_monitor_targets,
)
