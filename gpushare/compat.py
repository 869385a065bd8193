"""Version facts about the charts and images the stack pins, each with its source.

Used by config validation (refuse a bad combination early) and by the policy pack (refuse it in any plan).
"""

from __future__ import annotations

from typing import Any, Final

from gpushare import images, names, versions
from gpushare.versions import parse_version

# HAMi chart versions published at https://project-hami.github.io/HAMi/ that this project knows the
# value keys of (read from Project-HAMi/HAMi charts/hami at each tag).
HAMI_CHART_VERSIONS: Final = ("2.7.0", "2.7.1", "2.8.0", "2.8.1", "2.8.2", "2.8.3", "2.9.0", "2.10.0")

# Mock device plugin image tag -> HAMi chart versions whose device config it parses. HAMi >= 2.9.0 writes
# `vnpus:` as an object; mock 1.0.1 parses a list and fails (mock PR #18, fixed after 1.0.1). Mock 1.0.1
# decodes both the CSV (<= 2.7) and JSON (>= 2.8) node annotation (internal/pkg/api/device/device.go).
MOCK_COMPATIBLE_HAMI: Final = {"1.0.1": ("2.7.0", "2.7.1", "2.8.0", "2.8.1", "2.8.2", "2.8.3")}
MOCK_IMAGE_REPOSITORY: Final = "docker.io/projecthami/mock-device-plugin"

# HAMi-WebUI chart -> HAMi chart versions whose metric names it reads. WebUI <= 1.1.0 reads the pre-2.9
# names (HAMi 2.4-2.8); 1.1.1 and later read the hami_* names of HAMi >= 2.9 (HAMi-WebUI PR #91).
WEBUI_HAMI_RANGES: Final = {"1.0.5": ((2, 4, 0), (2, 9, 0)), "1.1.0": ((2, 4, 0), (2, 9, 0))}

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

# Karpenter: NodeOverlay exists from 1.7.0, behind the NodeOverlay gate; MutatingAdmissionPolicy is GA
# (admissionregistration.k8s.io/v1, on by default) from Kubernetes 1.36 (gpushare/minimum-versions.yaml).
KARPENTER_MIN_OVERLAY_VERSION: Final = versions.minimum("node-overlay")
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
