"""Warm headroom: a team's CapacityBuffer, sized in vGPUs by the stack, kept by the real Karpenter core (gate
CapacityBuffer) and used by real pods that HAMi places; and where Karpenter's summed view and HAMi's per-GPU placement
disagree about a buffer."""

from __future__ import annotations

import copy
import time
from typing import Any

from e2e.cluster.stack import for_rig
from e2e.cluster.workloads import (
    Context,
    app_pods,
    bound,
    condition,
    event_count,
    gpu_deployment,
    initialized,
    nodeclaims,
    rig_pool,
    team_pool,
    variant,
)
from e2e.suites.base import Result, Scenario, ScenarioFailure, all_consolidated, placed_by_hami, wait
from gpushare import names
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.errors import UserError
from gpushare.loader import load_stack_config

HEADROOM_TEAM = "inference"
# The headroom the scenario's copy of the team asks for (teams[].headroom): two warm pods of a third of a T4 each.
HEADROOM = {"pods": 2, "shape": {"gpuMemoryMib": 5120, "gpuCores": 33}}
BUFFER_API = "/apis/autoscaling.x-k8s.io/v1beta1"
# A shape that fragments a 4 x T4 node: Karpenter counts 61440 / 6000 = 10 per node, HAMi places 2 per GPU, 8.
FRAGMENT_TYPE = "g4dn.12xlarge"
FRAGMENT_MIB = 6000
FRAGMENT_PODS = 10
# The scenario's copy of the team: the headroom, and GPU memory quota for all FRAGMENT_PODS real pods (the stack's
# 30720 MiB admits five), so HAMi's placement, not the quota, decides where they go.
TEAM_KEYS = {"headroom": HEADROOM, "quota": {"gpus": 20, "gpuMemoryMib": 61440, "gpuCores": 200}}


def _buffer(ctx: Context, team: str) -> dict[str, Any]:
    [buffer] = [b for b in ctx.plan.of_kind("CapacityBuffer") if b["metadata"]["namespace"] == team]
    return buffer


def _live(ctx: Context, buffer: dict[str, Any]) -> dict[str, Any]:
    meta = buffer["metadata"]
    return ctx.api.get(f"{BUFFER_API}/namespaces/{meta['namespace']}/capacitybuffers/{meta['name']}")


def _kept(ctx: Context, buffer: dict[str, Any]) -> bool:
    """Karpenter's word that every warm pod fits a node that exists (Provisioning True, FitsExistingCapacity)."""
    return condition(_live(ctx, buffer), "Provisioning").get("reason") == "FitsExistingCapacity"


def _kept_on_one_node(ctx: Context, buffer: dict[str, Any], what: str) -> tuple[float, set[str]]:
    """Seconds until Karpenter kept the buffer on one node whose GPUs registered, and that node. Karpenter sizes a
    NodeClaim still coming up by its launch capacity, which lacks the overlays' vGPUs (a 4-GPU type counts 4, not
    40: "computed unready node(s) will fit pod(s)"), so it may launch a second node for the rest of a buffer and
    consolidate it once the first registered; each buffer here fits one node."""

    def settled() -> bool:
        claims = nodeclaims(ctx)
        return _kept(ctx, buffer) and len(claims) == 1 and initialized(claims[0])

    seconds = wait(ctx, what, settled)
    return seconds, {c["status"]["nodeName"] for c in nodeclaims(ctx)}


def _warm_pods(ctx: Context, team: str, pool: str, template: dict[str, Any], replicas: int) -> dict[str, Any]:
    """Real pods of the buffer's shape: its PodTemplate's container asks, as the team's own Deployment. They ask HAMi
    to binpack nodes: the team's own spread policy would send a second pod to the node Karpenter launches to refill
    the buffer whenever that node registers before HAMi places it (seen with three other scenarios running)."""
    deployment = gpu_deployment(ctx, "warm", team, pool, replicas, {"cores": 1, "mem_mib": 1})
    deployment["spec"]["template"]["metadata"]["annotations"] = {names.HAMI_NODE_POLICY_ANNOTATION: "binpack"}
    [container] = template["template"]["spec"]["containers"]
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"] = copy.deepcopy(container["resources"])
    return deployment


def _time_to_placed(ctx: Context, deployment: dict[str, Any], what: str) -> float:
    team, app = deployment["metadata"]["namespace"], deployment["metadata"]["name"]
    replicas = deployment["spec"]["replicas"]
    ctx.kubectl.apply([deployment])
    started = time.monotonic()
    wait(
        ctx,
        f"{replicas} {what} pods placed by HAMi",
        lambda: len(bound(app_pods(ctx, team, app))) == replicas,
        on="hami",
    )
    return time.monotonic() - started


