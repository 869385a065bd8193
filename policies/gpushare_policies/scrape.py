"""The Services the pinned HAMi, Karpenter and HAMi-WebUI charts render, as ServiceMonitors see them: namespace,
labels and port names. Written down from the chart templates (never rendered here):
- HAMi 2.8.3 and 2.10.0 charts/hami/templates/scheduler/service.yaml and device-plugin/monitorservice.yaml:
  Services `<fullname>-scheduler` (ports `http`, `monitor` -> 9395; 2.10 selects only the leader pod) and
  `<fullname>-device-plugin-monitor` (port `monitorport` -> 9394; only with devicePlugin.enabled), neither with
  dra.enabled on 2.8-2.9 (2.10 removed the option); labels
  app.kubernetes.io/component (hami-scheduler, hami-device-plugin), the chart's labels (_helpers.tpl
  hami-vgpu.labels: name, instance, managed-by) and `<component>.service.labels`.
- Karpenter (aws/karpenter-provider-aws charts/karpenter/templates/service.yaml and _helpers.tpl, v1.14-1.15):
  Service `karpenter` with karpenter.labels (name, instance, managed-by and values.additionalLabels) and ports
  `http-metrics` and `https-webhook`.
- HAMi-WebUI 1.1.0 and 1.2.0 (Project-HAMi/HAMi-WebUI charts/hami-webui/templates/service.yaml and _helpers.tpl,
  unchanged between the two tags): Service
  `<fullname>` with hami-webui.labels (name, instance, managed-by) and app.kubernetes.io/component `hami-webui`,
  ports `http` and `metrics` (the backend, whose /metrics computes the hami_* series the WebUI's pages query).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from gpushare import metrics, names

from .hami import dra_enabled
from .stack import Resource, StackView

WEBUI_BACKEND = "HAMi-WebUI backend"


@dataclass(frozen=True)
class ChartService:
    release: Resource
    component: str  # what it serves, for messages
    namespace: str
    labels: dict[str, str]
    ports: tuple[str, ...]


def _strings(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}


def _chart_labels(release: Resource, chart: str) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": str(release.get("values", "nameOverride") or chart),
        "app.kubernetes.io/instance": release.object_name,
        "app.kubernetes.io/managed-by": "Helm",
    }


def chart_services(view: StackView) -> list[ChartService]:
    services = []
    for release in view.releases(names.HAMI_CHART):
        if dra_enabled(release):
            continue
        namespace, base = str(release.get("namespace") or "default"), _chart_labels(release, names.HAMI_CHART)
        scheduler_labels = _strings(release.get("values", "scheduler", "service", "labels"))
        services.append(
            ChartService(
                release,
                "HAMi scheduler",
                namespace,
                {"app.kubernetes.io/component": "hami-scheduler", **base, **scheduler_labels},
                ("http", "monitor"),
            )
        )
        if release.get("values", "devicePlugin", "enabled") is not False:
            monitor_labels = _strings(release.get("values", "devicePlugin", "service", "labels"))
            services.append(
                ChartService(
                    release,
                    "HAMi device-plugin monitor",
                    namespace,
                    {"app.kubernetes.io/component": "hami-device-plugin", **base, **monitor_labels},
                    ("monitorport",),
                )
            )
    for release in view.releases(names.KARPENTER_CHART):
        services.append(
            ChartService(
                release,
                "Karpenter controller",
                str(release.get("namespace") or "default"),
                {
                    **_chart_labels(release, names.KARPENTER_CHART),
                    **_strings(release.get("values", "additionalLabels")),
                },
                ("http-metrics", "https-webhook"),
            )
        )
    existing = view.existing_cluster()
    if existing is not None and not view.releases(names.KARPENTER_CHART):
        # The existing cluster's Karpenter, installed by its chart as release `deployment` (the Deployment and the
        # Service are named after the release).
        services.append(
            ChartService(
                existing,
                "Karpenter controller",
                str(existing.get("karpenter", "namespace")),
                {
                    "app.kubernetes.io/name": names.KARPENTER_CHART,
                    "app.kubernetes.io/instance": str(existing.get("karpenter", "deployment")),
                    "app.kubernetes.io/managed-by": "Helm",
                },
                ("http-metrics", "https-webhook"),
            )
        )
    for release in view.releases(names.WEBUI_CHART):
        services.append(
            ChartService(
                release,
                WEBUI_BACKEND,
                str(release.get("namespace") or "default"),
                {"app.kubernetes.io/component": "hami-webui", **_chart_labels(release, names.WEBUI_CHART)},
                ("http", names.WEBUI_METRICS_PORT),
            )
        )
    return services


SERVICE_MONITOR = f"kubernetes:{names.MONITORING_API}:ServiceMonitor"


@dataclass(frozen=True)
class ScrapedSeries:
    """The labels a query sees on a metric as the stack's Prometheus scrapes it (gpushare/monitoring/metrics.yaml
    `scrape`): the exporter's own, renamed exported_<name> where they clash with the target's and honorLabels is
    off, plus the target's labels and its ServiceMonitor's relabelings."""

    labels: frozenset[str]  # `label_*` stands for a family
    target_namespaces: frozenset[str] | None  # the values `namespace` can hold when it is the target's
    source: str  # how it is scraped, for messages

    def carries(self, label: str) -> bool:
        return any(fnmatchcase(label, name) for name in self.labels)


def _relabelled(endpoint: Any) -> set[str]:
    """Labels a ServiceMonitor endpoint's relabelings and metricRelabelings write."""
    found: set[str] = set()
    for key in ("relabelings", "metricRelabelings"):
        steps = endpoint.get(key) if isinstance(endpoint, dict) else None
        for step in steps if isinstance(steps, list) else []:
            if isinstance(step, dict) and isinstance(step.get("targetLabel"), str):
                found.add(step["targetLabel"])
    return found


