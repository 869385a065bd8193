"""Registration: what a GPU node registers through the real mock device plugin, and what happens when Karpenter
cannot see it (no overlays, the gate off, no device plugin).
"""

from __future__ import annotations

from typing import Any

from e2e.cluster import prometheus
from e2e.cluster.hami_values import HamiValues
from e2e.cluster.node_agent import KWOK_NODE_ANNOTATION, RIG_STACK_LABEL
from e2e.cluster.stack import variant_plan
from e2e.cluster.workloads import (
    Context,
    condition,
    events,
    gpu_deployment,
    nodeclaims,
    requirement,
    team_pool,
)
from e2e.suites.base import CONSOLIDATION_BOUND_S, SHIPPED_STACKS, Result, Scenario, ScenarioFailure, settle, wait
from gpushare import names
from gpushare.hami import SharingProfile, node_capacity, smallest_memory_factor

# The mock polls its node every 30 s and the kubelet stand-in relays its ListAndWatch (every 10 s).
REGISTRATION_TIMEOUT_S = 120
SEED_TEAM = "inference"
NO_INSTANCE_TYPE = "no instance type has enough resources"
REGISTRATION_TAINT = {"key": "rig.gpushare.io/registration", "value": "only", "effect": "NoSchedule"}


# The catalog's largest GPU type, above the mock's per-resource ceiling at memoryFactor 1 (8 x 81559 MiB).
LARGEST_TYPE = "p5.48xlarge"
LARGE_GPU_POOL = "h100-shared"


def large_gpu_plan(ctx: Context) -> str:
    """prod with a HAMi pool of the catalog's largest type at the smallest memoryFactor that brings it under the
    mock's ceiling (gpushare.hami.smallest_memory_factor, the function config and pack judge it with), rendered by
    the real program and added to the rig's plans; its name."""
    prod = ctx.plans["prod"]
    profile = SharingProfile.model_validate(prod.source["config"]["gpushare:hami"].get("profile", {}))
    factor = smallest_memory_factor(ctx.catalog, ctx.catalog.instance_type(LARGEST_TYPE), profile)

    def edit(config: dict[str, Any]) -> None:
        config["gpushare:hami"].setdefault("profile", {})["memoryFactor"] = factor
        config["gpushare:pools"].append(
            {"name": LARGE_GPU_POOL, "instanceTypes": [LARGEST_TYPE], "maxGpus": 16, "sharing": "hami"}
        )
        config["gpushare:teams"][0]["pools"].append(LARGE_GPU_POOL)

    name = f"prod-{LARGE_GPU_POOL}"
    ctx.plans[name] = variant_plan("prod", name, ctx.log_dir.parent, edit, prod)
    return name


def _registration_nodes(ctx: Context, stacks: list[str]) -> list[tuple[dict[str, Any], dict[str, int], dict[str, int]]]:
    """Per instance type of every HAMi pool of the stacks: a fake node of it (the pool's labels, tainted so no pod
    lands), what gpushare's capacity model says it registers, and what the pool's NodeOverlay advertises."""
    found = []
    for stack, plan in sorted((stack, ctx.plans[stack]) for stack in stacks):
        release = HamiValues.from_values(plan.helm_values[names.HAMI_RELEASE])
        profile = SharingProfile(
            deviceSplitCount=release.split_count,
            deviceMemoryScaling=release.memory_scaling,
            deviceCoreScaling=release.core_scaling,
            memoryFactor=release.memory_factor,
        )
        overlays = {
            (o["metadata"]["labels"][names.POOL_LABEL], *requirement(o["spec"], names.INSTANCE_TYPE_LABEL)): o
            for o in plan.of_kind("NodeOverlay")
        }
        for pool in plan.of_kind("NodePool"):
            labels = pool["spec"]["template"]["metadata"]["labels"]
            if labels.get(names.SHARING_LABEL) != names.SHARING_HAMI:
                continue
            for itype in requirement(pool["spec"]["template"]["spec"], names.INSTANCE_TYPE_LABEL):
                instance = ctx.catalog.instance_type(itype)
                node = {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {
                        "name": f"registration-{stack}-{itype.replace('.', '-')}",
                        "labels": {**labels, names.INSTANCE_TYPE_LABEL: itype, RIG_STACK_LABEL: stack},
                        "annotations": {KWOK_NODE_ANNOTATION[0]: KWOK_NODE_ANNOTATION[1]},
                    },
                    "spec": {"taints": [REGISTRATION_TAINT]},
                    "status": {
                        "capacity": {"cpu": str(instance.vcpu), "memory": f"{instance.memory_mib}Mi", "pods": "110"}
                    },
                }
                planned = node_capacity(ctx.catalog, instance, profile).resources()
                overlay = overlays[(labels[names.POOL_LABEL], itype)]["spec"]["capacity"]
                found.append((node, planned, {name: int(value) for name, value in overlay.items()}))
    return found


