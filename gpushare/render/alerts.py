"""The GPU alerts and the Grafana dashboard as data: PromQL over the metrics the pinned components export.

Apart from the monitoring Helm values (render/monitoring.py), which ship them as a PrometheusRule and a
dashboard ConfigMap: `make rules-test` checks these rules and queries with promtool and Prometheus's parser, and
every metric they name is listed, with its source, in gpushare/monitoring/metrics.yaml.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from gpushare import compat, names
from gpushare.config import StackConfig
from gpushare.render.hami import hami_values

DATA = Path(__file__).resolve().parent.parent / "monitoring"
# promtool unit tests of the alerts: series that make each one fire (`make rules-test`).
RULES_TEST_PATH = DATA / "rules-test.yaml"


# kube-state-metrics exports node/namespace labels only when allow-listed, then as label_<sanitized key>.
POOL_METRIC_LABEL: Final = "label_" + names.POOL_LABEL.replace(".", "_").replace("/", "_")


def ksm_resource(name: str) -> str:
    """kube-state-metrics sanitizes extended resource names in its `resource` label (nvidia.com/gpu.shared ->
    nvidia_com_gpu_shared)."""
    return name.replace(".", "_").replace("/", "_")


KSM_GPU_RESOURCE: Final = ksm_resource(names.GPU)
# Whole GPUs and vGPUs (nvidia.com/gpu) and time-sliced replicas (nvidia.com/gpu.shared): every GPU pod asks one.
KSM_GPU_RESOURCES: Final = f"{KSM_GPU_RESOURCE}|{ksm_resource(names.GPU_SHARED)}"


@dataclass(frozen=True)
class Alert:
    """One alert and the runbook line docs/monitoring.md carries for it."""

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


# Free memory per GPU from HAMi's scheduler (bytes: cmd/scheduler/metrics.go multiplies its MiB by 1024*1024).
# hami_gpu_memory_allocated_bytes carries one label more (device_cores) than hami_gpu_memory_limit_bytes (HAMi
# 2.10.0 cmd/scheduler/metrics.go): without `on` the subtraction matches no series.
FREE_GPU_MEMORY = "hami_gpu_memory_limit_bytes - on (node, device_uuid, device_index) hami_gpu_memory_allocated_bytes"


def hami_jobs(config: StackConfig) -> tuple[str, str]:
    """The `job` label Prometheus gives HAMi's targets: the Service names of the pinned release."""
    fullname = compat.hami_fullname(names.HAMI_RELEASE, hami_values(config))
    return f"{fullname}-scheduler", f"{fullname}-device-plugin-monitor"


def karpenter_job(config: StackConfig) -> str:
    """The `job` label Prometheus gives Karpenter's target: its Service, named after its release (the stack's, or the
    running Karpenter's in an existing cluster; render/monitoring.py selects it so)."""
    if config.existing_cluster is not None:
        return config.existing_cluster.karpenter.deployment
    return names.KARPENTER_RELEASE


def _team_namespaces(config: StackConfig) -> str:
    return "|".join(team.name for team in config.teams)


def _running_gpu_requests(selector: str = "") -> str:
    """nvidia.com/gpu requested by containers of Running pods (finished pods keep their request series)."""
    extra = f", {selector}" if selector else ""
    requests = f'kube_pod_container_resource_requests{{resource="{KSM_GPU_RESOURCE}"{extra}}}'
    return f'{requests} * on (namespace, pod) group_left () (kube_pod_status_phase{{phase="Running"}} == 1)'


def _pending_gpu_pods() -> str:
    """Pods in phase Pending that request nvidia.com/gpu (HAMi and exclusive pools) or nvidia.com/gpu.shared
    (time-sliced pools)."""
    pending = 'max by (namespace, pod) (kube_pod_status_phase{phase="Pending"}) == 1'
    gpu = f'sum by (namespace, pod) (kube_pod_container_resource_requests{{resource=~"{KSM_GPU_RESOURCES}"}}) > 0'
    return f"({pending}) and on (namespace, pod) ({gpu})"


def _hami_team_namespaces(config: StackConfig) -> str:
    return "|".join(team.name for team in config.teams if config.uses_hami(team))


def _unplaced_by_hami(config: StackConfig, minutes: int) -> str:
    """Pods of teams on HAMi pools that Karpenter found room for (its summed view of a node, or a node it
    launched) longer than `minutes` ago and that are still unbound: only HAMi's per-GPU placement refuses them.

    Karpenter's `karpenter_pods_provisioning_unbound_time_seconds` counts from its scheduling decision
    (pkg/controllers/metrics/pod, v1.15). Scraped through a ServiceMonitor its `namespace` label (the pod's)
    clashes with the target's and arrives as `exported_namespace` (Prometheus honor_labels false)."""
    unbound = (
        f'karpenter_pods_provisioning_unbound_time_seconds{{exported_namespace=~"{_hami_team_namespaces(config)}"}}'
    )
    pods = f'label_replace({unbound}, "namespace", "$1", "exported_namespace", "(.+)")'
    return f"max by (namespace, name) ({pods}) > {minutes * 60}"


