"""Version facts about the charts and images the stack pins, each with its source.

Used by config validation (refuse a bad combination early) and by the policy pack (refuse it in any plan).
"""

from __future__ import annotations

from typing import Any, Final

import yaml

from gpushare import images, names, versions
from gpushare.files import SAFE_LOADER
from gpushare.versions import parse_version

# HAMi chart versions published at https://project-hami.github.io/HAMi/ that this project knows the
# value keys of (read from Project-HAMi/HAMi charts/hami at each tag).
HAMI_CHART_VERSIONS: Final = ("2.7.0", "2.7.1", "2.8.0", "2.8.1", "2.8.2", "2.8.3", "2.9.0", "2.10.0")

# The oldest HAMi chart the stack renders (config refuses older ones; the pack still judges plans that hold one).
# 2.10.0 is the first whose scheduler returns a pod's quota charge when it filters the pod again
# (pkg/scheduler/scheduler.go Filter: quotaManager.RmUsage before re-adding, PR #1905) and undoes it when the
# annotation patch fails (#1898), so HAMi's own quota keys hold; the first whose chart reads
# `device-config.content` (templates/scheduler/device-configmap.yaml), so memoryFactor can be set; and it exports
# the hami_* metric names (since 2.9.0, PR #1644) the stack's alerts, dashboard and HAMi-WebUI read.
HAMI_MIN_VERSION: Final = (2, 10, 0)
# HAMi 2.8.x and 2.9.x leak that charge: Filter drops the pod from its cache without RmUsage (2.8.3 and 2.9.0
# pkg/scheduler/scheduler.go), so every re-filter charges the pod again.
HAMI_QUOTA_RETURNS_CHARGE: Final = versions.minimum("hami-quota")
# `device-config.content` replaces the whole device-config.yaml of the `<fullname>-scheduler-device` ConfigMap.
HAMI_DEVICE_CONFIG_CONTENT: Final = versions.minimum("hami-device-config-content")
# `dra.enabled` (no scheduler, device plugin or device ConfigMap) exists from chart 2.8.0 until 2.10.0 removed it.
HAMI_DRA_OPTION: Final = ((2, 8, 0), (2, 10, 0))

# Mock device plugin image tag -> HAMi chart versions whose own device ConfigMap it parses. HAMi >= 2.9.0 writes
# `vnpus:` as an object; mock 1.0.1 parses a list and exits (mock PR #18, merged after 1.0.1, unreleased).
MOCK_PARSES_HAMI_CONFIG: Final = {"1.0.1": ("2.7.0", "2.7.1", "2.8.0", "2.8.1", "2.8.2", "2.8.3")}
# Mock image tag -> HAMi chart versions whose node annotation hami.io/node-nvidia-register it decodes
# (internal/pkg/api/device/device.go: the CSV of <= 2.7 and the JSON of >= 2.8; 2.9.0 writes 2.8.3's fields, 2.10.0
# adds migProfiles, which it ignores, and drops devicepairscore, which is optional). With a device config of its
# own (MOCK_CONFIG_KEYS) it serves every one of them.
MOCK_READS_HAMI_NODES: Final = {"1.0.1": HAMI_CHART_VERSIONS}
MOCK_IMAGE_REPOSITORY: Final = "docker.io/projecthami/mock-device-plugin"
# What mock 1.0.1 reads from a device config (internal/pkg/api/device/nvidia/device.go GetResource): the count
# resource, whose allocatable tells it HAMi's device plugin runs on the node, the three resources it registers
# (without resourceMemoryPercentageName it registers `nvidia.com/`), and the factor it divides memory by. Nothing
# else is needed, and a config of only these keys under `nvidia:` is one it parses.
MOCK_CONFIG_KEYS: Final = (
    "resourceCountName",
    "resourceMemoryName",
    "resourceCoreName",
    "resourceMemoryPercentageName",
    "memoryFactor",
)
# HAMi values key -> the device config key the chart's template writes it into (templates/scheduler/
# device-configmap.yaml, 2.7.0 to 2.10.0), with the chart default.
HAMI_CONFIG_FROM_VALUES: Final = {
    "resourceCountName": ("resourceName", names.GPU),
    "resourceMemoryName": ("resourceMem", names.GPU_MEMORY),
    "resourceCoreName": ("resourceCores", names.GPU_CORES),
    "resourceMemoryPercentageName": ("resourceMemPercentage", names.GPU_MEMORY_PERCENTAGE),
    "deviceSplitCount": ("devicePlugin.deviceSplitCount", 10),
    "deviceMemoryScaling": ("devicePlugin.deviceMemoryScaling", 1),
    "deviceCoreScaling": ("devicePlugin.deviceCoreScaling", 1),
}
# Keys a `device-config.content` must hold under `nvidia:` (it replaces the chart's whole template), each with
# what goes wrong without it (HAMi v2.10.0 source).
HAMI_CONTENT_REQUIRED: Final = {
    "resourceCountName": "HAMi registers and schedules no nvidia.com resource",
    "resourceMemoryName": "HAMi reads no GPU memory request or quota",
    "resourceCoreName": "HAMi reads no GPU core request or quota",
    "resourceMemoryPercentageName": "HAMi reads no memory-percentage request",
    "defaultGPUNum": "a container asking only gpumem or gpucores gets no vGPU (the webhook adds none)",
    "deviceSplitCount": "HAMi's device plugin dereferences it and crashes (plugin/register.go)",
    "deviceMemoryScaling": "HAMi's device plugin dereferences it and crashes (plugin/register.go)",
    "deviceCoreScaling": "HAMi's device plugin dereferences it and crashes (plugin/register.go)",
    "libCudaLogLevel": "HAMi's device plugin dereferences it in Allocate and crashes (plugin/server.go)",
}

