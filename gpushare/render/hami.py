"""HAMi chart values and the mock device plugin objects (Project-HAMi/HAMi charts/hami values.yaml, 2.10.0)."""

from __future__ import annotations

import hashlib
from typing import Any

from gpushare import compat, images, names, pins
from gpushare.config import StackConfig
from gpushare.render.yamlio import dump

# HAMi 2.8.3 to 2.10.0 run their webhook-certificate jobs from a personal Docker Hub image by default
# (charts/hami/values.yaml scheduler.patch.imageNew, used on Kubernetes >= 1.22; `image` below 1.22): those
# jobs may rewrite MutatingWebhookConfigurations. The upstream image, pinned (ingress-nginx controller v1.15.1
# ships it), takes the same `create`/`patch` arguments.
CERTGEN_IMAGE = {
    "registry": "registry.k8s.io",
    "repository": "ingress-nginx/kube-webhook-certgen",
    "tag": pins.image_tag("registry.k8s.io/ingress-nginx/kube-webhook-certgen"),
}
# Images the HAMi chart pulls by default that the stack keeps (gpushare/images.py CHART_IMAGES), written out when a
# mirror covers them; the tag stays the chart's (global.imageTag, the chart version). Its mock DaemonSet is off.
HAMI_CHART_IMAGES: images.ImageMaps = images.chart_image_maps(
    names.HAMI_CHART, ("scheduler.extender.image", "devicePlugin.image", "devicePlugin.monitor.image")
)
# NVIDIA device plugin chart: one image for every DaemonSet it renders, tagged v<appVersion> unless set.
NVIDIA_PLUGIN_CHART_IMAGES: images.ImageMaps = images.chart_image_maps(names.NVIDIA_PLUGIN_CHART)
# HAMi's scheduler talks to the API server through client-go's default limiter, 5 requests a second in bursts of 10
# (`--kube-qps`/`--kube-burst`, cmd/scheduler/main.go and pkg/util/client/options.go, 2.8.3 to 2.10.0). Placing one
# pod takes several requests (its device annotations, the node lock, the binding, events) and the scheduler rewrites
# every HAMi node's handshake annotation every 15 s, so a few dozen GPU nodes and a burst of pods make it wait on its
# own limiter: the offline cluster's production-shaped day placed 0.4 pods a second, and its log showed
# "client-side throttling" waits of 1.4-1.6 s before single requests. kube-scheduler's own client rate instead
# (KubeSchedulerConfiguration clientConnection: 50 and 100). The list replaces the chart's, so its own arguments
# (charts/hami values.yaml scheduler.extender.extraArgs) stay.
HAMI_EXTENDER_ARGS = ("--debug", "-v=4", "--kube-qps=50", "--kube-burst=100")
GPU_TOLERATION = {"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": names.GPU_TAINT["effect"]}
HAMI_NODE_SELECTOR = {names.HAMI_NODE_LABEL[0]: names.HAMI_NODE_LABEL[1]}
MOCK_LABELS = {"app.kubernetes.io/name": names.MOCK_NAME, "app.kubernetes.io/part-of": "gpushare"}


def scheduler_image_tag(config: StackConfig) -> str:
    """kube-scheduler must match the cluster minor, at its newest pinned patch (a `.0` misses every fix since);
    an empty tag only works with a live `helm install`."""
    return pins.kube_scheduler_tag(config.cluster.kubernetes_version)


def hami_device_config(config: StackConfig) -> dict[str, Any]:
    """HAMi's whole device config (device-config.yaml), as the stack's `device-config.content`.

    The content replaces the chart's template (2.10.0 templates/scheduler/device-configmap.yaml), so it carries
    every NVIDIA key that template writes, with the chart's defaults and the stack's profile: HAMi's device plugin
    dereferences deviceSplitCount, the scalings and libCudaLogLevel (crashing without them), and without
    defaultGPUNum a container asking only gpumem gets no vGPU. Left out: the MIG allow-list (the stack's nodes run
    hami-core, never MIG) and the other vendors' sections (no such device in the catalog; HAMi initialises them
    with empty resource names, which no pod asks).
    """
    profile = config.hami.profile
    return {
        "nvidia": {
            "resourceCountName": names.GPU,
            "resourceMemoryName": names.GPU_MEMORY,
            "resourceMemoryPercentageName": names.GPU_MEMORY_PERCENTAGE,
            "resourceCoreName": names.GPU_CORES,
            "resourcePriorityName": names.GPU_PRIORITY,
            "overwriteEnv": False,
            "defaultMemory": 0,
            "defaultCores": 0,
            "defaultGPUNum": 1,
            "preConfiguredDeviceMemory": 0,
            "memoryFactor": profile.memory_factor,
            "deviceSplitCount": profile.device_split_count,
            "deviceMemoryScaling": profile.device_memory_scaling,
            "deviceCoreScaling": profile.device_core_scaling,
            "enableNumaTopology": False,
            "gpuCorePolicy": "default",
            "libCudaLogLevel": 1,
            "runtimeClassName": "",
        }
    }


