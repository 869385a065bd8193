"""Label keys, taints, resource names and object names shared by the renderers and the policy pack.

Both sides import this module, so what the stack writes and what the policies check cannot drift.
"""

from __future__ import annotations

import re
from typing import Final

# Resources HAMi and its mock device plugin register (HAMi register.go; HAMi chart values
# resourceName/resourceMem/resourceCores/resourceMemPercentage).
GPU: Final = "nvidia.com/gpu"
GPU_MEMORY: Final = "nvidia.com/gpumem"
GPU_CORES: Final = "nvidia.com/gpucores"
GPU_MEMORY_PERCENTAGE: Final = "nvidia.com/gpumem-percentage"
# HAMi's task-priority resource (chart value resourcePriority), named in its device config.
GPU_PRIORITY: Final = "nvidia.com/priority"
# What the NVIDIA device plugin registers on time-sliced nodes: with `renameByDefault` it renames nvidia.com/gpu
# to `<name>.shared` (k8s-device-plugin api/config/v1 replicas.go), so HAMi's webhook never sees these pods and
# their quota stays separate.
GPU_SHARED: Final = "nvidia.com/gpu.shared"

# HAMi's default device-plugin node selector, kept because users know it from HAMi's docs.
HAMI_NODE_LABEL: Final = ("gpu", "on")
# Our own label domain: Karpenter restricts karpenter.sh and karpenter.k8s.aws labels.
POOL_LABEL: Final = "gpushare.io/pool"
SHARING_LABEL: Final = "gpushare.io/sharing"
SHARING_HAMI: Final = "hami"
SHARING_EXCLUSIVE: Final = "exclusive"
SHARING_TIMESLICE: Final = "timeslice"
# Nodes of exclusive and time-sliced pools: the one label the NVIDIA device plugin's nodeSelector asks for.
NVIDIA_PLUGIN_NODE_LABEL: Final = ("gpushare.io/device-plugin", "nvidia")

# The scheduler name HAMi's chart runs its scheduler under (values `schedulerName`), which its webhook writes into
# every pod it admits with a vGPU request.
HAMI_SCHEDULER_NAME: Final = "hami-scheduler"
# What the API server sets as a pod's schedulerName when it names none.
DEFAULT_SCHEDULER_NAME: Final = "default-scheduler"
# HAMi's admission webhook moves every pod asking for nvidia.com/gpu to hami-scheduler, which cannot place
# pods on exclusive (non-HAMi) nodes; this label on a pod or namespace makes the webhook skip it.
HAMI_WEBHOOK_IGNORE: Final = ("hami.io/webhook", "ignore")

# Every GPU node is tainted so only pods that asked for GPUs land there.
GPU_TAINT: Final = {"key": GPU, "value": "true", "effect": "NoSchedule"}

# Karpenter well-known labels and API groups.
INSTANCE_TYPE_LABEL: Final = "node.kubernetes.io/instance-type"
CAPACITY_TYPE_LABEL: Final = "karpenter.sh/capacity-type"
NODEPOOL_LABEL: Final = "karpenter.sh/nodepool"
ARCH_LABEL: Final = "kubernetes.io/arch"
OS_LABEL: Final = "kubernetes.io/os"
KARPENTER_API: Final = "karpenter.sh/v1"
NODE_OVERLAY_API: Final = "karpenter.sh/v1alpha1"
EC2_NODE_CLASS_API: Final = "karpenter.k8s.aws/v1"
EC2_NODE_CLASS_GROUP: Final = "karpenter.k8s.aws"
# Karpenter's CapacityBuffer (served only as v1beta1 by the CRD Karpenter 1.14+ ships, whatever its docs say) and
# the one provisioning strategy Karpenter implements.
CAPACITY_BUFFER_API: Final = "autoscaling.x-k8s.io/v1beta1"
ACTIVE_CAPACITY_STRATEGY: Final = "buffer.x-k8s.io/active-capacity"
# A team's warm-headroom PodTemplate and CapacityBuffer in its namespace: `gpushare-headroom-<pool>`.
HEADROOM_PREFIX: Final = "gpushare-headroom-"
GPU_NODE_CLASS: Final = "gpu"

# Team namespaces: the team label, and the pools the team may use (so policies can weigh its quota).
TEAM_LABEL: Final = "gpushare.io/team"
TEAM_POOLS_ANNOTATION: Final = "gpushare.io/pools"
# Pod Security Admission's namespace labels (kubernetes.io/docs/concepts/security/pod-security-admission/).
POD_SECURITY_ENFORCE_LABEL: Final = "pod-security.kubernetes.io/enforce"
POD_SECURITY_WARN_LABEL: Final = "pod-security.kubernetes.io/warn"
# The team's priority tier, recorded on its namespace (admission applies it to GPU pods): the pack compares the
# tiers of teams sharing a HAMi pool, where kube-scheduler cannot preempt.
TEAM_PRIORITY_ANNOTATION: Final = "gpushare.io/priority"

# HAMi reads binpack/spread only from these pod annotations (HAMi docs, scheduler-policy); admission copies
# a team's policy onto its pods under them.
HAMI_NODE_POLICY_ANNOTATION: Final = "hami.io/node-scheduler-policy"
HAMI_GPU_POLICY_ANNOTATION: Final = "hami.io/gpu-scheduler-policy"
# The team default is also recorded on its namespace, where people and tools look for it (and the pack checks
# that admission applies it).
NODE_POLICY_ANNOTATION: Final = "gpushare.io/node-scheduler-policy"
GPU_POLICY_ANNOTATION: Final = "gpushare.io/gpu-scheduler-policy"
# The label the API server sets on every namespace (NamespaceDefaultLabelName): admission policies match on it.
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
CAPACITY_TYPE_SPOT: Final = "spot"
# PriorityClasses the stack creates: `gpushare-<tier>`.
PRIORITY_CLASS_PREFIX: Final = "gpushare-"

