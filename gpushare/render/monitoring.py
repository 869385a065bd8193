"""Monitoring as plain data: the Helm releases, scrape objects, GPU alerts and the Grafana dashboard.

Value keys are those of the pinned charts, read at their tags:
- kube-prometheus-stack 88.5.3, prometheus-community/helm-charts charts/kube-prometheus-stack/values.yaml:
  prometheus.prometheusSpec.{retention, storageSpec, nodeSelector, serviceMonitorSelectorNilUsesHelmValues,
  podMonitorSelectorNilUsesHelmValues, ruleSelectorNilUsesHelmValues}, alertmanager.alertmanagerSpec.nodeSelector,
  prometheusOperator.nodeSelector, grafana.sidecar.dashboards.{enabled, label, labelValue, searchNamespace};
  its kube-state-metrics 8.4.0 subchart: nodeSelector, metricLabelsAllowlist.
- dcgm-exporter 4.8.2, NVIDIA/dcgm-exporter deployment/values.yaml at tag 4.5.3-4.8.2: image.tag,
  tolerations, affinity, serviceMonitor.enabled (its ServiceMonitor scrapes port `metrics`).
- hami-webui 1.1.0, Project-HAMi/HAMi-WebUI charts/hami-webui/values.yaml at tag hami-webui-1.1.0:
  image.{frontend,backend}.tag (default floating `main`), service.type, nodeSelector, serviceMonitor.enabled,
  hamiServiceMonitor.enabled, dcgm-exporter.enabled, externalPrometheus.{enabled,address}. Its CI pushes the
  images tagged with the git tag (.github/workflows/ci.yaml), so v1.1.0 exists for both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Final

import yaml

from gpushare import compat, images, names, pins
from gpushare.config import MonitoringConfig, StackConfig
from gpushare.files import SAFE_LOADER
from gpushare.render.hami import hami_values
from gpushare.render.stack import HelmRelease

DATA = Path(__file__).resolve().parent.parent / "monitoring"

DCGM_IMAGE: Final = "nvcr.io/nvidia/k8s/dcgm-exporter"


def _chart_image(reference: str) -> dict[str, str]:
    """A chart's image value map (registry, repository, tag) for a pinned `registry/repository`."""
    registry, _, repository = reference.partition("/")
    return {"registry": registry, "repository": repository, "tag": pins.image_tag(reference)}


# Images each chart pulls by default, written out (with the chart's own tag, so nothing floats) when a mirror
# covers their registry. kube-prometheus-stack 88.5.3 values.yaml, appVersion v0.93.1 for the operator and its
# config reloader; subcharts grafana 12.11.1 (appVersion 13.2.0), kube-state-metrics 8.4.0 (v2.20.0),
# prometheus-node-exporter 4.56.1 (v1.12.1; the `-distroless` suffix the parent chart selects is appended by the
# subchart). Left out, as they never run here: the CRD upgrade job, the operator's webhook Deployment and
# Thanos (all off), Grafana's init, dashboard-download, image-renderer and `helm test` images.
KPS_CHART_IMAGES: Final[images.ImageMaps] = {
    "prometheusOperator.image": _chart_image("quay.io/prometheus-operator/prometheus-operator"),
    "prometheusOperator.prometheusConfigReloader.image": _chart_image(
        "quay.io/prometheus-operator/prometheus-config-reloader"
    ),
    "prometheusOperator.admissionWebhooks.patch.image": _chart_image("ghcr.io/jkroepke/kube-webhook-certgen"),
    "prometheus.prometheusSpec.image": _chart_image("quay.io/prometheus/prometheus"),
    "alertmanager.alertmanagerSpec.image": _chart_image("quay.io/prometheus/alertmanager"),
    "grafana.image": _chart_image("docker.io/grafana/grafana"),
    "grafana.sidecar.image": _chart_image("quay.io/kiwigrid/k8s-sidecar"),
    "kube-state-metrics.image": _chart_image("registry.k8s.io/kube-state-metrics/kube-state-metrics"),
    "prometheus-node-exporter.image": _chart_image("quay.io/prometheus/node-exporter"),
}
# dcgm-exporter 4.8.2 and hami-webui 1.1.0: the registry is part of `repository` (Docker Hub names are short).
DCGM_CHART_IMAGES: Final[images.ImageMaps] = {"image": {"repository": DCGM_IMAGE}}
WEBUI_CHART_IMAGES: Final[images.ImageMaps] = {
    "image.frontend": {"repository": "projecthami/hami-webui-fe-oss"},
    "image.backend": {"repository": "projecthami/hami-webui-be-oss"},
}