def hami_registration(ctx: Context) -> Result:
    """A node of every instance type of every HAMi pool (dev, prod, and prod with a p5.48xlarge HAMi pool at the
    memoryFactor that fits) registers, through rig-gpu-node's device-plugin API and the real mock device plugin,
    exactly what gpushare's capacity model plans and the pool's NodeOverlay advertises: the overlay never promises
    more than HAMi and the mock register."""
    stacks = [*SHIPPED_STACKS, large_gpu_plan(ctx)]
    factor = HamiValues.from_values(ctx.plans[stacks[-1]].helm_values[names.HAMI_RELEASE]).memory_factor
    cases = _registration_nodes(ctx, stacks)
    nodes = [node for node, _, _ in cases]
    ctx.kubectl.apply(nodes)

    def registered(node: dict[str, Any]) -> dict[str, int]:
        allocatable = ctx.api.get(f"/api/v1/nodes/{node['metadata']['name']}")["status"].get("allocatable", {})
        return {name: int(allocatable.get(name, "0")) for name in ctx.hami.resource_names}

    try:
        seconds = wait(
            ctx,
            f"{len(nodes)} registration nodes registering every HAMi resource",
            lambda: all(all(registered(node).values()) for node in nodes),
            REGISTRATION_TIMEOUT_S,
            on="hami",
        )
        wrong = []
        figures = {}
        for node, planned, overlay in cases:
            seen = registered(node)
            name = node["metadata"]["name"]
            figures[name] = seen
            if seen != planned or seen != overlay:
                wrong.append(f"{name}: registered {seen}, capacity model {planned}, overlay {overlay}")
    finally:
        ctx.kubectl.delete(nodes)
    if wrong:
        raise ScenarioFailure("; ".join(wrong))
    return Result(
        "hami-registration",
        True,
        f"{len(cases)} instance types of the HAMi pools of {', '.join(stacks)} ({LARGEST_TYPE} at memoryFactor "
        f"{factor}): what the real mock and HAMi's device plugin stand-in registered equals the capacity model and "
        f"the overlay, within {seconds:.0f} s",
        {"registered": figures, "seconds": round(seconds, 1)},
    )


def no_overlays(ctx: Context) -> Result:
    """Without NodeOverlays Karpenter cannot see HAMi's resources: Pending, and it says why. The scenario's copy of
    the pool never had its overlays (applied and then deleted, Karpenter could still plan with them for a moment)."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    deployment = gpu_deployment(ctx, "no-overlay", team, pool, 1, {"cores": 50, "mem_mib": 4096})
    needle = NO_INSTANCE_TYPE
    try:
        ctx.kubectl.apply([deployment])
        seconds = wait(ctx, f"a Karpenter event '{needle}'", lambda: any(needle in e for e in events(ctx, team)), 90)
        if nodeclaims(ctx):
            raise ScenarioFailure(f"Karpenter launched {len(nodeclaims(ctx))} NodeClaims without overlays")
    finally:
        ctx.kubectl.delete([deployment])
    return Result(
        "no-overlays",
        True,
        f"without the {pool} overlays the pod stays Pending; Karpenter said '{needle}' after {seconds:.0f} s",
        {"seconds_to_event": round(seconds, 1)},
        [f"the scenario's copy of the pool ({pool}) is applied without its NodeOverlays"],
    )


def gate_off(ctx: Context) -> Result:
    """The negative control of the gate: with the stack's overlays in place but Karpenter's NodeOverlay gate off,
    Karpenter ignores them and a vGPU pod stays Pending with the same message as without overlays."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    deployment = gpu_deployment(ctx, "gate-off", team, pool, 1, {"cores": 50, "mem_mib": 4096})
    needle = NO_INSTANCE_TYPE
    ctx.restart_karpenter({"NodeOverlay": "false"})
    try:
        ctx.kubectl.apply([deployment])
        seconds = wait(
            ctx,
            f"a Karpenter event '{needle}'",
            lambda: any(needle in message for message in events(ctx, team, about="gate-off")),
            90,
        )
        if nodeclaims(ctx):
            raise ScenarioFailure(f"Karpenter launched {len(nodeclaims(ctx))} NodeClaims with the gate off")
    finally:
        ctx.kubectl.delete([deployment])
        ctx.restart_karpenter({})
    return Result(
        "gate-off",
        True,
        f"with NodeOverlay=false the {pool} overlays are ignored: the pod stays Pending; Karpenter said '{needle}' "
        f"after {seconds:.0f} s",
        {"seconds_to_event": round(seconds, 1)},
        ["Karpenter restarted with --feature-gates=NodeOverlay=false for this scenario, then with the stack's value"],
    )