def _service_monitor_scrape(view: StackView, name: str) -> tuple[bool, set[str], frozenset[str]] | None:
    """(honorLabels, labels its relabelings write, namespaces of its targets) of the stack's ServiceMonitor `name`."""
    monitors = view.objects(SERVICE_MONITOR, name)
    if not monitors:
        return None
    monitor = monitors[0]
    endpoints = monitor.get("spec", "endpoints")
    endpoints = [e for e in endpoints if isinstance(e, dict)] if isinstance(endpoints, list) else []
    matched = monitor.get("spec", "namespaceSelector", "matchNames")
    own = monitor.get("metadata", "namespace")
    namespaces = frozenset(str(n) for n in matched) if isinstance(matched, list) and matched else frozenset({str(own)})
    relabelled = set().union(*(_relabelled(e) for e in endpoints)) if endpoints else set()
    return any(e.get("honorLabels") is True for e in endpoints), relabelled, namespaces


def scraped_series(view: StackView, metric: str) -> ScrapedSeries | None:
    """What `metric` looks like in the stack's Prometheus; None when the stack does not say how it is scraped (an
    unknown metric, a ServiceMonitor or release that is not in the stack)."""
    if metrics.component_of(metric) is None:
        return None
    own, how = metrics.exported_labels(metric), metrics.scrape(metric)
    targets = set(metrics.TARGET_LABELS)
    if how.get("synthetic"):
        every = [_relabelled(e) for m in view.of_type(SERVICE_MONITOR) for e in m.get("spec", "endpoints") or []]
        return ScrapedSeries(frozenset(own | targets | set().union(*every)), None, "written by Prometheus per target")
    if "serviceMonitor" in how:
        found = _service_monitor_scrape(view, str(how["serviceMonitor"]))
        if found is None:
            return None
        honor, relabelled, namespaces = found
        source = f"ServiceMonitor {how['serviceMonitor']}"
    else:
        release = view.release(str(how.get("release")))
        if release is None:
            return None
        given = (
            release.get("values", *str(how.get("honorLabelsValue", "")).split("."))
            if "honorLabelsValue" in how
            else None
        )
        honor = given if isinstance(given, bool) else bool(how.get("honorLabels"))
        relabelled, namespaces = set(), frozenset({str(release.get("namespace"))})
        source = f"the {release.object_name} release's ServiceMonitor"
    targets |= relabelled
    source += f", honorLabels {str(honor).lower()}"
    if honor:
        return ScrapedSeries(frozenset(own | targets), None if "namespace" in own else namespaces, source)
    renamed = {f"exported_{label}" if label in targets else label for label in own}
    return ScrapedSeries(frozenset(renamed | targets), namespaces, source)
