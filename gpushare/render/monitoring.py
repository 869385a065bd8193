"""Monitoring as plain data: the Helm releases, scrape objects, and the PrometheusRule and dashboard ConfigMap that
ship the alerts and dashboard of render/alerts.py.

Value keys are those of the pinned charts, read at their tags:
- kube-prometheus-stack 88.5.3, prometheus-community/helm-charts charts/kube-prometheus-stack/values.yaml:
  prometheus.prometheusSpec.{retention, storageSpec, persistentVolumeClaimRetentionPolicy, nodeSelector,
  serviceMonitorSelectorNilUsesHelmValues, podMonitorSelectorNilUsesHelmValues, ruleSelectorNilUsesHelmValues},
  alertmanager.alertmanagerSpec.{nodeSelector, secrets}, alertmanager.config.{route.receiver, route.routes,
  receivers}, {kubeScheduler, kubeControllerManager, kubeEtcd, kubeProxy}.enabled, prometheusOperator.nodeSelector,
  grafana.sidecar.dashboards.{enabled, label, labelValue, searchNamespace}; its kube-state-metrics 8.4.0
  subchart: nodeSelector, metricLabelsAllowlist.
- dcgm-exporter 4.8.4, NVIDIA/dcgm-exporter deployment/values.yaml at tag 4.5.3-4.8.2 (the 4.6.0-4.8.3 and
  4.6.1-4.8.4 release notes change none of these): image.tag, tolerations, affinity, extraEnv,
  serviceMonitor.enabled (its ServiceMonitor scrapes port `metrics`).
- hami-webui 1.2.0, Project-HAMi/HAMi-WebUI charts/hami-webui/values.yaml at tag hami-webui-1.2.0 (values and
  templates unchanged since 1.1.0): image.{frontend,backend}.tag (default floating `main`), service.type,
  nodeSelector, serviceMonitor.enabled, hamiServiceMonitor.enabled, dcgm-exporter.enabled,
  externalPrometheus.{enabled,address}. Its CI pushes the images tagged with the git tag (.github/workflows/
  ci.yaml; tag v1.2.0, whose server code equals hami-webui-1.2.0's), so v1.2.0 exists for both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any, Final

import yaml

from gpushare import compat, images, names, pins
from gpushare.alertmanager import NULL_RECEIVER, RECEIVER_CONFIGS, SECRETS_DIR, SILENT_ALERTS
from gpushare.config import AlertReceiverConfig, MonitoringConfig, StackConfig
from gpushare.files import SAFE_LOADER
from gpushare.render import alerts
from gpushare.render.hami import CERTGEN_IMAGE
from gpushare.render.releases import HelmRelease

CHART_KEYS_PATH = Path(__file__).resolve().parent.parent / "monitoring" / "chart-keys.yaml"

DCGM_IMAGE: Final = "nvcr.io/nvidia/k8s/dcgm-exporter"


# Images each chart pulls by default (gpushare/images.py CHART_IMAGES), written out when a mirror covers their
# registry; kube-prometheus-stack's with the tag pinned beside the chart (pins.yaml), so nothing floats. Left out, as
# they never run here: the CRD upgrade job, the operator's webhook Deployment and Thanos (all off), Grafana's init,
# dashboard-download, image-renderer and `helm test` images. The webhook-certificate jobs run ingress-nginx's own
# image, set in the values whether mirrored or not (the chart's default is a fork: gpushare/images.py).
KPS_CERTGEN_PATH: Final = "prometheusOperator.admissionWebhooks.patch.image"
KPS_CHART_IMAGES: Final[images.ImageMaps] = {
    path: {**image.value_map, "tag": pins.image_tag(f"{image.registry}/{image.repository}")}
    for path, image in images.CHART_IMAGES[names.KUBE_PROMETHEUS_STACK_CHART].items()
    if path != KPS_CERTGEN_PATH
}
DCGM_CHART_IMAGES: Final[images.ImageMaps] = images.chart_image_maps(names.DCGM_CHART)
WEBUI_CHART_IMAGES: Final[images.ImageMaps] = images.chart_image_maps(names.WEBUI_CHART)

# Kubernetes objects of the stack's own Prometheus live here; the Grafana sidecar finds dashboards by label.
DASHBOARD_LABEL: Final = ("grafana_dashboard", "1")
# Karpenter chart (aws/karpenter-provider-aws charts/karpenter at v1.14.1; the v1.15 docs name the same
# karpenter.kube-system.svc:8080): Service `<fullname>` port `http-metrics`, labels app.kubernetes.io/name+instance.
KARPENTER_METRICS_PORT: Final = "http-metrics"
# HAMi chart 2.10.0 (as 2.8.3): scheduler Service `<fullname>-scheduler` port `monitor` -> 9395; device-plugin
# Service `<fullname>-device-plugin-monitor` port `monitorport` -> 9394 (charts/hami/templates/*/[monitor]service.yaml).
HAMI_SCHEDULER_METRICS_PORT: Final = "monitor"
HAMI_MONITOR_METRICS_PORT: Final = "monitorport"


@cache
def verified_chart_keys() -> dict[str, Any]:
    """`chart@version` -> value keys read in that chart's values.yaml (gpushare/monitoring/chart-keys.yaml)."""
    return yaml.load(CHART_KEYS_PATH.read_text(), Loader=SAFE_LOADER)


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
        names.WEBUI_RELEASE: names.MONITORING_NAMESPACE,
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