def _hami_quota_use(config: StackConfig) -> str:
    """Percent of each team's HAMi quota (limits.nvidia.com/gpumem, gpucores) HAMi's scheduler has charged: the memory
    of every request style, which Kubernetes' own count misses for percentage and whole-GPU requests. HAMi 2.10
    exports the charge in MiB and the limit as written, in units of memoryFactor MiB (cmd/scheduler/metrics.go,
    pkg/device/quota.go FitQuota multiplies the limit by the factor)."""
    memory = f'quota_name="{names.GPU_MEMORY}"'
    limits = (
        f"(hami_resource_quota_limit{{{memory}}} * {config.hami.profile.memory_factor})"
        f' or hami_resource_quota_limit{{quota_name="{names.GPU_CORES}"}}'
    )
    used = f'max by (namespace, quota_name) (hami_resource_quota_used{{namespace=~"{_team_namespaces(config)}"}})'
    ratio = f"100 * {used} / on (namespace, quota_name) (max by (namespace, quota_name) ({limits}) > 0)"
    return f'label_replace({ratio}, "resource", "limits.$1", "quota_name", "(.+)")'


def _headroom_teams(config: StackConfig) -> str:
    return "|".join(team.name for team in config.teams if team.headroom is not None)


def _buffer_condition(config: StackConfig, metric: str, selector: str) -> str:
    """A CapacityBuffer condition metric of the teams that keep headroom, by team namespace.

    Karpenter exports `operator_capacitybuffer_status_condition_*` per buffer with the CapacityBuffer gate on
    (kubernetes-sigs/karpenter v1.15.0 pkg/controllers/controllers.go, awslabs/operatorpkg status/metrics.go:
    labels namespace, name, type, status, reason); scraped through Karpenter's Service the buffer's `namespace`
    arrives as `exported_namespace`, as for karpenter_pods_provisioning_unbound_time_seconds."""
    series = f'{metric}{{{selector}, exported_namespace=~"{_headroom_teams(config)}"}}'
    return f'label_replace({series}, "namespace", "$1", "exported_namespace", "(.+)")'


def headroom_alerts(config: StackConfig) -> list[Alert]:
    """Warm headroom no existing node keeps: Karpenter writes Provisioning=False (RequiresNewCapacity while it
    launches, or for good when the pool limit or capacity stops it; NotReadyForProvisioning when the template is
    gone) and True once every warm pod fits an existing node. None without headroom."""
    if not _headroom_teams(config):
        return []
    minutes = config.monitoring.alerts.headroom_unsatisfied_minutes
    unsatisfied = _buffer_condition(
        config, "operator_capacitybuffer_status_condition_current_status_seconds", 'type="Provisioning", status="False"'
    )
    return [
        Alert(
            "GpuHeadroomUnsatisfied",
            f"max by (namespace, name, reason) ({unsatisfied}) > {minutes * 60}",
            0,
            f"Warm headroom {{{{ $labels.namespace }}}}/{{{{ $labels.name }}}} not kept for {minutes} minutes "
            "({{ $labels.reason }})",
            "kubectl -n TEAM describe capacitybuffer NAME: RequiresNewCapacity this long means Karpenter cannot "
            "launch the nodes (the pool's maxGpus used up, often by other teams' quotas, see "
            "capacity-buffer-beside-quotas; no capacity for its types; or GpuNodeClaimNotInitialized); "
            "NotReadyForProvisioning means its PodTemplate is gone. The team's pods wait for a node launch until it "
            "is kept again",
        )
    ]


