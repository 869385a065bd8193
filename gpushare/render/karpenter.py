"""Karpenter objects and Helm values for the GPU pools (Karpenter 1.x APIs, karpenter.sh/docs/concepts)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from gpushare import images, names
from gpushare.aws_names import interruption_queue_name, node_role_name
from gpushare.capacity import NodeShape, pool_plans
from gpushare.config import PoolConfig, SecurityGroupSelectorTermConfig, StackConfig, SubnetSelectorTermConfig

# GPU AMIs and ML images need room; the EC2NodeClass default root volume (20Gi) fills on the first pull.
ROOT_VOLUME_SIZE = "200Gi"
# Overlays never overlap (each names one pool and one instance type), so one weight serves them all.
OVERLAY_WEIGHT = 10
# Beyond the drain itself, deleting a NodePool waits for instance termination and finalizers.
DELETE_SLACK_MINUTES = 15
# The controller image the karpenter chart pulls (gpushare/images.py CHART_IMAGES); its tag and digest stay the
# chart's, and ECR pull-through caches keep digests.
KARPENTER_CHART_IMAGES: images.ImageMaps = images.chart_image_maps(names.KARPENTER_CHART)


def pool_labels(pool: PoolConfig) -> dict[str, str]:
    """Node labels a pool's nodes carry: each sharing mode also carries the label its device plugin needs."""
    labels = {names.POOL_LABEL: pool.name, names.SHARING_LABEL: pool.sharing}
    if pool.sharing == names.SHARING_HAMI:
        labels[names.HAMI_NODE_LABEL[0]] = names.HAMI_NODE_LABEL[1]
    else:
        labels[names.NVIDIA_PLUGIN_NODE_LABEL[0]] = names.NVIDIA_PLUGIN_NODE_LABEL[1]
        labels[names.NVIDIA_GPU_PRESENT_LABEL[0]] = names.NVIDIA_GPU_PRESENT_LABEL[1]
    if pool.sharing == names.SHARING_TIMESLICE and pool.replicas is not None:
        labels[names.NVIDIA_PLUGIN_CONFIG_LABEL] = names.timeslice_config_name(pool.replicas)
    return dict(sorted(labels.items()))


def node_pool(config: StackConfig, pool: PoolConfig) -> dict[str, Any]:
    """One NodePool: only the catalog instance types listed, GPU taint, a limit in what its nodes register (vGPUs,
    GPUs or time-sliced replicas), no cpu limit."""
    disruption = pool.disruption
    plan = pool_plans(config)[pool.name]
    return {
        "apiVersion": names.KARPENTER_API,
        "kind": "NodePool",
        "metadata": {
            "name": pool.name,
            "labels": {names.POOL_LABEL: pool.name},
            # Foreground deletion: `pulumi destroy` waits until the pool's NodeClaims (and instances) are gone.
            "annotations": {"pulumi.com/deletionPropagationPolicy": "foreground"},
        },
        "spec": {
            "template": {
                "metadata": {"labels": pool_labels(pool)},
                "spec": {
                    "nodeClassRef": {
                        "group": names.EC2_NODE_CLASS_GROUP,
                        "kind": "EC2NodeClass",
                        "name": names.GPU_NODE_CLASS,
                    },
                    "requirements": [
                        {"key": names.INSTANCE_TYPE_LABEL, "operator": "In", "values": list(pool.instance_types)},
                        {"key": names.CAPACITY_TYPE_LABEL, "operator": "In", "values": list(pool.capacity_types)},
                        {"key": names.ARCH_LABEL, "operator": "In", "values": ["amd64"]},
                        {"key": names.OS_LABEL, "operator": "In", "values": ["linux"]},
                    ],
                    "taints": [dict(names.GPU_TAINT)],
                    "expireAfter": disruption.expire_after,
                    # One tenant PodDisruptionBudget could otherwise hold a drain (and pulumi destroy) forever.
                    "terminationGracePeriod": disruption.termination_grace_period,
                },
            },
            # Only the GPU count is limited: a cpu/memory limit below one node's size blocks that type.
            "limits": {plan.limit_resource: str(plan.gpu_limit)},
            "disruption": {
                "consolidationPolicy": disruption.consolidation_policy,
                "consolidateAfter": disruption.consolidate_after,
                **({"budgets": disruption_budgets(pool)} if disruption.budgets else {}),
            },
        },
    }


def _seconds(duration: str) -> int:
    """A Go duration of h/m/s parts (karpenter_api.DURATION, which config enforces) in seconds."""
    return sum(
        int(amount) * {"h": 3600, "m": 60, "s": 1}[unit] for amount, unit in re.findall(r"(\d+)([hms])", duration)
    )


def node_pool_delete_timeout(pool: PoolConfig) -> str:
    """Pulumi's wait for a NodePool's deletion: its nodes' grace period plus time to launch-and-drain slack."""
    return f"{_seconds(pool.disruption.termination_grace_period) // 60 + DELETE_SLACK_MINUTES}m"