# Alertmanager v0.34 (the chart's appVersion) reads each receiver's credential from a file (RECEIVER_CONFIGS: slack
# api_url_file, pagerduty routing_key_file, webhook url_file), which the prometheus-operator mounts from the Secrets
# of alertmanagerSpec.secrets under SECRETS_DIR: the value stays in the Secret and out of the stack.


def receiver_name(receiver: AlertReceiverConfig) -> str:
    return f"gpushare-{receiver.type}"


def alertmanager_config(receiver: AlertReceiverConfig) -> dict[str, Any]:
    """The Alertmanager `config` values: every alert to the receiver, Watchdog and InfoInhibitor to "null".

    Helm merges maps, so the chart's route timings, inhibit rules and templates stay; the lists it replaces
    (`route.routes`, `receivers`) are written whole, "null" kept for the route to it."""
    configs, file_key = RECEIVER_CONFIGS[receiver.type]
    target: dict[str, Any] = {
        file_key: f"{SECRETS_DIR}/{receiver.secret_name}/{receiver.secret_key}",
        "send_resolved": True,
    }
    if receiver.slack_channel is not None:
        target["channel"] = receiver.slack_channel
    silent = "|".join(SILENT_ALERTS)
    return {
        "route": {
            "receiver": receiver_name(receiver),
            "routes": [{"receiver": NULL_RECEIVER, "matchers": [f'alertname =~ "{silent}"']}],
        },
        "receivers": [{"name": NULL_RECEIVER}, {"name": receiver_name(receiver), configs: [target]}],
    }


def _alertmanager(monitoring: MonitoringConfig) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeSelector": _system_nodes()}
    receiver = monitoring.alert_receiver
    if receiver is None:
        return {"alertmanagerSpec": spec}
    spec["secrets"] = [receiver.secret_name]
    return {"alertmanagerSpec": spec, "config": alertmanager_config(receiver)}


