"""Per-team Namespace, ResourceQuota on HAMi resources and LimitRange."""

from __future__ import annotations

from typing import Any

from gpushare import names
from gpushare.config import StackConfig, TeamConfig

# HAMi reads scheduling policy only from pod annotations (hami.io/*-scheduler-policy); the team default is
# recorded on the namespace for the team's tooling to copy onto its pods.
NODE_POLICY_ANNOTATION = "gpushare.io/node-scheduler-policy"
GPU_POLICY_ANNOTATION = "gpushare.io/gpu-scheduler-policy"


def team_objects(config: StackConfig, team: TeamConfig) -> list[dict[str, Any]]:
    """Namespace, ResourceQuota and LimitRange for one team, in apply order."""
    labels = {
        names.TEAM_LABEL: team.name,
        "pod-security.kubernetes.io/enforce": "baseline",
        "pod-security.kubernetes.io/warn": "restricted",
    }
    if all(config.pool(name).sharing == names.SHARING_EXCLUSIVE for name in team.pools):
        labels[names.HAMI_WEBHOOK_IGNORE[0]] = names.HAMI_WEBHOOK_IGNORE[1]
    namespace: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": team.name, "labels": labels},
    }
    annotations = {names.TEAM_POOLS_ANNOTATION: ",".join(team.pools)}
    if team.scheduler_policy is not None:
        annotations[NODE_POLICY_ANNOTATION] = team.scheduler_policy.node
        annotations[GPU_POLICY_ANNOTATION] = team.scheduler_policy.gpu
    namespace["metadata"]["annotations"] = dict(sorted(annotations.items()))
    quota = team.quota
    factor = config.hami.profile.memory_factor
    owned = {"name": f"{team.name}-gpu", "namespace": team.name, "labels": {names.TEAM_LABEL: team.name}}
    return [
        namespace,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": owned,
            "spec": {
                "hard": {
                    f"requests.{names.GPU}": str(quota.gpus),
                    f"requests.{names.GPU_MEMORY}": str(quota.gpu_memory_mib // factor),
                    f"requests.{names.GPU_CORES}": str(quota.gpu_cores),
                }
            },
        },
        {
            "apiVersion": "v1",
            "kind": "LimitRange",
            "metadata": {**owned, "name": f"{team.name}-defaults"},
            # Default requests only: a `max` on an extended resource would become every container's default
            # limit, making each pod in the namespace ask for a GPU.
            "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": "250m", "memory": "512Mi"}}]},
        },
    ]