# Kubernetes objects of the stack's own Prometheus live here; the Grafana sidecar finds dashboards by label.
DASHBOARD_LABEL: Final = ("grafana_dashboard", "1")
# kube-state-metrics exports node/namespace labels only when allow-listed, then as label_<sanitized key>.
POOL_METRIC_LABEL: Final = "label_" + names.POOL_LABEL.replace(".", "_").replace("/", "_")
# kube-state-metrics sanitizes extended resource names in its `resource` label.
KSM_GPU_RESOURCE: Final = names.GPU.replace(".", "_").replace("/", "_")
# Karpenter chart (aws/karpenter-provider-aws charts/karpenter at v1.14.1; the v1.15 docs name the same
# karpenter.kube-system.svc:8080): Service `<fullname>` port `http-metrics`, labels app.kubernetes.io/name+instance.
KARPENTER_METRICS_PORT: Final = "http-metrics"
# HAMi chart 2.8.3: scheduler Service `<fullname>-scheduler` port `monitor` -> 9395; device-plugin Service
# `<fullname>-device-plugin-monitor` port `monitorport` -> 9394 (charts/hami/templates/*/[monitor]service.yaml).
HAMI_SCHEDULER_METRICS_PORT: Final = "monitor"
HAMI_MONITOR_METRICS_PORT: Final = "monitorport"


@dataclass(frozen=True)
class Alert:
    """One alert and the runbook line the README carries for it."""

    name: str
    expr: str
    minutes: int
    summary: str
    runbook: str


@dataclass(frozen=True)
class Panel:
    title: str
    unit: str
    exprs: tuple[tuple[str, str], ...]  # (legend, PromQL)


@cache
def metric_catalog() -> dict[str, Any]:
    """Metric names each pinned component exports, with their source (gpushare/monitoring/metrics.yaml)."""
    return yaml.load((DATA / "metrics.yaml").read_text(), Loader=SAFE_LOADER)


def known_metrics() -> frozenset[str]:
    return frozenset(m for component in metric_catalog().values() for m in component["metrics"])


@cache
def verified_chart_keys() -> dict[str, Any]:
    """`chart@version` -> value keys read in that chart's values.yaml (gpushare/monitoring/chart-keys.yaml)."""
    return yaml.load((DATA / "chart-keys.yaml").read_text(), Loader=SAFE_LOADER)


def _leaf_paths(values: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in values.items():
        path = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(value, Mapping) and value:
            yield from _leaf_paths(value, path)
        else:
            yield path


def unverified_value_keys(chart: str, version: str, values: Mapping[str, Any]) -> list[str]:
    """Value paths not among the keys verified for that chart version (all of them for an unknown chart)."""
    entry = verified_chart_keys().get(f"{chart}@{version}")
    if entry is None:
        return sorted(_leaf_paths(values))
    keys = entry["keys"]
    return [p for p in _leaf_paths(values) if not any(p == k or p.startswith(f"{k}.") for k in keys)]


def scrape_namespaces() -> dict[str, str]:
    """ServiceMonitor name -> namespace its target runs in."""
    return {
        "hami-scheduler": names.HAMI_NAMESPACE,
        "hami-device-plugin": names.HAMI_NAMESPACE,
        "karpenter": names.KARPENTER_NAMESPACE,
    }


def _gpu_exporter_placement() -> dict[str, Any]:
    return {
        "tolerations": [{"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": names.GPU_TAINT["effect"]}],
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": names.SHARING_LABEL, "operator": "Exists"}]}]
                }
            }
        },
    }


def _system_nodes() -> dict[str, str]:
    return {names.SYSTEM_ROLE_LABEL: names.SYSTEM_ROLE}


def prometheus_url(monitoring: MonitoringConfig) -> str:
    """Where the WebUI queries: the user's Prometheus, or the Service kube-prometheus-stack creates."""
    if monitoring.existing_prometheus is not None:
        return monitoring.existing_prometheus.url
    return f"http://{names.MONITORING_RELEASE}-prometheus.{names.MONITORING_NAMESPACE}.svc:9090"


