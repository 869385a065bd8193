"""Warm GPU headroom (teams[].headroom) as Kubernetes objects: per team and pool a PodTemplate and a Karpenter
CapacityBuffer in the team's namespace.

Karpenter (1.14+, gate CapacityBuffer) builds `replicas` virtual pods from the template and keeps nodes they fit
on (kubernetes-sigs/karpenter v1.15.0 pkg/state/virtualpods, pkg/controllers/provisioning: the virtual pods join
the pending pods after the provisionable filter, so no admission ever sees them, and their priority is forced to
the lowest). The template therefore states what admission gives the team's real pods: HAMi's scheduler and the
gpucores its webhook adds (HAMi 2.8.3 pkg/scheduler/webhook.go, pkg/device/nvidia/device.go), the team's priority
class and scheduler policy (render/tenancy.py's mutating policies), spot for spot-only teams, and the pool selector
and GPU toleration the isolation policy requires.
"""

from __future__ import annotations

from typing import Any

from gpushare import compat, images, names, pins
from gpushare.capacity import Headroom, team_headroom
from gpushare.config import StackConfig
from gpushare.render.hami import GPU_TOLERATION
from gpushare.render.tenancy import PRIORITIES, priority_class_name

PAUSE_IMAGE = "registry.k8s.io/pause"


def headroom_name(pool: str) -> str:
    """The PodTemplate and CapacityBuffer of one pool's headroom (a namespace holds one team)."""
    return f"{names.HEADROOM_PREFIX}{pool}"


def _requests(headroom: Headroom) -> tuple[dict[str, str], dict[str, str]]:
    """(requests, limits): GPU resources as both (extended resources need equal limits), CPU and memory requested."""
    shape = headroom.shape
    gpu = {resource: str(amount) for resource, amount in shape.gpu.items()}
    cpu = f"{shape.cpu_millis}m" if shape.cpu_millis % 1000 else str(shape.cpu_millis // 1000)
    return {"cpu": cpu, "memory": f"{shape.memory_mib}Mi", **gpu}, gpu


def pod_template(config: StackConfig, team_index: int, headroom: Headroom) -> dict[str, Any]:
    """The warm pod as the team's real pod of that shape looks after admission."""
    team = config.teams[team_index]
    pool = config.pool(headroom.pool)
    hami = pool.sharing == names.SHARING_HAMI
    admitted = compat.has_mutating_admission_policy(config.cluster.kubernetes_version)
    labels = {names.TEAM_LABEL: team.name}
    if not hami:
        # What a real pod for a non-HAMi pool carries so HAMi's webhook leaves it to the default scheduler.
        labels[names.HAMI_WEBHOOK_IGNORE[0]] = names.HAMI_WEBHOOK_IGNORE[1]
    metadata: dict[str, Any] = {"labels": labels}
    if hami and admitted and team.scheduler_policy is not None:
        metadata["annotations"] = {
            names.HAMI_GPU_POLICY_ANNOTATION: team.scheduler_policy.gpu,
            names.HAMI_NODE_POLICY_ANNOTATION: team.scheduler_policy.node,
        }
    node_selector = {names.POOL_LABEL: pool.name}
    if team.spot_only:
        node_selector[names.CAPACITY_TYPE_LABEL] = names.CAPACITY_TYPE_SPOT
    spec: dict[str, Any] = {}
    if hami:
        spec["schedulerName"] = names.HAMI_SCHEDULER_NAME
    if admitted:
        value, preemption = PRIORITIES[team.priority]
        spec |= {
            "priorityClassName": priority_class_name(team.priority),
            "priority": value,
            "preemptionPolicy": preemption,
        }
    requests, limits = _requests(headroom)
    spec |= {
        "nodeSelector": node_selector,
        "tolerations": [dict(GPU_TOLERATION)],
        "containers": [
            {
                "name": "headroom",
                "image": images.mirrored(pins.image(PAUSE_IMAGE), config.registry_mirrors),
                "resources": {"requests": requests, "limits": limits},
            }
        ],
    }
    return {
        "apiVersion": "v1",
        "kind": "PodTemplate",
        "metadata": _metadata(team.name, pool.name),
        "template": {"metadata": metadata, "spec": spec},
    }


def capacity_buffer(team: str, headroom: Headroom) -> dict[str, Any]:
    """Keep room for `pods` pods of the template, refilled as real pods take it (replicas: a fixed count)."""
    return {
        "apiVersion": names.CAPACITY_BUFFER_API,
        "kind": "CapacityBuffer",
        "metadata": _metadata(team, headroom.pool),
        "spec": {
            "provisioningStrategy": names.ACTIVE_CAPACITY_STRATEGY,
            "podTemplateRef": {"name": headroom_name(headroom.pool)},
            "replicas": headroom.pods,
        },
    }


def _metadata(team: str, pool: str) -> dict[str, Any]:
    return {
        "name": headroom_name(pool),
        "namespace": team,
        "labels": {names.POOL_LABEL: pool, names.TEAM_LABEL: team},
    }


def headroom_objects(config: StackConfig, team_index: int) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(pool, PodTemplate, CapacityBuffer) per pool of the team's headroom; none without headroom."""
    team = config.teams[team_index].name
    return [
        (headroom.pool, pod_template(config, team_index, headroom), capacity_buffer(team, headroom))
        for headroom in team_headroom(config, team_index)
    ]
