"""HAMi placement and where Karpenter's summed view of a node and HAMi's per-GPU placement disagree."""

from __future__ import annotations

import contextlib
import time
from typing import Any

from e2e.cluster import prometheus
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.stack import Plan, for_rig
from e2e.cluster.workloads import (
    Context,
    admitted,
    app_pods,
    bound,
    events,
    gpu_deployment,
    initialized,
    nodeclaims,
    nodes_by_type,
    rig_pool,
    running,
    variant,
)
from e2e.suites.base import Result, Scenario, ScenarioFailure, all_consolidated, placed_by_hami, wait
from e2e.suites.monitoring import (
    UNPLACED_ALERT,
    unplaced_alerts,
)
from gpushare import names
from gpushare.render.alerts import FREE_GPU_MEMORY

# HAMi 2.10 scheduler metric FREE_GPU_MEMORY starts from (cmd/scheduler/metrics.go; labels node, device_uuid...).
GPU_MEMORY_LIMIT = "hami_gpu_memory_limit_bytes"

POLICY_ANNOTATIONS = ("hami.io/node-scheduler-policy", "hami.io/gpu-scheduler-policy")
MULTI_GPU_TYPE = "g5.12xlarge"
SEED_POLICY_POOL = "g5-shared"
WIDE_TEAM = "ml-research"


def multi_gpu_variant(ctx: Context) -> Plan:
    """The stack with the scenario's g5-shared pool on 4-GPU nodes only and its copy of ml-research given a
    scheduler policy (node spread, GPU binpack), rendered by the real program."""
    pool_name, team = ctx.pool(SEED_POLICY_POOL), ctx.team(WIDE_TEAM)

    def edit(config: dict[str, Any]) -> None:
        for pool in config["gpushare:pools"]:
            if pool["name"] == pool_name:
                pool["instanceTypes"] = [MULTI_GPU_TYPE]
                pool["maxGpus"] = 8
        for entry in config["gpushare:teams"]:
            if entry["name"] == team:
                entry["schedulerPolicy"] = {"node": "spread", "gpu": "binpack"}

    return variant(ctx, "multi-gpu", edit)


def placed_one_by_one(
    ctx: Context, deployment: dict[str, Any], replicas: int
) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """Scale the Deployment up one pod at a time, each placed by HAMi before the next arrives; the placement and
    pods. A burst is placed differently: a pod whose bind finds the node still locked by the pod bound just before
    it fails its binding (HAMi's "Failed to lock node", event BindingFailed) and is filtered again, so binpack can
    spill onto another node (seen once: 3 + 1 pods on two nodes)."""
    team, app = deployment["metadata"]["namespace"], deployment["metadata"]["name"]
    for count in range(1, replicas + 1):
        deployment["spec"]["replicas"] = count
        ctx.kubectl.apply([deployment])
        wait(
            ctx,
            f"{count} {app} pods Running, placed by HAMi",
            lambda n=count: len(bound(app_pods(ctx, team, app))) == n,
            on="hami",
        )
    pods = bound(app_pods(ctx, team, app))
    return placed_by_hami(ctx, pods), pods


def _policy_holds(node_policy: str, gpu_policy: str, placement: dict[str, list[str]], nodes: int) -> str:
    """What is wrong with a placement of one-vGPU pods under the policies ('' when nothing): binpack fills one
    node (one GPU), spread uses every node (a GPU of its own per pod while GPUs last)."""
    if node_policy == "binpack" and len(placement) != 1:
        return f"node binpack used {len(placement)} nodes"
    if node_policy == "spread" and len(placement) != nodes:
        return f"node spread used {len(placement)} of {nodes} nodes"
    for node, gpus in placement.items():
        if gpu_policy == "binpack" and len(set(gpus)) != 1:
            return f"GPU binpack used {len(set(gpus))} GPUs of {node}"
        if gpu_policy == "spread" and len(set(gpus)) != len(gpus):
            return f"GPU spread put {len(gpus)} vGPUs on {len(set(gpus))} GPUs of {node}"
    return ""