def hami_values(config: StackConfig) -> dict[str, Any]:
    """Values with the key names of the pinned chart version; the sharing profile lives in the device config."""
    hami = config.hami
    values = {
        "schedulerName": names.HAMI_SCHEDULER_NAME,
        "resourceName": names.GPU,
        "resourceMem": names.GPU_MEMORY,
        "resourceCores": names.GPU_CORES,
        "resourceMemPercentage": names.GPU_MEMORY_PERCENTAGE,
        "scheduler": {
            "defaultSchedulerPolicy": {
                "nodeSchedulerPolicy": hami.scheduler_policy.node,
                "gpuSchedulerPolicy": hami.scheduler_policy.gpu,
            },
            "kubeScheduler": {
                "image": {
                    "registry": "registry.k8s.io",
                    "repository": "kube-scheduler",
                    "tag": scheduler_image_tag(config),
                }
            },
            "extender": {"extraArgs": list(HAMI_EXTENDER_ARGS)},
            "patch": {"image": dict(CERTGEN_IMAGE), "imageNew": dict(CERTGEN_IMAGE)},
            # The chart defaults to NodePort, opening the extender and its metrics on every node.
            "service": {"type": "ClusterIP"},
            # The webhook sees every namespace but those labelled hami.io/webhook=ignore, kube-system included:
            # failing closed would make every pod creation, hami-scheduler's own among them, wait for
            # hami-scheduler. Failing open is safe: a pod it missed is never placed by HAMi, and HAMi's device
            # plugin refuses to allocate a GPU to a pod HAMi did not place.
            "admissionWebhook": {"failurePolicy": "Ignore"},
        },
        "devicePlugin": {
            compat.hami_node_selector_key(hami.chart_version): dict(HAMI_NODE_SELECTOR),
            "tolerations": [dict(GPU_TOLERATION)],
            "service": {"type": "ClusterIP"},
        },
        "device-config": {"content": dump(hami_device_config(config))},
    }
    return images.with_chart_images(values, HAMI_CHART_IMAGES, config.registry_mirrors)


def mock_device_config_map(config: StackConfig) -> dict[str, Any]:
    """The mock's own device config, derived from the HAMi values by the function the policy pack checks it with
    (compat.mock_device_config), so the two cannot disagree about resource names or memoryFactor."""
    values = hami_values(config)
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": names.MOCK_DEVICE_CONFIG, "namespace": names.MOCK_NAMESPACE, "labels": MOCK_LABELS},
        "data": {names.HAMI_DEVICE_CONFIG_KEY: dump(compat.mock_device_config(config.hami.chart_version, values))},
    }


def mock_device_plugin_objects(config: StackConfig) -> list[dict[str, Any]]:
    """ServiceAccount, ClusterRole, binding, the device ConfigMap and the DaemonSet of the mock plugin, on the same
    nodes as HAMi's.

    The chart's own mock DaemonSet (>= 2.8) has no node selector or toleration values, so it never reaches tainted
    GPU nodes, and from 2.9 it mounts a device config mock 1.0.1 cannot parse; this one tolerates the GPU taint and
    reads a ConfigMap of its own holding only what it needs.
    """
    meta = {"name": names.MOCK_NAME, "namespace": names.MOCK_NAMESPACE, "labels": MOCK_LABELS}
    config_map = mock_device_config_map(config)
    checksum = hashlib.sha256(config_map["data"][names.HAMI_DEVICE_CONFIG_KEY].encode()).hexdigest()
    return [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": names.MOCK_NAME, "labels": MOCK_LABELS},
            # Mock 1.0.1 only reads its own node's HAMi annotation (internal/pkg/api/device/device.go).
            "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": names.MOCK_NAME, "labels": MOCK_LABELS},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": names.MOCK_NAME},
            "subjects": [{"kind": "ServiceAccount", "name": names.MOCK_NAME, "namespace": names.MOCK_NAMESPACE}],
        },
        config_map,
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": meta,
            "spec": {
                "selector": {"matchLabels": {"app.kubernetes.io/name": names.MOCK_NAME}},
                "updateStrategy": {"type": "RollingUpdate"},
                "template": {
                    "metadata": {
                        "labels": MOCK_LABELS,
                        "annotations": {names.DEVICE_CONFIG_CHECKSUM_ANNOTATION: checksum},
                    },
                    "spec": _mock_pod_spec(config),
                },
            },
        },
    ]