# HAMi-WebUI chart -> HAMi chart versions (from, below) whose metric names it reads. WebUI <= 1.1.0 reads the
# pre-2.9 names (HAMi 2.4-2.8); 1.2.0, the first chart after them (no 1.1.1 chart was published), reads only the
# hami_* names and labels of HAMi >= 2.9 (HAMi-WebUI PR #91; its docs/installation/helm/index.md compatibility
# table). Its backend queries hami_container_device_utilization_ratio and hami_vgpu_memory_used_bytes by
# device_uuid, namespace, pod and container (server/internal/exporter/exporter.go at hami-webui-1.2.0), which HAMi
# 2.10.0's device-plugin monitor exports under those names and labels (cmd/vGPUmonitor/metrics.go); read up to 2.10.
WEBUI_HAMI_RANGES: Final = {
    "1.0.5": ((2, 4, 0), (2, 9, 0)),
    "1.1.0": ((2, 4, 0), (2, 9, 0)),
    "1.2.0": ((2, 9, 0), (2, 11, 0)),
}

# kube-prometheus-stack components (values key -> what EKS hides) whose targets EKS never exposes: each one on
# (the chart's default) adds a ServiceMonitor that finds nothing or is refused and a `...Down` alert that fires
# forever. Chart 88.5.3 gates the Service, ServiceMonitor and rules of each on `<key>.enabled`
# (templates/exporters/*, templates/prometheus/rules-1.14/{kubernetes-system-scheduler,
# kubernetes-system-controller-manager,etcd,kubernetes-system-kube-proxy}.yaml). EKS runs the scheduler,
# controller manager and etcd inside its managed control plane (EKS best practices, control plane), and its
# kube-proxy add-on serves metrics on 127.0.0.1:10249 only (aws/containers-roadmap #657,
# terraform-aws-modules/terraform-aws-eks #742), so the chart's kube-proxy targets are refused.
KPS_COMPONENTS_EKS_HIDES: Final = {
    "kubeScheduler": "kube-scheduler runs in the EKS-managed control plane (KubeSchedulerDown)",
    "kubeControllerManager": "kube-controller-manager runs in the EKS-managed control plane "
    "(KubeControllerManagerDown)",
    "kubeEtcd": "etcd runs in the EKS-managed control plane (etcdMembersDown, etcdInsufficientMembers)",
    "kubeProxy": "the EKS kube-proxy add-on serves metrics on 127.0.0.1:10249 only (KubeProxyDown)",
}

