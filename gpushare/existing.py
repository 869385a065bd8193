"""What a stack on an existing cluster needs from the Karpenter running there, and how to read that from its
controller Deployment: the feature gates its NodeOverlays and CapacityBuffers are read behind.

Karpenter takes its gates from the controller's FEATURE_GATES environment variable (`NodeOverlay=true,...`, each
value parsed with Go's strconv.ParseBool; the karpenter chart renders settings.featureGates into it); a gate left out
keeps its default, off for both alpha gates the stack needs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from gpushare.capacity import pool_plans
from gpushare.config import StackConfig
from gpushare.karpenter_api import GATE_ON_TEXTS

FEATURE_GATES_ENV: Final = "FEATURE_GATES"
NODE_OVERLAY_GATE: Final = "NodeOverlay"
CAPACITY_BUFFER_GATE: Final = "CapacityBuffer"
# The chart's settings.featureGates key of each gate, as the stack file states them.
CHART_KEYS: Final = {NODE_OVERLAY_GATE: "nodeOverlay", CAPACITY_BUFFER_GATE: "capacityBuffer"}


def needed_gates(config: StackConfig) -> dict[str, str]:
    """Gate -> why the stack needs it on: NodeOverlay for pools with overlays, CapacityBuffer for teams' headroom."""
    needed = {}
    overlaid = [plan.name for plan in pool_plans(config).values() if plan.overlaid]
    if overlaid:
        needed[NODE_OVERLAY_GATE] = f"pools {', '.join(overlaid)} need NodeOverlays"
    keeping = [team.name for team in config.teams if team.headroom is not None]
    if keeping:
        needed[CAPACITY_BUFFER_GATE] = f"teams {', '.join(keeping)} keep warm headroom (CapacityBuffers)"
    return needed


def gates_on(text: str) -> frozenset[str]:
    """The gates a FEATURE_GATES value turns on."""
    pairs = (item.partition("=") for item in text.split(",") if item.strip())
    return frozenset(name.strip() for name, _, value in pairs if value.strip() in GATE_ON_TEXTS)


def feature_gates_text(containers: Sequence[Mapping[str, Any]]) -> str | None:
    """The FEATURE_GATES value of the first container that sets it, or None."""
    for container in containers:
        for variable in container.get("env") or ():
            if variable.get("name") == FEATURE_GATES_ENV:
                return str(variable.get("value") or "")
    return None


def gate_problems(deployment: str, containers: Sequence[Mapping[str, Any]], needed: Mapping[str, str]) -> list[str]:
    """Why the Karpenter of Deployment `deployment` (namespace/name) cannot read the stack's objects, one line per gate
    that is off."""
    text = feature_gates_text(containers)
    on = gates_on(text or "")
    shown = f"FEATURE_GATES {text!r}" if text is not None else f"no {FEATURE_GATES_ENV}"
    return [
        f"Karpenter {deployment} runs with {shown}: the {gate} gate is off, and {why}, which Karpenter ignores then; "
        f"turn it on (its chart's settings.featureGates.{CHART_KEYS[gate]}: true) and run pulumi up again"
        for gate, why in needed.items()
        if gate not in on
    ]


def stated_cluster(config: StackConfig) -> dict[str, Any]:
    """What the stack file states about the existing cluster and the Karpenter running there, as the stack records
    it (the ExistingCluster component's inputs) for the policy pack: clusterName, kubernetesVersion, and
    `karpenter.version`, `.namespace`, `.deployment`, `.featureGates.<chart key>`."""
    assert config.existing_cluster is not None
    running = config.existing_cluster.karpenter
    return {
        "clusterName": config.cluster.name,
        "kubernetesVersion": config.cluster.kubernetes_version,
        "karpenter": {
            "version": running.version,
            "namespace": running.namespace,
            "deployment": running.deployment,
            "featureGates": running.feature_gates.model_dump(by_alias=True),
        },
    }