def warm_headroom(ctx: Context) -> Result:
    """A team's warm headroom of two vGPU pods (5120 MiB, 33% of a T4): without it two real pods of that shape wait
    for a node; with it Karpenter keeps a Ready node and no real pod is pending, the two bind at once, placed by HAMi on
    that node, and the buffer refills; deleted, consolidation takes the spare node back. Then a shape that fragments a
    4-GPU node: what Karpenter keeps, what HAMi places, and that the stack refuses that headroom."""
    team = ctx.team(HEADROOM_TEAM)
    pool = team_pool(ctx, team)
    buffer = _buffer(ctx, team)
    [template] = [t for t in ctx.plan.of_kind("PodTemplate") if t["metadata"]["namespace"] == team]
    replicas = int(buffer["spec"]["replicas"])
    warm = _warm_pods(ctx, team, pool, template, replicas)
    figures: dict[str, Any] = {"pool": pool, "buffer_replicas": replicas}
    try:
        cold_s = _time_to_placed(ctx, warm, "cold")
        ctx.kubectl.delete([warm])
        all_consolidated(ctx)
        ctx.kubectl.apply([buffer])
        kept_s, warm_nodes = _kept_on_one_node(ctx, buffer, "Karpenter keeping the buffer on one Ready node")
        pending = app_pods(ctx, team, "warm")
        if not warm_nodes or pending:
            raise ScenarioFailure(f"the buffer kept nodes {warm_nodes} with real pods {pending}")
        warm_s = _time_to_placed(ctx, warm, "warm")
        placement = placed_by_hami(ctx, bound(app_pods(ctx, team, "warm")))
        if not set(placement) <= warm_nodes:
            raise ScenarioFailure(f"the warm pods landed on {set(placement)}, not the buffer's nodes {warm_nodes}")
        refill_s = wait(
            ctx,
            "Karpenter refilling the buffer on a new node",
            lambda: _kept(ctx, buffer) and len(nodeclaims(ctx)) > len(warm_nodes),
        )
        figures |= {
            "cold_seconds_to_placed": round(cold_s, 1),
            "seconds_to_buffer_kept": round(kept_s, 1),
            "warm_seconds_to_placed": round(warm_s, 1),
            "seconds_to_refilled": round(refill_s, 1),
            "nodes_kept": len(warm_nodes),
            "placement": placement,
        }
        ctx.kubectl.delete([buffer, warm])
        figures["seconds_to_spare_nodes_gone"] = round(all_consolidated(ctx), 1)
        figures["fragmentation"] = _fragmenting_buffer(ctx, team, pool, template)
    finally:
        ctx.kubectl.delete([buffer, warm])
    frag = figures["fragmentation"]
    return Result(
        "warm-headroom",
        True,
        f"{replicas} warm vGPU pods on {pool}: cold {cold_s:.0f} s to placed, with the buffer {warm_s:.0f} s on the "
        f"{len(warm_nodes)} node(s) Karpenter kept with no pod pending; refilled after {refill_s:.0f} s; spare nodes "
        f"gone {figures['seconds_to_spare_nodes_gone']:.0f} s after the buffer; a {FRAGMENT_MIB} MiB buffer on "
        f"{FRAGMENT_TYPE}: Karpenter kept {frag['nodes_kept']} node for {FRAGMENT_PODS}, HAMi placed "
        f"{frag['placed_on_kept_node']} real pods there, the rest elsewhere or refused; the stack refuses that "
        "headroom",
        figures,
        [
            "the scenario's copy of the team asks for headroom (teams[].headroom), which turns Karpenter's "
            "CapacityBuffer gate on for the run; its CapacityBuffer is applied by the scenario",
            f"the copy's GPU memory quota is {TEAM_KEYS['quota']['gpuMemoryMib']} MiB, enough for all "
            f"{FRAGMENT_PODS} fragmenting pods",
        ],
    )