# Karpenter: NodeOverlay exists from 1.7.0, behind the NodeOverlay gate; CapacityBuffer (autoscaling.x-k8s.io/v1beta1,
# gate CapacityBuffer) from 1.14.0; MutatingAdmissionPolicy is GA (admissionregistration.k8s.io/v1, on by default)
# from Kubernetes 1.36 (gpushare/minimum-versions.yaml).
KARPENTER_MIN_OVERLAY_VERSION: Final = versions.minimum("node-overlay")
KARPENTER_MIN_CAPACITY_BUFFER_VERSION: Final = versions.minimum("capacity-buffer")
MUTATING_ADMISSION_POLICY_GA: Final = versions.minimum("mutating-admission-policy")

# The mock plugin advertises one fake device per unit; above this many units of one resource on one node
# the kubelet's 4 MiB gRPC message limit is exceeded and the resource shows 0 (mock PR #27).
MOCK_MAX_UNITS_PER_RESOURCE: Final = 123_011


# The NVIDIA device plugin chart's default node affinity (deployments/helm/nvidia-device-plugin/values.yaml,
# v0.18.2 to v0.20.0 read): any one term admits a node. Helm merges our values into it, so `affinity: {}` deletes
# nothing; only a values affinity with its own nodeSelectorTerms list replaces these terms.
NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS: Final = (
    ({"key": "feature.node.kubernetes.io/pci-10de.present", "operator": "In", "values": ["true"]},),
    ({"key": "feature.node.kubernetes.io/cpu-model.vendor_id", "operator": "In", "values": ["NVIDIA"]},),
    ({"key": names.NVIDIA_GPU_PRESENT_LABEL[0], "operator": "In", "values": [names.NVIDIA_GPU_PRESENT_LABEL[1]]},),
)
# Its default tolerations (same file, v0.20.0): a values list replaces them, `null` or `[]` renders none.
NVIDIA_CHART_DEFAULT_TOLERATIONS: Final = (
    {"key": "CriticalAddonsOnly", "operator": "Exists"},
    {"key": names.GPU, "operator": "Exists", "effect": "NoSchedule"},
)
# The HAMi chart's own mock DaemonSet (charts/hami/templates/device-plugin/daemonsetmock.yaml, 2.8.0 to 2.10.0,
# rendered only with mockDevicePlugin.enabled) has no node selector and only this toleration, fixed in the template.
HAMI_CHART_MOCK_TOLERATIONS: Final = ({"key": "CriticalAddonsOnly", "operator": "Exists"},)
# dcgm-exporter chart defaults (NVIDIA/dcgm-exporter deployment/values.yaml, the same at tags 4.5.1-4.8.0 to
# 4.5.3-4.8.2; 4.8.3 was not in the snapshot read): no node selector or affinity, only the control-plane
# toleration; a values list replaces it.
DCGM_CHART_DEFAULT_TOLERATIONS: Final = (
    {"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"},
)


def hami_at_least(version: str, floor: tuple[int, int, int]) -> bool:
    """Whether HAMi chart `version` is `floor` or newer (ValueError when it is no version)."""
    return parse_version(version) >= floor


def hami_has_dra_option(version: str) -> bool:
    """Whether the chart has `dra.enabled`, which renders no device ConfigMap, device plugin or scheduler."""
    low, high = HAMI_DRA_OPTION
    return low <= parse_version(version) < high


def _value_at(values: dict[str, Any], dotted: str, default: Any) -> Any:
    node: Any = values
    for step in dotted.split("."):
        node = node.get(step) if isinstance(node, dict) else None
    return default if node is None else node


def hami_config_content(version: str, values: dict[str, Any]) -> str:
    """The release's `device-config.content` where its chart reads it (2.10.0+; not a version: none), else ''."""
    section = values.get("device-config")
    content = section.get("content") if isinstance(section, dict) else None
    try:
        read = hami_at_least(version, HAMI_DEVICE_CONFIG_CONTENT)
    except ValueError:
        read = False
    return str(content or "") if read else ""