def kube_prometheus_stack_values(config: StackConfig) -> dict[str, Any]:
    monitoring = config.monitoring
    system = _system_nodes()
    values = {
        "fullnameOverride": names.MONITORING_RELEASE,
        "prometheusOperator": {"nodeSelector": system},
        "alertmanager": {"alertmanagerSpec": {"nodeSelector": system}},
        "prometheus": {
            "prometheusSpec": {
                "nodeSelector": system,
                "retention": monitoring.retention,
                # Select every ServiceMonitor/PodMonitor/PrometheusRule, not only the chart's own.
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                "storageSpec": {
                    "volumeClaimTemplate": {
                        "spec": {
                            "storageClassName": monitoring.storage_class,
                            "accessModes": ["ReadWriteOnce"],
                            "resources": {"requests": {"storage": monitoring.storage_size}},
                        }
                    }
                },
            }
        },
        "grafana": {
            "nodeSelector": system,
            "sidecar": {
                "dashboards": {
                    "enabled": True,
                    "label": DASHBOARD_LABEL[0],
                    "labelValue": DASHBOARD_LABEL[1],
                    "searchNamespace": "ALL",
                }
            },
        },
        "kube-state-metrics": {
            "nodeSelector": system,
            # Pool and sharing labels on node metrics, so panels can group by pool.
            "metricLabelsAllowlist": [f"nodes=[{names.POOL_LABEL},{names.SHARING_LABEL}]"],
        },
    }
    return images.with_chart_images(values, KPS_CHART_IMAGES, config.registry_mirrors)


def dcgm_exporter_values(config: StackConfig) -> dict[str, Any]:
    values = {
        "image": {"tag": pins.image_tag(DCGM_IMAGE)},
        **_gpu_exporter_placement(),
        "serviceMonitor": {"enabled": True, "additionalLabels": _selector_labels(config.monitoring)},
    }
    return images.with_chart_images(values, DCGM_CHART_IMAGES, config.registry_mirrors)


def webui_values(config: StackConfig) -> dict[str, Any]:
    tag = f"v{pins.chart_version(names.WEBUI_CHART)}"
    values = {
        "image": {"frontend": {"tag": tag}, "backend": {"tag": tag}},
        "service": {"type": "ClusterIP"},
        "nodeSelector": _system_nodes(),
        # Scraping is ours (ServiceMonitors below, dcgm-exporter release): the chart's own exporter tolerates
        # no GPU taint and its ServiceMonitors carry labels only its bundled Prometheus selects.
        "serviceMonitor": {"enabled": False},
        "hamiServiceMonitor": {"enabled": False},
        "dcgm-exporter": {"enabled": False},
        "externalPrometheus": {"enabled": True, "address": prometheus_url(config.monitoring)},
    }
    return images.with_chart_images(values, WEBUI_CHART_IMAGES, config.registry_mirrors)


def monitoring_releases(config: StackConfig) -> list[HelmRelease]:
    """kube-prometheus-stack (unless an existing Prometheus is named), dcgm-exporter, HAMi-WebUI."""
    monitoring = config.monitoring
    if not monitoring.enabled:
        return []
    releases = []
    if monitoring.existing_prometheus is None:
        releases.append(
            HelmRelease(
                names.MONITORING_RELEASE,
                names.MONITORING_NAMESPACE,
                names.KUBE_PROMETHEUS_STACK_CHART,
                pins.chart_version(names.KUBE_PROMETHEUS_STACK_CHART),
                pins.chart_repository(names.KUBE_PROMETHEUS_STACK_CHART),
                kube_prometheus_stack_values(config),
            )
        )
    releases += [
        HelmRelease(
            names.DCGM_RELEASE,
            names.MONITORING_NAMESPACE,
            names.DCGM_CHART,
            pins.chart_version(names.DCGM_CHART),
            pins.chart_repository(names.DCGM_CHART),
            dcgm_exporter_values(config),
        ),
        HelmRelease(
            names.WEBUI_RELEASE,
            names.MONITORING_NAMESPACE,
            names.WEBUI_CHART,
            pins.chart_version(names.WEBUI_CHART),
            pins.chart_repository(names.WEBUI_CHART),
            webui_values(config),
        ),
    ]
    return releases


def _selector_labels(monitoring: MonitoringConfig) -> dict[str, str]:
    existing = monitoring.existing_prometheus
    return dict(sorted(existing.labels.items())) if existing is not None else {}