def seed_003_policies(ctx: Context) -> Result:
    """Seed 003 with HAMi placing: on two 4-GPU nodes of a HAMi pool (held by two CPU-heavy pods that ask no GPU),
    four one-vGPU pods per node x GPU binpack/spread combination, each pod's own annotations read by HAMi's
    scheduler; then pods without annotations in a team whose policy admission sets them."""
    team, pool_name = ctx.team(WIDE_TEAM), ctx.pool(SEED_POLICY_POOL)
    multi = multi_gpu_variant(ctx)
    pool = for_rig(next(p for p in multi.of_kind("NodePool") if p["metadata"]["name"] == pool_name), ctx.started)
    overlays = [o for o in multi.of_kind("NodeOverlay") if o["metadata"]["labels"][names.POOL_LABEL] == pool_name]
    policies = [
        obj
        for obj in multi.objects
        if obj["kind"].startswith("MutatingAdmissionPolicy")
        and "scheduler-policy" in obj["metadata"]["name"]
        and obj["metadata"]["name"].startswith(f"gpushare-{team}-")
    ]
    ballast = gpu_deployment(ctx, "ballast", team, pool_name, 2, {}, cpu="30", gpu=False)
    created: list[dict[str, Any]] = [ballast]
    results: dict[str, Any] = {}
    try:
        ctx.kubectl.apply([pool, *overlays])
        ctx.kubectl.apply([ballast])
        wait(ctx, "2 ballast pods Running on two nodes", lambda: len(running(app_pods(ctx, team, "ballast"))) == 2)
        nodes = {p["spec"]["nodeName"] for p in running(app_pods(ctx, team, "ballast"))}
        for node_policy in ("binpack", "spread"):
            for gpu_policy in ("binpack", "spread"):
                app = f"node-{node_policy}-gpu-{gpu_policy}"
                deployment = gpu_deployment(ctx, app, team, pool_name, 4, {"cores": 10, "mem_mib": 2000})
                deployment["spec"]["template"]["metadata"]["annotations"] = dict(
                    zip(POLICY_ANNOTATIONS, (node_policy, gpu_policy), strict=True)
                )
                created.append(deployment)
                results[app], _ = placed_one_by_one(ctx, deployment, 4)
                ctx.kubectl.delete([deployment])
                wrong = _policy_holds(node_policy, gpu_policy, results[app], len(nodes))
                if wrong:
                    raise ScenarioFailure(f"{app}: {wrong}: {results[app]}")
        ctx.kubectl.apply(policies)
        plain = gpu_deployment(ctx, "team-policy", team, pool_name, 4, {"cores": 10, "mem_mib": 2000})
        probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": team}}
        probe["spec"] = plain["spec"]["template"]["spec"]

        def in_force() -> bool:
            annotations = admitted(ctx, probe)["metadata"].get("annotations", {})
            return tuple(annotations.get(key) for key in POLICY_ANNOTATIONS) == ("spread", "binpack")

        # The API server picks up new admission policies asynchronously: a dry run shows when they apply.
        wait(ctx, f"team {team}'s scheduler policy admission in force", in_force, 60, on="api")
        created.append(plain)
        results["team-policy"], pods = placed_one_by_one(ctx, plain, 4)
        got = {tuple(p["metadata"]["annotations"].get(key) for key in POLICY_ANNOTATIONS) for p in pods}
        if got != {("spread", "binpack")}:
            raise ScenarioFailure(f"team {team}'s pods came out with policies {got}, not its spread/binpack")
        wrong = _policy_holds("spread", "binpack", results["team-policy"], len(nodes))
        if wrong:
            raise ScenarioFailure(f"team-policy: {wrong}: {results['team-policy']}")
    finally:
        ctx.kubectl.delete([*created, *policies])
        ctx.kubectl.delete(overlays)
        ctx.kubectl.apply([rig_pool(ctx, pool_name)])
    all_consolidated(ctx)
    summary = ", ".join(
        f"{app}: {len(placement)} node(s), {sorted(len(set(g)) for g in placement.values())} GPUs"
        for app, placement in results.items()
    )
    return Result(
        "seed-003-policies",
        True,
        f"HAMi placed 4 one-vGPU pods per policy on 2 x {MULTI_GPU_TYPE} as each policy means ({summary}); team "
        f"{team}'s admission-set spread/binpack honoured",
        {"placement": results},
        [
            f"pool {SEED_POLICY_POOL} rendered with instanceTypes [{MULTI_GPU_TYPE}] for this scenario (the stacks "
            "keep one-GPU types per HAMi pool)"
        ],
    )


ONE_GPU_POOL = "g4dn-shared"
# The longest the scenario watches Karpenter and HAMi disagree: past the rig's one-minute alert threshold,
# Karpenter's 30 s pod-metrics refresh and a few consolidation rounds.
DISAGREE_WATCH_S = 300
FRAGMENT_MIB = 13000
FRAGMENT_PODS = 6


