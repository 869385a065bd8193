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
from typing import Any

from gpushare import names

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