def _metadata(monitoring: MonitoringConfig, name: str, extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    labels = {**_selector_labels(monitoring), **(extra or {})}
    meta: dict[str, Any] = {"name": name, "namespace": names.MONITORING_NAMESPACE}
    if labels:
        meta["labels"] = dict(sorted(labels.items()))
    return meta


def _service_monitor(
    monitoring: MonitoringConfig, name: str, namespace: str, selector: dict[str, str], port: str
) -> dict[str, Any]:
    return {
        "apiVersion": names.MONITORING_API,
        "kind": "ServiceMonitor",
        "metadata": _metadata(monitoring, name),
        "spec": {
            "namespaceSelector": {"matchNames": [namespace]},
            "selector": {"matchLabels": selector},
            "endpoints": [
                {
                    "port": port,
                    "interval": "30s",
                    # HAMi's monitor metrics carry no node label: take it from the scraped pod.
                    "relabelings": [
                        {
                            "sourceLabels": ["__meta_kubernetes_pod_node_name"],
                            "targetLabel": "node",
                            "action": "replace",
                        }
                    ],
                }
            ],
        },
    }


def service_monitors(config: StackConfig) -> list[dict[str, Any]]:
    """HAMi scheduler and device-plugin monitor, Karpenter controller; selectors from the pinned charts."""
    monitoring = config.monitoring
    hami_instance = {"app.kubernetes.io/instance": names.HAMI_RELEASE, "app.kubernetes.io/name": names.HAMI_CHART}
    namespaces = scrape_namespaces()
    return [
        _service_monitor(
            monitoring,
            "hami-scheduler",
            namespaces["hami-scheduler"],
            {**hami_instance, "app.kubernetes.io/component": "hami-scheduler"},
            HAMI_SCHEDULER_METRICS_PORT,
        ),
        _service_monitor(
            monitoring,
            "hami-device-plugin",
            namespaces["hami-device-plugin"],
            {**hami_instance, "app.kubernetes.io/component": "hami-device-plugin"},
            HAMI_MONITOR_METRICS_PORT,
        ),
        _service_monitor(
            monitoring,
            "karpenter",
            namespaces["karpenter"],
            {"app.kubernetes.io/instance": names.KARPENTER_RELEASE, "app.kubernetes.io/name": names.KARPENTER_CHART},
            KARPENTER_METRICS_PORT,
        ),
    ]


def hami_jobs(config: StackConfig) -> tuple[str, str]:
    """The `job` label Prometheus gives HAMi's targets: the Service names of the pinned release."""
    fullname = compat.hami_fullname(names.HAMI_RELEASE, hami_values(config))
    return f"{fullname}-scheduler", f"{fullname}-device-plugin-monitor"


def _team_namespaces(config: StackConfig) -> str:
    return "|".join(team.name for team in config.teams)


def _running_gpu_requests(selector: str = "") -> str:
    """nvidia.com/gpu requested by containers of Running pods (finished pods keep their request series)."""
    extra = f", {selector}" if selector else ""
    requests = f'kube_pod_container_resource_requests{{resource="{KSM_GPU_RESOURCE}"{extra}}}'
    return f'{requests} * on (namespace, pod) group_left () (kube_pod_status_phase{{phase="Running"}} == 1)'


def _pending_gpu_pods() -> str:
    """Pods in phase Pending that request nvidia.com/gpu (every HAMi or exclusive GPU pod does)."""
    pending = 'max by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) == 1'
    gpu = f'sum by (namespace, pod) (kube_pod_container_resource_requests{{resource="{KSM_GPU_RESOURCE}"}}) > 0'
    return f"({pending}) and on (namespace, pod) ({gpu})"


def alerts(config: StackConfig) -> list[Alert]:
    """The GPU alerts, thresholds from config; README "Seeing your GPUs" has a runbook line for each."""
    t = config.monitoring.alerts
    scheduler_job, monitor_job = hami_jobs(config)
    idle = (
        '(sum by (node) (label_replace(GPUDeviceSharedNum, "node", "$1", "nodeid", "(.+)")) == 0)'
        " or "
        f'(avg by (node) (label_replace(DCGM_FI_DEV_GPU_UTIL, "node", "$1", "Hostname", "(.+)"))'
        f" < {t.node_idle_utilization_percent})"
    )
    quota = (
        f'100 * kube_resourcequota{{type="used", resource=~"requests.nvidia.com/.+", '
        f'namespace=~"{_team_namespaces(config)}"}}'
        f' / on (namespace, resourcequota, resource) (kube_resourcequota{{type="hard"}} > 0)'
        f" > {t.quota_use_percent}"
    )
    return [
        Alert(
            "GpuNodeClaimNotInitialized",
            f"max by (name) (operator_nodeclaim_status_condition_current_status_seconds"
            f'{{type="Initialized", status="Unknown"}}) > {t.node_claim_not_initialized_minutes * 60}',
            0,
            f"NodeClaim {{{{ $labels.name }}}} not Initialized after {t.node_claim_not_initialized_minutes} minutes",
            "kubectl describe nodeclaim NAME: ResourceNotRegistered means the HAMi device plugin or the mock "
            "device plugin is not running on that node (kubectl -n kube-system get pods -o wide)",
        ),
        Alert(
            "GpuPodPending",
            _pending_gpu_pods(),
            t.pod_pending_minutes,
            f"GPU pod {{{{ $labels.namespace }}}}/{{{{ $labels.pod }}}} Pending for {t.pod_pending_minutes} minutes",
            "kubectl describe pod: no NodeClaim means no pool fits (quota, pool limit, overlay); a NodeClaim "
            "means the node is still coming up (see GpuNodeClaimNotInitialized)",
        ),
        Alert(
            "GpuNodeIdle",
            idle,
            t.node_idle_minutes,
            f"GPU node {{{{ $labels.node }}}} idle (no vGPU allocated or utilization below "
            f"{t.node_idle_utilization_percent}%) for {t.node_idle_minutes} minutes",
            "kubectl get pods -A -o wide --field-selector spec.nodeName=NODE: move or stop the idle workload, "
            "or let consolidation remove the node",
        ),
        Alert(
            "GpuTeamQuotaHigh",
            quota,
            5,
            f"Team {{{{ $labels.namespace }}}} uses over {t.quota_use_percent}% of its "
            "{{ $labels.resource }} quota",
            "kubectl -n TEAM describe resourcequota: free vGPUs or raise the team's quota in gpushare:teams",
        ),
        Alert(
            "HamiSchedulerDown",
            f'(max(up{{job="{scheduler_job}"}}) == 0) or absent(up{{job="{scheduler_job}"}})',
            t.component_down_minutes,
            "HAMi scheduler is not scraped: GPU pods cannot be scheduled",
            "kubectl -n kube-system get pods -l app.kubernetes.io/component=hami-scheduler; read its logs",
        ),
        Alert(
            "HamiDevicePluginDown",
            f'up{{job="{monitor_job}"}} == 0',
            t.component_down_minutes,
            "HAMi device-plugin monitor on {{ $labels.node }} is down",
            "kubectl -n kube-system get pods -l app.kubernetes.io/component=hami-device-plugin -o wide; a GPU "
            "node without it registers no vGPUs",
        ),
    ]


def rule_groups(config: StackConfig) -> list[dict[str, Any]]:
    """Prometheus rule groups (the PrometheusRule spec, and the file `promtool` checks)."""
    rules = []
    for alert in alerts(config):
        rule: dict[str, Any] = {"alert": alert.name, "expr": alert.expr}
        if alert.minutes:
            rule["for"] = f"{alert.minutes}m"
        rule["labels"] = {"severity": "warning"}
        rule["annotations"] = {"summary": alert.summary, "runbook": alert.runbook}
        rules.append(rule)
    return [{"name": "gpushare-gpu", "rules": rules}]


def prometheus_rule(config: StackConfig) -> dict[str, Any]:
    return {
        "apiVersion": names.MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": _metadata(config.monitoring, "gpushare-gpu"),
        "spec": {"groups": rule_groups(config)},
    }


def _by_pool(expr: str, node_label: str) -> str:
    """Sum a per-node expression by the node's pool (kube_node_labels from kube-state-metrics)."""
    pools = "kube_node_labels"
    if node_label != "node":
        pools = f'label_replace(kube_node_labels, "{node_label}", "$1", "node", "(.+)")'
    return f"sum by ({POOL_METRIC_LABEL}) ({expr} * on ({node_label}) group_left ({POOL_METRIC_LABEL}) {pools})"


def panels(config: StackConfig) -> list[Panel]:
    """Dashboard panels: what is shared and used, per pool and team, and what is stuck."""
    gpu = KSM_GPU_RESOURCE
    pool = f"{{{{{POOL_METRIC_LABEL}}}}}"
    teams = f'namespace=~"{_team_namespaces(config)}"'
    return [
        Panel(
            "vGPUs registered vs allocated per pool",
            "short",
            (
                (f"{pool} registered", _by_pool(f'kube_node_status_allocatable{{resource="{gpu}"}}', "node")),
                (
                    f"{pool} allocated",
                    _by_pool(f"sum by (node) ({_running_gpu_requests()})", "node"),
                ),
            ),
        ),
        Panel(
            "GPU memory registered vs allocated per pool",
            "bytes",
            (
                (f"{pool} registered", _by_pool("sum by (nodeid) (GPUDeviceMemoryLimit)", "nodeid")),
                (f"{pool} allocated", _by_pool("sum by (nodeid) (GPUDeviceMemoryAllocated)", "nodeid")),
            ),
        ),
        Panel(
            "GPU cores registered vs allocated per pool (100 per GPU)",
            "short",
            (
                (f"{pool} registered", _by_pool("sum by (nodeid) (GPUDeviceCoreLimit)", "nodeid")),
                (f"{pool} allocated", _by_pool("sum by (nodeid) (GPUDeviceCoreAllocated)", "nodeid")),
            ),
        ),
        Panel(
            "vGPUs, GPU memory and cores allocated per team",
            "short",
            (
                (
                    "{{namespace}} vGPUs",
                    f"sum by (namespace) ({_running_gpu_requests(teams)})",
                ),
                ("{{podnamespace}} memory MiB", "sum by (podnamespace) (vGPUMemoryAllocated) / 1048576"),
                ("{{podnamespace}} cores %", "sum by (podnamespace) (vGPUCoreAllocated)"),
            ),
        ),
        Panel(
            "GPU utilization per node",
            "percent",
            (("{{Hostname}}", "avg by (Hostname) (DCGM_FI_DEV_GPU_UTIL)"),),
        ),
        Panel(
            "GPU utilization per pod (HAMi vGPU)",
            "percent",
            (
                (
                    "{{podnamespace}}/{{podname}}",
                    "avg by (podnamespace, podname) (Device_utilization_desc_of_container)",
                ),
            ),
        ),
        Panel(
            "Karpenter NodeClaims by condition",
            "short",
            (
                (
                    "{{type}}={{status}}",
                    'sum by (type, status) (operator_nodeclaim_status_condition_count{type=~"Launched|Registered|'
                    'Initialized|Ready"})',
                ),
            ),
        ),
        Panel(
            "Pending GPU pods",
            "short",
            (("{{namespace}}", f"count by (namespace) ({_pending_gpu_pods()})"),),
        ),
    ]


def dashboard(config: StackConfig) -> dict[str, Any]:
    """Grafana dashboard JSON model: one time series panel per Panel, two per row."""
    body = []
    for i, panel in enumerate(panels(config)):
        body.append(
            {
                "id": i + 1,
                "type": "timeseries",
                "title": panel.title,
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "gridPos": {"h": 8, "w": 12, "x": 12 * (i % 2), "y": 8 * (i // 2)},
                "fieldConfig": {"defaults": {"unit": panel.unit}, "overrides": []},
                "targets": [
                    {"refId": chr(ord("A") + j), "expr": expr, "legendFormat": legend}
                    for j, (legend, expr) in enumerate(panel.exprs)
                ],
            }
        )
    return {
        "uid": "gpushare-gpus",
        "title": "gpushare: GPUs",
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "templating": {
            "list": [{"name": "datasource", "type": "datasource", "query": "prometheus", "label": "Prometheus"}]
        },
        "panels": body,
    }


def dashboard_configmap(config: StackConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(config.monitoring, "gpushare-gpu-dashboard", dict([DASHBOARD_LABEL])),
        "data": {"gpushare-gpus.json": json.dumps(dashboard(config), indent=1, sort_keys=True)},
    }


def all_expressions(config: StackConfig) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every alert and dashboard expression."""
    for alert in alerts(config):
        yield f"alert {alert.name}", alert.expr
    for panel in panels(config):
        for legend, expr in panel.exprs:
            yield f"panel {panel.title!r} ({legend})", expr


def monitoring_objects(config: StackConfig) -> list[dict[str, Any]]:
    """Objects created beside the releases: namespace, ServiceMonitors, rules, dashboard."""
    if not config.monitoring.enabled:
        return []
    # Labelled: the API server counts an apply that sets no field at all as a change (new managedFields
    # time), so a bare namespace would never re-apply as a no-op (seen in make e2e).
    namespace = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": names.MONITORING_NAMESPACE, "labels": {"app.kubernetes.io/part-of": "gpushare"}},
    }
    return [namespace, *service_monitors(config), prometheus_rule(config), dashboard_configmap(config)]