def _claims_by_pool(ctx: Context) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for claim in nodeclaims(ctx):
        found.setdefault(claim["metadata"]["labels"].get(names.NODEPOOL_LABEL, ""), set()).add(
            claim["metadata"]["name"]
        )
    return found


def _hami_refusal(ctx: Context, namespace: str, app: str) -> str:
    """The last FailedScheduling message HAMi's scheduler gave a pod of `app`."""
    messages = [e for e in events(ctx, namespace, about=app) if e.startswith("FailedScheduling")]
    return messages[-1] if messages else ""


def _watch_disagreement(ctx: Context, team: str, apps: dict[str, str], launches: bool) -> dict[str, Any]:
    """Watch pods Karpenter finds room for and HAMi does not place, until HamiPodUnplaced fires for every app (and,
    with `launches`, its pool launched a node), at most DISAGREE_WATCH_S: per app, the NodeClaims its pool launched
    (distinct names: a launch/consolidate loop shows as more than one), whether the pod ever ran, when the alert
    fired for it and HAMi's reason."""
    launched: dict[str, set[str]] = {pool: set() for pool in apps.values()}
    fired: dict[str, float] = {}
    ran: set[str] = set()
    started = time.monotonic()

    def seen_all() -> bool:
        for pool, claims in _claims_by_pool(ctx).items():
            launched.setdefault(pool, set()).update(claims)
        firing = unplaced_alerts()
        for app in apps:
            pods = app_pods(ctx, team, app)
            if running(pods):
                ran.add(app)
            if any(f"{team}/{pod['metadata']['name']}" in firing for pod in pods):
                fired.setdefault(app, round(time.monotonic() - started))
        return all(app in fired and (launched[pool] or not launches) for app, pool in apps.items())

    with contextlib.suppress(ScenarioFailure):  # what was seen is judged by the caller
        wait(ctx, f"{UNPLACED_ALERT} for {', '.join(apps)}", seen_all, DISAGREE_WATCH_S, on="alerts")
    return {
        app: {
            "pool": pool,
            "nodeclaims_launched": len(launched[pool]),
            "ran": app in ran,
            "alert_after_s": fired.get(app),
            "hami_refusal": _hami_refusal(ctx, team, app),
        }
        for app, pool in apps.items()
    }


def _free_gpu_memory_mib(nodes: set[str]) -> dict[str, float]:
    """On the busiest of `nodes`, the GPU memory HAMi's metrics show free: summed over its GPUs (what Karpenter
    counts) and on its emptiest GPU (what HAMi can place)."""
    selected = "|".join(sorted(nodes))
    free = FREE_GPU_MEMORY.replace(GPU_MEMORY_LIMIT, f'{GPU_MEMORY_LIMIT}{{node=~"{selected}"}}', 1)
    return {
        legend: max(float(s["value"][1]) for s in prometheus.query(f"{how} by (node) ({free})")) / 2**20
        for legend, how in (("summed_mib", "sum"), ("largest_on_one_gpu_mib", "max"))
    }


def _admission_refusal(ctx: Context, deployment: dict[str, Any]) -> str:
    """Why the API server refuses the Deployment's pod ('' when it admits it)."""
    probe = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": f"{deployment['metadata']['name']}-probe",
            "namespace": deployment["metadata"]["namespace"],
        },
        "spec": deployment["spec"]["template"]["spec"],
    }
    try:
        admitted(ctx, probe)
    except KubectlError as error:
        return str(error).splitlines()[-1]
    return ""