# Chart names (the last segment of an OCI reference); the policy pack finds releases by them.
KARPENTER_CHART: Final = "karpenter"
KARPENTER_CRD_CHART: Final = "karpenter-crd"
HAMI_CHART: Final = "hami"
NVIDIA_PLUGIN_CHART: Final = "nvidia-device-plugin"
KUBE_PROMETHEUS_STACK_CHART: Final = "kube-prometheus-stack"
DCGM_CHART: Final = "dcgm-exporter"
WEBUI_CHART: Final = "hami-webui"
# A chart archive as `helm package` and `helm pull` name it, <chart>-<version>.tgz (gpushare:charts.folder): chart
# names hold dashes, versions start with a digit (semver, prerelease and build parts allowed).
CHART_ARCHIVE: Final = re.compile(
    r"(?P<chart>[a-z0-9][a-z0-9-]*?)-(?P<version>[0-9]+\.[0-9]+\.[0-9]+(?:[-+][0-9A-Za-z.+-]+)?)\.tgz"
)
# The NVIDIA chart's default node affinity (deployments/helm/nvidia-device-plugin/values.yaml, v0.18-v0.20)
# admits a node by NFD labels this stack does not install, or by this label, which it sets on exclusive pools.
NVIDIA_GPU_PRESENT_LABEL: Final = ("nvidia.com/gpu.present", "true")
# The node label the chart's config-manager reads to pick one named config of values.config.map (chart
# templates/daemonset-device-plugin.yml, NODE_LABEL); nodes without it get values.config.default.
NVIDIA_PLUGIN_CONFIG_LABEL: Final = "nvidia.com/device-plugin.config"
NVIDIA_DEFAULT_CONFIG: Final = "exclusive"


def timeslice_config_name(replicas: int) -> str:
    """The NVIDIA plugin config a time-sliced pool's nodes select: one per replica count."""
    return f"timeslice-{replicas}"


# Helm releases: names are pinned because chart object names derive from them.
KARPENTER_NAMESPACE: Final = "kube-system"
KARPENTER_RELEASE: Final = "karpenter"
KARPENTER_CRD_RELEASE: Final = "karpenter-crd"
KARPENTER_SERVICE_ACCOUNT: Final = "karpenter"
HAMI_NAMESPACE: Final = "kube-system"
HAMI_RELEASE: Final = "hami"
# The key of the device config in the release's `<fullname>-scheduler-device` ConfigMap
# (compat.hami_device_configmap derives the name), and in the mock's own ConfigMap.
HAMI_DEVICE_CONFIG_KEY: Final = "device-config.yaml"
NVIDIA_PLUGIN_NAMESPACE: Final = "kube-system"
NVIDIA_PLUGIN_RELEASE: Final = "nvidia-device-plugin"

# Mock device plugin objects (our own manifests, modelled on Project-HAMi/mock-device-plugin v1.0.1).
MOCK_NAME: Final = "hami-mock-device-plugin"
MOCK_NAMESPACE: Final = "kube-system"
# The device config the mock reads (mock 1.0.1 cannot parse HAMi >= 2.9's own): a ConfigMap beside it, rendered from
# the HAMi values; the mock's pods carry its checksum, so a change restarts them (the mock reads it once, at start).
MOCK_DEVICE_CONFIG: Final = "hami-mock-device-config"
DEVICE_CONFIG_CHECKSUM_ANNOTATION: Final = "gpushare.io/device-config-sha256"

# The system node group's label (components/cluster.py): monitoring controllers run there.
SYSTEM_ROLE_LABEL: Final = "gpushare.io/role"
SYSTEM_ROLE: Final = "system"

# Monitoring (gpushare:monitoring): releases share one namespace; the kube-prometheus-stack release name is
# also its fullnameOverride, so the Prometheus Service is `<release>-prometheus` (at most 26 characters).
MONITORING_NAMESPACE: Final = "monitoring"
MONITORING_RELEASE: Final = "kube-prometheus-stack"
DCGM_RELEASE: Final = "dcgm-exporter"
WEBUI_RELEASE: Final = "hami-webui"
# HAMi-WebUI chart 1.1.0 and 1.2.0 (templates/service.yaml, deployment.yaml): Service `<fullname>` (`hami-webui` for
# our release name) port `metrics` -> the backend's containerPort 8000, labels app.kubernetes.io/{name,instance} and
# component `hami-webui`. The backend computes the `hami_*` series every WebUI page queries when /metrics is
# scraped (server/internal/exporter at v1.1.0 and v1.2.0): unscraped, the WebUI shows no data.
WEBUI_METRICS_PORT: Final = "metrics"
MONITORING_API: Final = "monitoring.coreos.com/v1"

# Namespaces no team may be named after: the ones the stack's own releases and objects live in, and those
# Kubernetes itself creates (kube-system, kube-public, kube-node-lease, default). A team namespace there would
# put the team's quota, LimitRange and admission policies on the controllers.
KUBERNETES_NAMESPACES: Final = ("default", "kube-system", "kube-public", "kube-node-lease")
STACK_NAMESPACES: Final = tuple(
    sorted(
        {
            KARPENTER_NAMESPACE,
            HAMI_NAMESPACE,
            NVIDIA_PLUGIN_NAMESPACE,
            MOCK_NAMESPACE,
            MONITORING_NAMESPACE,
            *KUBERNETES_NAMESPACES,
        }
    )
)