def disruption_budgets(pool: PoolConfig) -> list[dict[str, Any]]:
    """NodePool spec.disruption.budgets: only the fields a budget sets (Karpenter defaults the rest)."""
    budgets = []
    for budget in pool.disruption.budgets:
        rendered: dict[str, Any] = {"nodes": budget.nodes}
        if budget.schedule is not None:
            rendered |= {"schedule": budget.schedule, "duration": budget.duration}
        if budget.reasons:
            rendered["reasons"] = list(budget.reasons)
        budgets.append(rendered)
    return budgets


def overlay_name(pool: PoolConfig, instance_type: str) -> str:
    return f"{pool.name}-{instance_type.replace('.', '-')}"


def node_overlay(pool: PoolConfig, node: NodeShape) -> dict[str, Any]:
    """Tell Karpenter what the pool's device plugin will register on its nodes of one type (HAMi + the mock
    plugin: vGPUs, gpumem, gpucores; NVIDIA time-slicing: nvidia.com/gpu.shared replicas)."""
    return {
        "apiVersion": names.NODE_OVERLAY_API,
        "kind": "NodeOverlay",
        "metadata": {"name": overlay_name(pool, node.instance_type), "labels": {names.POOL_LABEL: pool.name}},
        "spec": {
            "weight": OVERLAY_WEIGHT,
            "requirements": [
                {"key": names.NODEPOOL_LABEL, "operator": "In", "values": [pool.name]},
                {"key": names.INSTANCE_TYPE_LABEL, "operator": "In", "values": [node.instance_type]},
            ],
            "capacity": {resource: str(units) for resource, units in node.resources.items()},
        },
    }


def node_overlays(config: StackConfig, pool: PoolConfig) -> list[dict[str, Any]]:
    """Overlays for a HAMi or time-sliced pool, one per instance type; exclusive pools need none."""
    plan = pool_plans(config)[pool.name]
    return [node_overlay(pool, node) for node in plan.nodes] if plan.overlaid else []


def _selector_terms(
    terms: Sequence[SubnetSelectorTermConfig | SecurityGroupSelectorTermConfig], default: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """EC2NodeClass selector terms as written (only the field each term sets), or `default` when none are."""
    return [term.model_dump(exclude_defaults=True) for term in terms] or default


def ec2_node_class(config: StackConfig) -> dict[str, Any]:
    """The GPU node class: AL2023 (its NVIDIA variant is picked per GPU type), IMDSv2, encrypted root; the node role
    the stack creates, or in an existing cluster the identity and selectors it names (by default the same discovery
    tag)."""
    discovery = [{"tags": {"karpenter.sh/discovery": config.cluster.name}}]
    identity: dict[str, Any] = {"role": node_role_name(config.cluster.name)}
    subnets, groups = discovery, discovery
    if config.existing_cluster is not None:
        node_class = config.existing_cluster.node_class
        identity = {"role": node_class.role} if node_class.role else {"instanceProfile": node_class.instance_profile}
        subnets = _selector_terms(node_class.subnet_selector_terms, discovery)
        groups = _selector_terms(node_class.security_group_selector_terms, discovery)
    return {
        "apiVersion": names.EC2_NODE_CLASS_API,
        "kind": "EC2NodeClass",
        "metadata": {"name": names.GPU_NODE_CLASS},
        "spec": {
            "amiSelectorTerms": [{"alias": config.karpenter.ami_alias}],
            **identity,
            "subnetSelectorTerms": subnets,
            "securityGroupSelectorTerms": groups,
            "associatePublicIPAddress": False,
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpProtocolIPv6": "disabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "required",
            },
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "ebs": {
                        "volumeSize": ROOT_VOLUME_SIZE,
                        "volumeType": "gp3",
                        "encrypted": True,
                        "deleteOnTermination": True,
                    },
                }
            ],
            "tags": dict(sorted(config.cluster.tags.items())),
        },
    }


def karpenter_values(config: StackConfig) -> dict[str, Any]:
    """Controller chart values: the NodeOverlay gate must be on or every overlay is silently ignored; the alpha
    CapacityBuffer gate only when some team keeps warm headroom (chart key settings.featureGates.capacityBuffer,
    rendered into FEATURE_GATES as `CapacityBuffer=<value>`)."""
    gates = {"nodeOverlay": True}
    if any(team.headroom is not None for team in config.teams):
        gates["capacityBuffer"] = True
    values = {
        "settings": {
            "clusterName": config.cluster.name,
            "interruptionQueue": interruption_queue_name(config.cluster.name),
            "featureGates": gates,
        },
        "serviceAccount": {"name": names.KARPENTER_SERVICE_ACCOUNT},
        "replicas": 2,
        "controller": {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"memory": "1Gi"}}},
    }
    return images.with_chart_images(values, KARPENTER_CHART_IMAGES, config.registry_mirrors)