def karpenter_hami_disagree(ctx: Context) -> Result:
    """Where Karpenter's summed view of a node and HAMi's per-GPU placement disagree, what the real pair does and
    how the stack prevents or surfaces it. (1) Without the team's per-GPU admission bound: a container asking 2
    vGPUs on one-GPU nodes, and one asking more memory than one GPU of a 4-GPU node holds; Karpenter launches
    nodes for them, HAMi never places them, HamiPodUnplaced fires. (2) With the bound: both refused at admission,
    naming the limit. (3) Fragmentation, which no admission rule can see: on a pool of 4-GPU nodes, pods that fit
    one per GPU; Karpenter counts room for more on the node and launches nothing, the rest pend, HAMi's own
    metrics show the memory free in sum but not on any one GPU, and the alert fires. (4) Pool design prevents it:
    the same pods on the stack's one-GPU pool all run."""
    team, multi_name, one_gpu_name = ctx.team(WIDE_TEAM), ctx.pool(SEED_POLICY_POOL), ctx.pool(ONE_GPU_POOL)
    multi = multi_gpu_variant(ctx)
    multi_pool = for_rig(next(p for p in multi.of_kind("NodePool") if p["metadata"]["name"] == multi_name), ctx.started)
    overlays = [o for o in multi.of_kind("NodeOverlay") if o["metadata"]["labels"][names.POOL_LABEL] == multi_name]
    [binding] = [
        b
        for b in ctx.plan.of_kind("ValidatingAdmissionPolicyBinding")
        if b["metadata"]["name"] == f"gpushare-{team}-per-gpu-limit"
    ]
    gpu_mib = ctx.catalog.gpu_model_of(ctx.catalog.instance_type(MULTI_GPU_TYPE)).nvml_memory_mib
    more_vgpus = gpu_deployment(ctx, "more-vgpus", team, one_gpu_name, 1, {"gpu": 2, "cores": 10, "mem_mib": 1000})
    over_one_gpu = gpu_deployment(ctx, "over-one-gpu", team, multi_name, 1, {"cores": 10, "mem_mib": 30000})
    fragmented = gpu_deployment(
        ctx, "fragmented", team, multi_name, FRAGMENT_PODS, {"cores": 10, "mem_mib": FRAGMENT_MIB}
    )
    figures: dict[str, Any] = {}
    try:
        ctx.kubectl.apply([multi_pool, *overlays])
        ctx.kubectl.delete([binding])
        wait(ctx, "the per-GPU bound out of force", lambda: not _admission_refusal(ctx, more_vgpus), 60, on="api")
        ctx.kubectl.apply([more_vgpus, over_one_gpu])
        unbounded = _watch_disagreement(
            ctx, team, {"more-vgpus": one_gpu_name, "over-one-gpu": multi_name}, launches=True
        )
        figures["without_admission_bound"] = unbounded
        wrong = {
            app: seen
            for app, seen in unbounded.items()
            if seen["ran"] or not seen["nodeclaims_launched"] or seen["alert_after_s"] is None
        }
        if wrong:
            raise ScenarioFailure(f"expected a node launched, the pod never placed and {UNPLACED_ALERT}: {wrong}")
        ctx.kubectl.delete([more_vgpus, over_one_gpu])
        all_consolidated(ctx)
        ctx.kubectl.apply([binding])
        wait(ctx, "the per-GPU bound in force", lambda: bool(_admission_refusal(ctx, more_vgpus)), 60, on="api")
        refusals = {d["metadata"]["name"]: _admission_refusal(ctx, d) for d in (more_vgpus, over_one_gpu)}
        figures["admission_refusals"] = refusals
        if "nvidia.com/gpu per container must be at most 1" not in refusals["more-vgpus"] or (
            "nvidia.com/gpumem per container must be at most" not in refusals["over-one-gpu"]
        ):
            raise ScenarioFailure(f"the per-GPU bound did not refuse both pods naming the limit: {refusals}")

        # One at a time up to what the node's GPUs hold (a burst only adds node-lock retries), then the rest.
        fits = ctx.catalog.instance_type(MULTI_GPU_TYPE).gpu_count * (gpu_mib // FRAGMENT_MIB)
        placed_one_by_one(ctx, fragmented, fits)
        # HAMi may place pods before Karpenter counts the node initialized, and until then Karpenter sizes it by its
        # launch capacity, without the overlay's vGPUs (docs/headroom.md), and launches another for the
        # rest: the disagreement shows once Karpenter sees the node as it registered.
        wait(
            ctx,
            f"the {MULTI_GPU_TYPE} node initialized",
            lambda: all(
                initialized(claim)
                for claim in nodeclaims(ctx)
                if claim["metadata"]["labels"].get(names.NODEPOOL_LABEL) == multi_name
            ),
            on="karpenter",
        )
        fragmented["spec"]["replicas"] = FRAGMENT_PODS
        ctx.kubectl.apply([fragmented])
        seen = _watch_disagreement(ctx, team, {"fragmented": multi_name}, launches=False)["fragmented"]
        pods = app_pods(ctx, team, "fragmented")
        placement = placed_by_hami(ctx, bound(pods))
        free = _free_gpu_memory_mib(set(placement))
        figures["fragmentation"] = {
            **seen,
            "pods_placed": len(bound(pods)),
            "pods_pending": len(pods) - len(bound(pods)),
            "placement": placement,
            "free_gpu_memory": free,
        }
        if (
            seen["nodeclaims_launched"] != 1
            or len(pods) - len(bound(pods)) != FRAGMENT_PODS - fits
            or seen["alert_after_s"] is None
            or not free["largest_on_one_gpu_mib"] < FRAGMENT_MIB <= free["summed_mib"]
        ):
            raise ScenarioFailure(f"fragmentation did not show as expected: {figures['fragmentation']}")
        ctx.kubectl.delete([fragmented])
        ctx.kubectl.delete(overlays)
        ctx.kubectl.apply([rig_pool(ctx, multi_name)])
        all_consolidated(ctx)

        ctx.kubectl.apply([fragmented])
        seconds = wait(
            ctx,
            f"{FRAGMENT_PODS} pods placed by HAMi on the one-GPU pool",
            lambda: len(bound(app_pods(ctx, team, "fragmented"))) == FRAGMENT_PODS,
            240,
        )
        one_gpu = placed_by_hami(ctx, bound(app_pods(ctx, team, "fragmented")))
        figures["one_gpu_pool"] = {"seconds": round(seconds, 1), "nodes": nodes_by_type(ctx), "placement": one_gpu}
    finally:
        ctx.kubectl.delete([more_vgpus, over_one_gpu, fragmented])
        ctx.kubectl.delete(overlays)
        ctx.kubectl.apply([rig_pool(ctx, multi_name), binding])
    all_consolidated(ctx)
    unbounded, frag = figures["without_admission_bound"], figures["fragmentation"]
    free = frag["free_gpu_memory"]
    return Result(
        "karpenter-hami-disagree",
        True,
        f"without the admission bound: 2 vGPUs on one-GPU nodes -> {unbounded['more-vgpus']['nodeclaims_launched']} "
        f"NodeClaims launched in {DISAGREE_WATCH_S} s, 30000 MiB on 4 x {gpu_mib} MiB GPUs -> "
        f"{unbounded['over-one-gpu']['nodeclaims_launched']}, neither pod placed, {UNPLACED_ALERT} after "
        f"{unbounded['more-vgpus']['alert_after_s']}/{unbounded['over-one-gpu']['alert_after_s']} s; with it both "
        f"refused at admission; fragmentation on {MULTI_GPU_TYPE}: {frag['pods_placed']} of {FRAGMENT_PODS} "
        f"{FRAGMENT_MIB} MiB pods placed, {frag['pods_pending']} pending with no node launched (HAMi's metrics: "
        f"{free['summed_mib']:.0f} MiB free in sum, {free['largest_on_one_gpu_mib']:.0f} "
        f"on one GPU), {UNPLACED_ALERT} after {frag['alert_after_s']} s; on the one-GPU pool all {FRAGMENT_PODS} ran "
        f"({figures['one_gpu_pool']['nodes']})",
        figures,
        [
            f"pool {SEED_POLICY_POOL} rendered with instanceTypes [{MULTI_GPU_TYPE}] for parts 1-3; the team's "
            "per-GPU-limit binding removed for part 1 and restored"
        ],
    )


SCENARIOS = (
    Scenario(
        "seed-003-policies",
        seed_003_policies,
        (WIDE_TEAM,),
        shows=(
            "seed 003 with HAMi placing, on two 4-GPU nodes (the `g5-shared` pool rendered with `g5.12xlarge` for"
            " this scenario): four one-vGPU pods per node x GPU binpack/spread combination land as each policy "
            "means (binpack: one node, one GPU; spread: both nodes, a GPU per pod), read from each pod's own "
            "annotations; then pods without annotations in a team whose `schedulerPolicy` (spread/binpack) the "
            "admission policies set are placed by that policy"
        ),
    ),
    Scenario(
        "karpenter-hami-disagree",
        karpenter_hami_disagree,
        (WIDE_TEAM,),
        shows=(
            "every way the stack lets Karpenter's summed view of a node and HAMi's per-GPU placement disagree. "
            "Without the team's per-GPU admission bound (its binding removed for the part): a container asking 2 "
            "vGPUs on one-GPU nodes and one asking more memory than one GPU of a 4-GPU `g5.12xlarge` holds; "
            "Karpenter launches nodes for them, HAMi never places them, `HamiPodUnplaced` fires. With the bound "
            "both are refused at admission, naming the limit. Fragmentation, which no admission rule can see: on "
            "4-GPU nodes, pods that fit one per GPU; once Karpenter counts the node initialized (HAMi can place "
            "pods sooner, and Karpenter sizes a node coming up by its launch capacity), it counts room for more "
            "and launches nothing, the rest stay Pending, HAMi's own metrics show the memory free in sum but not "
            "on one GPU, and `HamiPodUnplaced` fires. The same pods on the stack's one-GPU pool all run (pool "
            "design)"
        ),
    ),
)