def _mock_pod_spec(config: StackConfig) -> dict[str, Any]:
    return {
        "serviceAccountName": names.MOCK_NAME,
        "priorityClassName": "system-node-critical",
        "nodeSelector": dict(HAMI_NODE_SELECTOR),
        "tolerations": [dict(GPU_TOLERATION)],
        "containers": [
            {
                "name": "mock-device-plugin",
                "image": images.mirrored(config.hami.mock_device_plugin_image, config.registry_mirrors),
                "command": ["./k8s-device-plugin", "-v=5", f"--device-config-file=/{names.HAMI_DEVICE_CONFIG_KEY}"],
                "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
                "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
                "securityContext": {
                    "allowPrivilegeEscalation": False,
                    "capabilities": {"drop": ["ALL"]},
                    "seccompProfile": {"type": "RuntimeDefault"},
                },
                "volumeMounts": [
                    {"name": "device-plugins", "mountPath": "/var/lib/kubelet/device-plugins"},
                    {"name": "sys", "mountPath": "/sys", "readOnly": True},
                    {
                        "name": "device-config",
                        "mountPath": f"/{names.HAMI_DEVICE_CONFIG_KEY}",
                        "subPath": names.HAMI_DEVICE_CONFIG_KEY,
                        "readOnly": True,
                    },
                ],
            }
        ],
        "volumes": [
            {"name": "device-plugins", "hostPath": {"path": "/var/lib/kubelet/device-plugins", "type": "Directory"}},
            {"name": "sys", "hostPath": {"path": "/sys", "type": "Directory"}},
            {"name": "device-config", "configMap": {"name": names.MOCK_DEVICE_CONFIG}},
        ],
    }


def timeslice_config(replicas: int) -> dict[str, Any]:
    """NVIDIA plugin config (api/config/v1) sharing each GPU among `replicas` pods as nvidia.com/gpu.shared; a
    pod asking more than one replica is refused at allocation (replicas of one GPU add no compute)."""
    return {
        "version": "v1",
        "sharing": {
            "timeSlicing": {
                "renameByDefault": True,
                "failRequestsGreaterThanOne": True,
                "resources": [{"name": names.GPU, "replicas": replicas}],
            }
        },
    }


def nvidia_device_plugin_configs(config: StackConfig) -> dict[str, dict[str, Any]]:
    """Config name -> plugin config: whole GPUs by default, one time-slicing config per replica count."""
    replica_counts = sorted({p.replicas for p in config.pools if p.replicas is not None})
    if not replica_counts:
        return {}
    return {
        names.NVIDIA_DEFAULT_CONFIG: {"version": "v1"},
        **{names.timeslice_config_name(r): timeslice_config(r) for r in replica_counts},
    }


def nvidia_device_plugin_values(config: StackConfig) -> dict[str, Any]:
    """Official NVIDIA plugin only on exclusive and time-sliced pools, so no node ever runs two device plugins.

    The chart keeps its default node affinity whatever map we pass (Helm merges maps; `{}` deletes nothing).
    That affinity admits nodes labelled `nvidia.com/gpu.present=true`, which those pools' nodes carry
    (`pool_labels`); the node selector on our device-plugin label keeps the plugin off every HAMi node. With
    time-sliced pools the chart's config-manager gives each node the config its pool label names.
    """
    values: dict[str, Any] = {
        "nodeSelector": {names.NVIDIA_PLUGIN_NODE_LABEL[0]: names.NVIDIA_PLUGIN_NODE_LABEL[1]},
        "tolerations": [dict(GPU_TOLERATION)],
        "priorityClassName": "system-node-critical",
    }
    configs = nvidia_device_plugin_configs(config)
    if configs:
        values["config"] = {
            "map": {name: dump(document) for name, document in configs.items()},
            "default": names.NVIDIA_DEFAULT_CONFIG,
        }
    return images.with_chart_images(values, NVIDIA_PLUGIN_CHART_IMAGES, config.registry_mirrors)