def _fragmenting_buffer(ctx: Context, team: str, pool: str, template: dict[str, Any]) -> dict[str, Any]:
    """A hand-written buffer of FRAGMENT_PODS pods of FRAGMENT_MIB on the pool rendered with 4-GPU nodes: Karpenter,
    which sums the node's GPU memory, keeps one node for all of them; of real pods of that shape HAMi places only as
    many there as fit per GPU, the rest need another node. The stack's own check refuses such headroom."""

    def four_gpu_nodes(config: dict[str, Any]) -> None:
        for entry in config["gpushare:pools"]:
            if entry["name"] == pool:
                entry["instanceTypes"] = [FRAGMENT_TYPE]
                entry["maxGpus"] = 8

    document = copy.deepcopy(ctx.plan.source)
    four_gpu_nodes(document["config"])
    for entry in document["config"]["gpushare:teams"]:
        if entry["name"] == team:
            entry["headroom"] = {"pods": FRAGMENT_PODS, "shape": {"gpuMemoryMib": FRAGMENT_MIB, "gpuCores": 10}}
    try:
        load_stack_config(document["config"], today=FIXED_PLAN_DAY)
    except UserError as error:
        refusal = next((line for line in str(error).splitlines() if "fragments" in line), "")
    else:
        refusal = ""
    if not refusal:
        raise ScenarioFailure(f"the stack did not refuse headroom of {FRAGMENT_MIB} MiB pods on {FRAGMENT_TYPE}")
    instance_type = ctx.catalog.instance_type(FRAGMENT_TYPE)
    fits = instance_type.gpu_count * (ctx.catalog.gpu_model_of(instance_type).nvml_memory_mib // FRAGMENT_MIB)
    multi = variant(ctx, "four-gpu-nodes", four_gpu_nodes)
    nodepool = for_rig(next(p for p in multi.of_kind("NodePool") if p["metadata"]["name"] == pool), ctx.started)
    overlays = [o for o in multi.of_kind("NodeOverlay") if o["metadata"]["labels"][names.POOL_LABEL] == pool]
    shaped = copy.deepcopy(template)
    shaped["metadata"]["name"] = "fragmenting"
    limits = {names.GPU: "1", names.GPU_MEMORY: str(FRAGMENT_MIB), names.GPU_CORES: "10"}
    shaped["template"]["spec"]["containers"][0]["resources"] = {"requests": dict(limits), "limits": dict(limits)}
    buffer = {
        "apiVersion": "autoscaling.x-k8s.io/v1beta1",
        "kind": "CapacityBuffer",
        "metadata": {"name": "fragmenting", "namespace": team},
        "spec": {"podTemplateRef": {"name": "fragmenting"}, "replicas": FRAGMENT_PODS},
    }
    real = _warm_pods(ctx, team, pool, shaped, FRAGMENT_PODS)
    real["metadata"]["name"] = real["spec"]["template"]["metadata"]["labels"]["app"] = "fragmented"
    real["spec"]["selector"]["matchLabels"]["app"] = "fragmented"

    def on_kept_node() -> int:
        placement = placed_by_hami(ctx, bound(app_pods(ctx, team, "fragmented")))
        return sum(len(gpus) for node, gpus in placement.items() if node in kept)

    def decided() -> bool:
        """The kept node full as HAMi fills it, and every other pod placed elsewhere or refused by HAMi."""
        others = [p for p in app_pods(ctx, team, "fragmented") if p["spec"].get("nodeName") not in kept]
        placed = {p["metadata"]["name"] for p in bound(others)}
        refused = [
            p
            for p in others
            if p["metadata"]["name"] not in placed and event_count(ctx, team, p["metadata"]["name"], "FailedScheduling")
        ]
        return on_kept_node() >= fits and len(placed) + len(refused) == len(others) == FRAGMENT_PODS - fits

    try:
        ctx.kubectl.apply([nodepool, *overlays, shaped])
        ctx.kubectl.apply([buffer])
        _, kept = _kept_on_one_node(ctx, buffer, f"Karpenter keeping the fragmenting buffer on one {FRAGMENT_TYPE}")
        ctx.kubectl.apply([real])
        wait(ctx, f"HAMi placing {fits} pods on the kept node and none more", decided, on="hami")
        seen = {"nodes_kept": len(kept), "placed_on_kept_node": on_kept_node(), "fits_per_gpu": fits}
        if seen["placed_on_kept_node"] != fits:
            raise ScenarioFailure(f"HAMi placed {seen['placed_on_kept_node']} pods on the kept node, not {fits}")
    finally:
        ctx.kubectl.delete([real, buffer, shaped])
        ctx.kubectl.delete(overlays)
        ctx.kubectl.apply([rig_pool(ctx, pool)])
    all_consolidated(ctx)
    return {**seen, "stack_refusal": refusal}


SCENARIOS = (
    Scenario(
        "warm-headroom",
        warm_headroom,
        (HEADROOM_TEAM,),
        without=("CapacityBuffer",),
        team_keys={HEADROOM_TEAM: TEAM_KEYS},
        shows=(
            "the stack's warm headroom with the real Karpenter core (gate `CapacityBuffer`, which the plan turns "
            "on because the scenario's copy of `inference` asks for headroom: two pods of 5120 MiB and 33% of a "
            "T4): two real pods of that shape wait for a node without it; with the CapacityBuffer applied "
            "Karpenter keeps a Ready node and no real pod is pending, the two then bind at once, placed by HAMi "
            "on that node (they ask HAMi to binpack nodes: the team's spread would send the second to the refill "
            "node when it is up first), and the buffer refills on a new node; deleted, consolidation takes the "
            "spare nodes back. A buffer whose shape fragments a 4-GPU node (6000 MiB on a `g4dn.12xlarge`; the "
            "team copy's GPU memory quota admits all ten): Karpenter keeps one node for ten pods (it may first "
            "launch a second, which it consolidates once the first registered its vGPUs), HAMi places eight real "
            "ones there (two per GPU) and not the other two (they wait, or run on a node launched later); the "
            "stack's config refuses that headroom, naming the even shape that fits"
        ),
    ),
)