def alerts(config: StackConfig) -> list[Alert]:
    """The GPU alerts, thresholds from config; docs/monitoring.md has a runbook line for each."""
    t = config.monitoring.alerts
    scheduler_job, monitor_job = hami_jobs(config)
    idle = (
        "(sum by (node) (hami_gpu_shared_count) == 0)"
        " or "
        f'(avg by (node) (label_replace(DCGM_FI_DEV_GPU_UTIL, "node", "$1", "hostname", "(.+)"))'
        f" < {t.node_idle_utilization_percent})"
    )
    quota = (
        f'100 * kube_resourcequota{{type="used", resource=~"requests.nvidia.com/.+", '
        f'namespace=~"{_team_namespaces(config)}"}}'
        f' / on (namespace, resourcequota, resource) (kube_resourcequota{{type="hard"}} > 0)'
        f" > {t.quota_use_percent}"
        f" or {_hami_quota_use(config)} > {t.quota_use_percent}"
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
            "HamiPodUnplaced",
            _unplaced_by_hami(config, t.pod_pending_minutes),
            0,
            f"Karpenter found room for pod {{{{ $labels.namespace }}}}/{{{{ $labels.name }}}} over "
            f"{t.pod_pending_minutes} minutes ago; HAMi has not placed it",
            "kubectl describe pod: hami-scheduler's FailedScheduling event says why per node (CardInsufficientMemory, "
            "NodeInsufficientDevice...). Karpenter sums a node's vGPUs and GPU memory, HAMi needs them on one GPU: "
            "fragmented multi-GPU nodes (dashboard: largest free GPU memory on one GPU), more vGPUs than a node has "
            "GPUs. Repack or resize the pods, or keep HAMi pools on one-GPU types",
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
            "kubectl -n TEAM describe resourcequota: free vGPUs or raise the team's quota in gpushare:teams; a "
            "limits.* resource is HAMi's charge (hami_resource_quota_used), which kubectl does not show",
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
        Alert(
            "KarpenterDown",
            f'(max(up{{job="{karpenter_job(config)}"}}) == 0) or absent(up{{job="{karpenter_job(config)}"}})',
            t.component_down_minutes,
            "Karpenter is not scraped: no GPU node is launched, and none consolidated",
            "kubectl -n kube-system get pods -l app.kubernetes.io/name=karpenter; read its logs. Running pods and "
            "nodes are untouched; pods that need a new node wait (GpuPodPending)",
        ),
        *headroom_alerts(config),
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
                (f"{pool} registered", _by_pool("sum by (node) (hami_gpu_memory_limit_bytes)", "node")),
                (f"{pool} allocated", _by_pool("sum by (node) (hami_gpu_memory_allocated_bytes)", "node")),
            ),
        ),
        Panel(
            "GPU memory free per node: summed (what Karpenter sees) vs on one GPU (what HAMi can place)",
            "bytes",
            (
                ("{{node}} summed", f"sum by (node) ({FREE_GPU_MEMORY})"),
                ("{{node}} largest on one GPU", f"max by (node) ({FREE_GPU_MEMORY})"),
            ),
        ),
        Panel(
            "GPU cores registered vs allocated per pool (100 per GPU)",
            "short",
            (
                (f"{pool} registered", _by_pool("sum by (node) (hami_gpu_core_limit_ratio)", "node")),
                (f"{pool} allocated", _by_pool("sum by (node) (hami_gpu_core_allocated_ratio)", "node")),
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
                ("{{namespace}} memory MiB", "sum by (namespace) (hami_vgpu_memory_allocated_bytes) / 1048576"),
                ("{{namespace}} cores %", "sum by (namespace) (hami_vgpu_core_allocated_ratio)"),
            ),
        ),
        Panel(
            "GPU utilization per node",
            "percent",
            (("{{hostname}}", "avg by (hostname) (DCGM_FI_DEV_GPU_UTIL)"),),
        ),
        Panel(
            "GPU utilization per pod (HAMi vGPU)",
            "percent",
            (
                (
                    "{{namespace}}/{{pod}}",
                    "avg by (namespace, pod) (hami_container_device_utilization_ratio)",
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
        *headroom_panels(config),
    ]


def headroom_panels(config: StackConfig) -> list[Panel]:
    """Per team, its CapacityBuffers by state: kept (every warm pod fits an existing node), in use (real pods took
    the room, or nodes are launching: Provisioning=False RequiresNewCapacity) and broken (the template cannot be
    resolved). Karpenter exports no replica counts: `make plan` says how many pods each buffer keeps."""
    if not _headroom_teams(config):
        return []
    count = "operator_capacitybuffer_status_condition_count"
    states = (
        ("kept", 'type="Provisioning", status="True"'),
        ("in use, refilling", 'type="Provisioning", status="False", reason="RequiresNewCapacity"'),
        ("broken", 'type="ReadyForProvisioning", status="False"'),
    )
    return [
        Panel(
            "Warm headroom per team: CapacityBuffers kept, in use, broken",
            "short",
            tuple(
                (f"{{{{namespace}}}} {state}", f"sum by (namespace) ({_buffer_condition(config, count, selector)})")
                for state, selector in states
            ),
        )
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


def all_expressions(config: StackConfig) -> Iterator[tuple[str, str]]:
    """(where, PromQL) for every alert and dashboard expression."""
    for alert in alerts(config):
        yield f"alert {alert.name}", alert.expr
    for panel in panels(config):
        for legend, expr in panel.exprs:
            yield f"panel {panel.title!r} ({legend})", expr