def kube_prometheus_stack_values(config: StackConfig) -> dict[str, Any]:
    monitoring = config.monitoring
    system = _system_nodes()
    values = {
        "fullnameOverride": names.MONITORING_RELEASE,
        "prometheusOperator": {
            "nodeSelector": system,
            "admissionWebhooks": {"patch": {"image": dict(CERTGEN_IMAGE)}},
        },
        "alertmanager": _alertmanager(monitoring),
        "prometheus": {
            "prometheusSpec": {
                "nodeSelector": system,
                "retention": monitoring.retention,
                # Select every ServiceMonitor/PodMonitor/PrometheusRule, not only the chart's own.
                "serviceMonitorSelectorNilUsesHelmValues": False,
                "podMonitorSelectorNilUsesHelmValues": False,
                "ruleSelectorNilUsesHelmValues": False,
                # Delete the volume claim (and its EBS volume) with the StatefulSet: the default, Retain, leaves
                # the volume billing after `pulumi destroy` (StatefulSetAutoDeletePVC, GA in Kubernetes 1.32;
                # the chart's crd-prometheuses.yaml has the field). Scaling down keeps it.
                "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete", "whenScaled": "Retain"},
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
        # EKS exposes none of these targets: each would add a `...Down` alert firing forever.
        **{key: {"enabled": False} for key in compat.KPS_COMPONENTS_EKS_HIDES},
        "kube-state-metrics": {
            "nodeSelector": system,
            # Pool and sharing labels on node metrics, so panels can group by pool.
            "metricLabelsAllowlist": [f"nodes=[{names.POOL_LABEL},{names.SHARING_LABEL}]"],
        },
    }
    return images.with_chart_images(values, KPS_CHART_IMAGES, config.registry_mirrors)


# dcgm-exporter attributes a GPU to a pod only for `nvidia.com/gpu` and the resource names of this variable
# (4.5.3-4.8.2 pkg/cmd/app.go flag --nvidia-resource-names, a comma-separated list; transformation/kubernetes.go
# skips every other resource): without it a time-sliced pool's GPUs carry no pod, namespace or container label.
DCGM_RESOURCE_NAMES_ENV: Final = "NVIDIA_RESOURCE_NAMES"


def dcgm_exporter_values(config: StackConfig) -> dict[str, Any]:
    values = {
        "image": {"tag": pins.image_tag(DCGM_IMAGE)},
        **_gpu_exporter_placement(),
        "extraEnv": [{"name": DCGM_RESOURCE_NAMES_ENV, "value": names.GPU_SHARED}],
        "serviceMonitor": {"enabled": True, "additionalLabels": _selector_labels(config.monitoring)},
    }
    return images.with_chart_images(values, DCGM_CHART_IMAGES, config.registry_mirrors)


def webui_values(config: StackConfig) -> dict[str, Any]:
    tag = f"v{pins.chart_version(names.WEBUI_CHART)}"
    values = {
        "image": {"frontend": {"tag": tag}, "backend": {"tag": tag}},
        "service": {"type": "ClusterIP"},
        "nodeSelector": _system_nodes(),
        # Scrape objects are ours (service_monitors, the dcgm-exporter release), so the policy pack sees every
        # one (it cannot look inside a chart) and they carry an existing Prometheus's selector labels: ours
        # scrapes this backend, another HAMi device-plugin monitor would scrape its targets twice, and the
        # bundled exporter tolerates no GPU taint.
        "serviceMonitor": {"enabled": False},
        "hamiServiceMonitor": {"enabled": False},
        "dcgm-exporter": {"enabled": False},
        "externalPrometheus": {"enabled": True, "address": prometheus_url(config.monitoring)},
    }
    return images.with_chart_images(values, WEBUI_CHART_IMAGES, config.registry_mirrors)


def monitoring_releases(config: StackConfig) -> list[HelmRelease]:
    """kube-prometheus-stack (unless an existing Prometheus is named), dcgm-exporter, HAMi-WebUI."""
    if not config.monitoring.enabled:
        return []
    releases = []
    if names.KUBE_PROMETHEUS_STACK_CHART in config.charts():
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


# HAMi's per-container monitor metrics carry no node label: take it from the scraped pod.
NODE_FROM_POD: Final = {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}


def _service_monitor(
    monitoring: MonitoringConfig,
    name: str,
    namespace: str,
    selector: dict[str, str],
    port: str,
    relabelings: tuple[dict[str, Any], ...] = (),
    honor_labels: bool = False,
) -> dict[str, Any]:
    endpoint: dict[str, Any] = {"port": port, "interval": "30s"}
    if honor_labels:
        endpoint["honorLabels"] = True
    if relabelings:
        endpoint["relabelings"] = list(relabelings)
    return {
        "apiVersion": names.MONITORING_API,
        "kind": "ServiceMonitor",
        "metadata": _metadata(monitoring, name),
        "spec": {
            "namespaceSelector": {"matchNames": [namespace]},
            "selector": {"matchLabels": selector},
            "endpoints": [endpoint],
        },
    }


def service_monitors(config: StackConfig) -> list[dict[str, Any]]:
    """HAMi scheduler and device-plugin monitor, Karpenter controller, HAMi-WebUI backend; selectors from the
    pinned charts.

    HAMi >= 2.9 labels its series with the workload's `namespace`, `pod` and `container` (and the scheduler's with
    the GPU's `node`), which clash with the target labels prometheus-operator adds: without honorLabels they arrive
    as `exported_*`, and the dashboard's per-team panels and HAMi-WebUI's per-container queries find nothing."""
    monitoring = config.monitoring
    hami_instance = {"app.kubernetes.io/instance": names.HAMI_RELEASE, "app.kubernetes.io/name": names.HAMI_CHART}
    namespaces = scrape_namespaces()
    karpenter_instance = names.KARPENTER_RELEASE
    if config.existing_cluster is not None:  # the running Karpenter, its Service named after its release
        namespaces["karpenter"] = config.existing_cluster.karpenter.namespace
        karpenter_instance = config.existing_cluster.karpenter.deployment
    return [
        _service_monitor(
            monitoring,
            "hami-scheduler",
            namespaces["hami-scheduler"],
            {**hami_instance, "app.kubernetes.io/component": "hami-scheduler"},
            HAMI_SCHEDULER_METRICS_PORT,
            honor_labels=True,
        ),
        _service_monitor(
            monitoring,
            "hami-device-plugin",
            namespaces["hami-device-plugin"],
            {**hami_instance, "app.kubernetes.io/component": "hami-device-plugin"},
            HAMI_MONITOR_METRICS_PORT,
            relabelings=(NODE_FROM_POD,),
            honor_labels=True,
        ),
        _service_monitor(
            monitoring,
            "karpenter",
            namespaces["karpenter"],
            {"app.kubernetes.io/instance": karpenter_instance, "app.kubernetes.io/name": names.KARPENTER_CHART},
            KARPENTER_METRICS_PORT,
            relabelings=(NODE_FROM_POD,),
        ),
        # No relabeling: the backend's series carry their own `node` label, which a target label of that name
        # would rename to `exported_node`, and the WebUI's per-node queries would find nothing.
        _service_monitor(
            monitoring,
            names.WEBUI_RELEASE,
            namespaces[names.WEBUI_RELEASE],
            {
                "app.kubernetes.io/instance": names.WEBUI_RELEASE,
                "app.kubernetes.io/name": names.WEBUI_CHART,
                "app.kubernetes.io/component": names.WEBUI_CHART,
            },
            names.WEBUI_METRICS_PORT,
        ),
    ]


def prometheus_rule(config: StackConfig) -> dict[str, Any]:
    return {
        "apiVersion": names.MONITORING_API,
        "kind": "PrometheusRule",
        "metadata": _metadata(config.monitoring, "gpushare-gpu"),
        "spec": {"groups": alerts.rule_groups(config)},
    }


def dashboard_configmap(config: StackConfig) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _metadata(config.monitoring, "gpushare-gpu-dashboard", dict([DASHBOARD_LABEL])),
        "data": {"gpushare-gpus.json": json.dumps(alerts.dashboard(config), indent=1, sort_keys=True)},
    }


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