def hami_nvidia_config(version: str, values: dict[str, Any]) -> dict[str, Any]:
    """The `nvidia:` section of the device config the HAMi release writes, which its scheduler and device plugin
    read: `device-config.content` where the chart reads it and it is set, else what the chart's template writes for
    the keys gpushare models (HAMI_CONFIG_FROM_VALUES; memoryFactor is hard-coded 1 there). ValueError when the
    content is no YAML mapping holding an `nvidia:` mapping."""
    content = hami_config_content(version, values)
    if not content:
        nvidia = {key: _value_at(values, path, default) for key, (path, default) in HAMI_CONFIG_FROM_VALUES.items()}
        return {**nvidia, "memoryFactor": 1}
    try:
        document = yaml.load(content, Loader=SAFE_LOADER)
    except yaml.YAMLError as error:
        raise ValueError(f"is not YAML ({str(error).splitlines()[0]})") from None
    nvidia = document.get("nvidia") if isinstance(document, dict) else None
    if not isinstance(nvidia, dict):
        raise ValueError("holds no `nvidia:` mapping, so HAMi would manage no NVIDIA GPU")
    return nvidia


def effective_memory_factor(value: Any) -> int:
    """memoryFactor as HAMi and the mock apply it: both leave memory undivided at 1, 0 or when unset."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 1 else 1


def mock_device_config(version: str, values: dict[str, Any]) -> dict[str, Any]:
    """The device config the mock plugin must read beside this HAMi release: only `nvidia:` with MOCK_CONFIG_KEYS,
    valued as HAMi's own config values them, so the two register and schedule the same resources in the same
    units. ValueError as hami_nvidia_config."""
    nvidia = hami_nvidia_config(version, values)
    keys = {key: nvidia.get(key) for key in MOCK_CONFIG_KEYS}
    return {"nvidia": {**keys, "memoryFactor": effective_memory_factor(keys["memoryFactor"])}}


def has_mutating_admission_policy(kubernetes_version: str) -> bool:
    """Whether a cluster of `1.NN` serves admissionregistration.k8s.io/v1 MutatingAdmissionPolicy."""
    return versions.parse_minor(kubernetes_version) >= MUTATING_ADMISSION_POLICY_GA


def hami_node_selector_key(chart_version: str) -> str:
    """The device-plugin node selector value key: renamed in HAMi chart 2.8.0."""
    renamed = parse_version(chart_version) >= versions.minimum("nvidia-node-selector-key")
    return "nvidiaNodeSelector" if renamed else "nvidianodeSelector"


def hami_wrong_node_selector_key(chart_version: str) -> str:
    """The spelling of the other chart line, which the pinned chart silently ignores."""
    return (
        "nvidianodeSelector" if hami_node_selector_key(chart_version) == "nvidiaNodeSelector" else "nvidiaNodeSelector"
    )


def mock_image_tag(image: str) -> str:
    """`docker.io/projecthami/mock-device-plugin:1.0.1[@sha256:...]` -> `1.0.1` (empty when untagged)."""
    return images.split_reference(image)[1]


def hami_fullname(release_name: str, values: dict[str, Any]) -> str:
    """The chart's `hami-vgpu.fullname`: fullnameOverride, else the release name when it contains the chart
    name, else `<release>-<chart name>` (charts/hami/templates/_helpers.tpl, 2.7.0 to 2.10.0)."""
    if values.get("fullnameOverride"):
        return str(values["fullnameOverride"])[:63].rstrip("-")
    chart_name = values.get("nameOverride") or names.HAMI_CHART
    full = release_name if chart_name in release_name else f"{release_name}-{chart_name}"
    return full[:63].rstrip("-")


def hami_device_configmap(release_name: str, values: dict[str, Any]) -> str:
    """The device ConfigMap the release creates: `<fullname>-scheduler-device` (scheduler/device-configmap.yaml)."""
    scheduler = f"{hami_fullname(release_name, values)}-scheduler"[:63].rstrip("-")
    return f"{scheduler}-device"