def resource_not_registered(ctx: Context) -> Result:
    """No device plugin on the node: NodeClaim Initialized=Unknown/ResourceNotRegistered, never consolidated."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    ctx.agent.unplugged_pools.add(pool)
    deployment = gpu_deployment(ctx, "unplugged", team, pool, 1, {"cores": 50, "mem_mib": 4096})
    try:
        ctx.kubectl.apply([deployment])

        def stuck() -> bool:
            claims = nodeclaims(ctx)
            return bool(claims) and condition(claims[0], "Initialized").get("reason") == "ResourceNotRegistered"

        seconds = wait(ctx, "a NodeClaim Initialized=Unknown, reason ResourceNotRegistered", stuck)
        [claim] = nodeclaims(ctx)
        initialized = condition(claim, "Initialized")
        name = claim["metadata"]["name"]

        def firing() -> bool:
            return any(
                a["state"] == "firing" and a["labels"].get("name") == name
                for a in prometheus.alerts(prometheus.NOT_INITIALIZED_ALERT)
            )

        alert_s = seconds + wait(ctx, f"{prometheus.NOT_INITIALIZED_ALERT} firing for {name}", firing, on="alerts")
        ctx.kubectl.delete([deployment])
        # Empty now: a consolidatable node would go within Karpenter's consolidation bound; an uninitialized one
        # must stay.
        hold_s = CONSOLIDATION_BOUND_S
        settle(ctx, hold_s)
        remaining = [c["metadata"]["name"] for c in nodeclaims(ctx)]
        if claim["metadata"]["name"] not in remaining:
            raise ScenarioFailure("the uninitialized NodeClaim was consolidated")
    finally:
        ctx.kubectl.delete([deployment])
        ctx.agent.unplugged_pools.discard(pool)
    gone = wait(
        ctx, "the NodeClaim to initialize and consolidate once the plugin runs", lambda: not nodeclaims(ctx), 240
    )
    return Result(
        "resource-not-registered",
        True,
        f"Initialized={initialized['status']} ({initialized['reason']}) after {seconds:.0f} s, "
        f"{prometheus.NOT_INITIALIZED_ALERT} firing after {alert_s:.0f} s, still there {hold_s} s after its pods "
        f"left; consolidated {gone:.0f} s after the plugin ran",
        {
            "seconds_to_condition": round(seconds, 1),
            "seconds_to_alert": round(alert_s, 1),
            "held_s": hold_s,
            "message": initialized.get("message", ""),
        },
    )


SCENARIOS = (
    Scenario(
        "hami-registration",
        hami_registration,
        shows=(
            "a node of every instance type of every HAMi pool of dev and prod, and of prod with a `p5.48xlarge` "
            "HAMi pool at the smallest `memoryFactor` that fits the mock's ceiling (6: 8 x 81559 MiB register as "
            "108745 units), registers, through the real mock device plugin reading the stack's device config and "
            "the rig's device-plugin API, exactly what gpushare's capacity model plans and the pool's NodeOverlay"
            " advertises: the overlay never promises more than the node registers"
        ),
    ),
    Scenario(
        "no-overlays",
        no_overlays,
        (SEED_TEAM,),
        without=("NodeOverlay",),
        shows=(
            "without the pool's NodeOverlays (its copy is applied without them) the pod stays Pending and "
            "Karpenter says `no instance type has enough resources`"
        ),
    ),
    Scenario(
        "gate-off",
        gate_off,
        (SEED_TEAM,),
        alone=True,
        shows=(
            "the negative control of the gate: the overlays in place but Karpenter restarted with "
            "`NodeOverlay=false`, the pod stays Pending with the same message; Karpenter then runs with the "
            "stack's gates again (run with the gate on, this scenario fails: checked when it was written)"
        ),
    ),
    Scenario(
        "resource-not-registered",
        resource_not_registered,
        (SEED_TEAM,),
        shows=(
            "when no device plugin registers HAMi's resources the NodeClaim stays `Initialized=Unknown` "
            "(`ResourceNotRegistered`), `GpuNodeClaimNotInitialized` fires, and it is never consolidated, even "
            "empty; once the plugin runs it initializes and goes"
        ),
    ),
)
