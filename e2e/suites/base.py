"""What every scenario shares: its `Result`, `ScenarioFailure` and the waits and checks that raise it."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from e2e.cluster.api import ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.invariants import HAMI_DEVICES, HAMI_NODE
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.rig import wait_for
from e2e.cluster.stack import RIG_CONSOLIDATE_AFTER
from e2e.cluster.workloads import (
    HAMI_BIND_PHASE,
    Context,
    admitted,
    events,
    gpus_of,
    nodeclaims,
)
from gpushare.metrics import duration_seconds

SCALE_TIMEOUT_S = 180
# The stacks the project ships, whose own objects the objects and registration scenarios check.
SHIPPED_STACKS = ("dev", "prod")
# How long Karpenter takes, at most, to consolidate an empty node it may consolidate: the rig's consolidateAfter,
# its disruption controller's polling period (10 s) and its command validation delay (15 s), both fixed in
# sigs.k8s.io/karpenter v1.15 pkg/controllers/disruption, and a margin. Holding an empty node this long without
# Karpenter taking it shows it will not.
CONSOLIDATION_BOUND_S = duration_seconds(RIG_CONSOLIDATE_AFTER) + 10 + 15 + 5
# Karpenter's default disruption budget (10% of a pool's nodes, rounded up) lets one empty node of a pool of fewer
# than ten go per round: its poll, its validation and the node's termination, up to about 45 s on a loaded rig.
CONSOLIDATION_ROUND_S = 45


class ScenarioFailure(Exception):
    """A scenario's expectation did not hold; the message says what was seen."""


@dataclass(frozen=True)
class Scenario:
    """A scenario of `make e2e`: what it runs on, and whether it can share the cluster with others."""

    name: str
    run: Callable[[Context], Result]
    # The stack's teams the scenario gets its own copies of (with their pools); none: it uses the stack's own.
    teams: tuple[str, ...] = ()
    # Kinds of its tenant's pool objects never applied (what it shows is their absence).
    without: tuple[str, ...] = ()
    # Stack-file keys set on its copies of the teams (team -> keys), e.g. the headroom one of them asks for.
    team_keys: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Runs before the stack is installed (the objects scenarios apply and delete a whole stack).
    before_stack: bool = False
    # Changes what every scenario sees (restarts Karpenter): runs with no other.
    alone: bool = False
    # What it shows, one sentence for e2e/README.md's scenario table (`make docs` writes the table from it).
    shows: str = field(default="", kw_only=True)


@dataclass
class Result:
    name: str
    passed: bool
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # Wall time, and the part of it each wait spent, by what was waited on (WAITED_ON).
    seconds: float = 0.0
    waited: dict[str, float] = field(default_factory=dict)


# What a scenario's waits are charged to in its report: the controller whose work it waits for, or its own hold.
WAITED_ON = ("karpenter", "hami", "alerts", "api", "settle")


def _charge(ctx: Context, on: str, seconds: float) -> None:
    assert on in WAITED_ON, on
    ctx.waited[on] = round(ctx.waited.get(on, 0.0) + seconds, 1)


def wait(
    ctx: Context, what: str, condition: Callable[[], bool], timeout_s: float = SCALE_TIMEOUT_S, on: str = "karpenter"
) -> float:
    """Seconds until `condition` held, looked at whenever the cluster changes, charged to `on`; ScenarioFailure
    naming `what` after `timeout_s`."""
    started = time.monotonic()
    if ctx.changes is not None:
        held = ctx.changes.wait_for(condition, timeout_s)
    else:
        try:
            wait_for(what, condition, timeout_s, interval_s=1)
            held = True
        except RigError:
            held = False
    seconds = time.monotonic() - started
    _charge(ctx, on, seconds)
    if not held:
        raise ScenarioFailure(f"timed out after {timeout_s:.0f} s waiting for {what}")
    return seconds


def settle(ctx: Context, seconds: float) -> None:
    """A fixed hold, for what only something not happening within a bound can show (a node Karpenter must keep)."""
    time.sleep(seconds)
    _charge(ctx, "settle", seconds)


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


def all_consolidated(ctx: Context, timeout_s: float = 240) -> float:
    """Seconds until Karpenter has consolidated every GPU node of the scenario's pools away."""
    return wait(ctx, "every NodeClaim consolidated away", lambda: not nodeclaims(ctx), timeout_s)


def remove_and_wait_empty(ctx: Context, deployment: dict[str, Any], nodes: int = 1) -> float:
    """Delete the workload; seconds until Karpenter has consolidated every GPU node away (`nodes` of them: under
    Karpenter's default budget a pool of fewer than ten gives back one per round)."""
    ctx.kubectl.delete([deployment])
    return all_consolidated(ctx, max(240, CONSOLIDATION_ROUND_S * nodes))


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
