"""What every scenario shares: its `Result`, `ScenarioFailure` and the waits and checks that raise it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from e2e.cluster.api import ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.rig import wait_for
from e2e.cluster.workloads import (
    HAMI_BIND_PHASE,
    HAMI_DEVICES,
    HAMI_NODE,
    Context,
    admitted,
    events,
    gpus_of,
    nodeclaims,
)

SCALE_TIMEOUT_S = 180


class ScenarioFailure(Exception):
    """A scenario's expectation did not hold; the message says what was seen."""


@dataclass
class Result:
    name: str
    passed: bool
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def wait(what: str, condition: Callable[[], bool], timeout_s: float = SCALE_TIMEOUT_S) -> float:
    try:
        return wait_for(what, condition, timeout_s, interval_s=1)
    except RigError as error:
        raise ScenarioFailure(str(error)) from None


def placed_by_hami(ctx: Context, pods: list[dict[str, Any]]) -> dict[str, list[str]]:
    """Node -> GPUs HAMi gave the pods on it; ScenarioFailure unless HAMi's webhook handed every pod to its
    scheduler, which chose the node the pod runs on and GPUs there, and its device plugin completed the bind."""
    placement: dict[str, list[str]] = {}
    for pod in pods:
        name, annotations = pod["metadata"]["name"], pod["metadata"].get("annotations", {})
        if pod["spec"].get("schedulerName") != ctx.hami.scheduler_name:
            raise ScenarioFailure(f"pod {name} has schedulerName {pod['spec'].get('schedulerName')}, not HAMi's")
        node = pod["spec"].get("nodeName")
        if annotations.get(HAMI_NODE) != node or not gpus_of(pod) or annotations.get(HAMI_BIND_PHASE) != "success":
            seen = {key: annotations.get(key) for key in (HAMI_NODE, HAMI_DEVICES, HAMI_BIND_PHASE)}
            raise ScenarioFailure(f"pod {name} on {node} lacks HAMi's completed placement: {seen}")
        placement.setdefault(node, []).extend(gpus_of(pod))
    return placement


def remove_and_wait_empty(ctx: Context, deployment: dict[str, Any]) -> float:
    """Delete the workload; seconds until Karpenter has consolidated every GPU node away."""
    ctx.kubectl.delete([deployment])
    return wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 240)


def admits(ctx: Context, pod: dict[str, Any]) -> bool:
    try:
        admitted(ctx, pod)
    except KubectlError:
        return False
    return True


def diagnostics(ctx: Context, namespaces: list[str]) -> list[str]:
    """What a failed scenario leaves behind: NodeClaim conditions, recent events, Karpenter's last lines."""
    lines = []
    try:
        claims = nodeclaims(ctx)
    except ApiError as error:
        claims = []
        lines.append(f"NodeClaims not readable: {error}")
    for claim in claims:
        conditions = ", ".join(
            f"{c['type']}={c['status']}({c.get('reason', '')})" for c in claim.get("status", {}).get("conditions", [])
        )
        lines.append(f"NodeClaim {claim['metadata']['name']}: {conditions}")
    for namespace in namespaces:
        try:
            lines += [f"event {namespace}: {event}" for event in events(ctx, namespace)[-10:]]
        except ApiError as error:
            lines.append(f"events of {namespace} not readable: {error}")
    karpenter_log = ctx.log_dir / "karpenter.log"
    if karpenter_log.exists():
        lines += [f"karpenter: {line}" for line in karpenter_log.read_text(errors="replace").splitlines()[-15:]]
    return lines
