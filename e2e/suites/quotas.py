"""Quotas and priorities: what a team's ResourceQuota refuses, and which tier preempts where."""

from __future__ import annotations

from typing import Any

from e2e.cluster.kubectl import KubectlError
from e2e.cluster.stack import Plan, for_rig
from e2e.cluster.tenants import renamed
from e2e.cluster.workloads import (
    PAUSE_IMAGE,
    Context,
    app_pods,
    event_count,
    events,
    get_pod,
    gpu_deployment,
    running,
    team_pool,
    variant,
)
from e2e.suites.base import Result, Scenario, ScenarioFailure, admits, all_consolidated, wait
from gpushare import names

SEED_TEAM = "inference"
WIDE_TEAM = "ml-research"


def quota_refuses(ctx: Context) -> Result:
    """A pod beyond the team's ResourceQuota is refused by the API server itself. It asks one vGPU more than
    the quota's requests.nvidia.com/gpu, one per container (the per-GPU limit allows a container no more vGPUs than
    a node of the team has GPUs) with small per-GPU requests, so only the quota can refuse it."""
    team = ctx.team(SEED_TEAM)
    [quota] = [q for q in ctx.plan.of_kind("ResourceQuota") if q["metadata"]["namespace"] == team]
    hard_vgpus = int(quota["spec"]["hard"][f"requests.{ctx.hami.resource_name}"])
    pool = team_pool(ctx, team)
    template = gpu_deployment(ctx, "over-quota", team, pool, 1, {"cores": 1, "mem_mib": 1})["spec"]["template"]
    [container] = template["spec"]["containers"]
    template["spec"]["containers"] = [{**container, "name": f"server-{i}"} for i in range(hard_vgpus + 1)]
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "over-quota", "namespace": team},
        "spec": template["spec"],
    }
    asked = f"{hard_vgpus + 1} vGPUs (quota {hard_vgpus})"
    try:
        ctx.kubectl.apply([pod])
    except KubectlError as error:
        if "exceeded quota" not in str(error):
            raise ScenarioFailure(f"refused, but not by the quota: {error}") from None
        return Result("quota", True, f"a pod asking {asked} refused: exceeded quota", {"quota_vgpus": hard_vgpus})
    ctx.kubectl.delete([pod])
    raise ScenarioFailure(f"a pod asking {asked} was admitted")


EXCLUSIVE_POOL = "rig-exclusive"


def _with_exclusive_pool(ctx: Context, pool: str) -> Plan:
    """The stack with a one-GPU exclusive pool `pool` (one g4dn.xlarge at most) that the scenario's teams list."""

    def edit(config: dict[str, Any]) -> None:
        config["gpushare:pools"].append(
            {
                "name": pool,
                "instanceTypes": ["g4dn.xlarge"],
                "capacityTypes": ["on-demand"],
                "maxGpus": 1,
                "sharing": "exclusive",
            }
        )
        for team in config["gpushare:teams"]:
            if ctx.tenant.owns(team["name"]):
                team["pools"].append(pool)

    return variant(ctx, "exclusive", edit)


def _policies_changed_by(plan: Plan, variant: Plan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The admission policies a variant renders differently (a team's own pools, its per-GPU bound), and the
    plan's versions of them to restore."""
    own = {p["metadata"]["name"]: p for p in plan.of_kind("ValidatingAdmissionPolicy")}
    changed = [p for p in variant.of_kind("ValidatingAdmissionPolicy") if own.get(p["metadata"]["name"]) != p]
    return changed, [own[p["metadata"]["name"]] for p in changed if p["metadata"]["name"] in own]


def _whole_gpu_pod(name: str, namespace: str, pool: str) -> dict[str, Any]:
    """A pod asking one whole GPU on an exclusive pool; `hami.io/webhook: ignore` keeps HAMi's webhook off it, as
    the README tells teams that mix pool kinds."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": {names.HAMI_WEBHOOK_IGNORE[0]: "ignore"}},
        "spec": {
            "nodeSelector": {names.POOL_LABEL: pool},
            "tolerations": [{"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": "NoSchedule"}],
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": PAUSE_IMAGE,
                    "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {names.GPU: "1"}},
                }
            ],
        },
    }


def priorities(ctx: Context) -> Result:
    """A critical team's pod arrives when the pool it shares with a batch team is full. On a HAMi pool
    kube-scheduler cannot preempt for it: HAMi's extender has no preempt verb and its resources are
    ignoredByScheduler, so the batch pods keep their GPUs and the critical pod waits (HAMi #1878). On an
    exclusive pool, where nvidia.com/gpu is the kubelet's own resource, the batch pod is preempted."""
    batch_team, critical_team = ctx.team(WIDE_TEAM), ctx.team(SEED_TEAM)
    exclusive_name = renamed(EXCLUSIVE_POOL, ctx.tenant.name)
    pool = team_pool(ctx, critical_team)
    [nodepool] = [p for p in ctx.plan.of_kind("NodePool") if p["metadata"]["name"] == pool]
    limit = int(nodepool["spec"]["limits"][names.GPU])
    types = ctx.plan.pool_instance_types()[pool]
    smallest = min(types, key=lambda t: ctx.catalog.instance_type(t).on_demand_usd_per_hour)
    whole_gpu_mib = ctx.catalog.gpu_model_of(ctx.catalog.instance_type(smallest)).nvml_memory_mib
    # Each batch pod takes a whole GPU's memory on its own node: the pool's vGPU limit allows limit / split nodes.
    nodes = limit // ctx.hami.split_count
    batch = gpu_deployment(ctx, "batch-fill", batch_team, pool, nodes, {"cores": 100, "mem_mib": whole_gpu_mib})
    critical = gpu_deployment(ctx, "critical", critical_team, pool, 1, {"cores": 10, "mem_mib": 2048})
    exclusive = _with_exclusive_pool(ctx, exclusive_name)
    [exclusive_pool] = [
        for_rig(p, ctx.started) for p in exclusive.of_kind("NodePool") if p["metadata"]["name"] == exclusive_name
    ]
    widened, own = _policies_changed_by(ctx.plan, exclusive)
    figures: dict[str, Any] = {"hami_pool": pool, "batch_pods": nodes}
    try:
        ctx.kubectl.apply([batch])
        wait(
            ctx,
            f"{nodes} batch pods Running (the pool full)",
            lambda: len(running(app_pods(ctx, batch_team, "batch-fill"))) == nodes,
            300,
        )
        ctx.kubectl.apply([critical])
        # kube-scheduler looks for victims (PostFilter) in the very cycle that ends in FailedScheduling: two failed
        # cycles show it found none, with the pool at its limit.
        hold_s = wait(
            ctx,
            "HAMi's kube-scheduler failing the critical pod twice",
            lambda: event_count(ctx, critical_team, "critical", "FailedScheduling") >= 2,
            120,
            on="hami",
        )
        pending = [p for p in app_pods(ctx, critical_team, "critical") if p.get("status", {}).get("phase") != "Running"]
        survivors = len(running(app_pods(ctx, batch_team, "batch-fill")))
        [critical_pod] = app_pods(ctx, critical_team, "critical")
        figures["hami"] = {
            "critical_priority": critical_pod["spec"].get("priority"),
            "critical_pending_after_s": hold_s if pending else 0,
            "batch_pods_running": survivors,
            "nominated_node": critical_pod.get("status", {}).get("nominatedNodeName"),
            "events": events(ctx, critical_team, about="critical")[-3:],
        }
        if not pending or survivors != nodes:
            raise ScenarioFailure(f"on HAMi pool {pool} the critical pod ran or a batch pod went: {figures['hami']}")
        ctx.kubectl.delete([critical, batch])
        all_consolidated(ctx, 300)
        ctx.kubectl.apply([exclusive_pool, *widened])
        low = _whole_gpu_pod("batch-whole-gpu", batch_team, exclusive_name)
        high = _whole_gpu_pod("critical-whole-gpu", critical_team, exclusive_name)
        wait(
            ctx,
            "the teams' policies admitting the exclusive pool",
            lambda: admits(ctx, low) and admits(ctx, high),
            60,
            on="api",
        )
        ctx.kubectl.apply([low])
        wait(
            ctx,
            "the batch pod Running on the exclusive pool",
            lambda: get_pod(ctx, batch_team, low["metadata"]["name"]).get("status", {}).get("phase") == "Running",
        )
        ctx.kubectl.apply([high])
        seconds = wait(
            ctx,
            "the critical pod Running on the exclusive pool",
            lambda: get_pod(ctx, critical_team, high["metadata"]["name"]).get("status", {}).get("phase") == "Running",
        )
        gone = [e for e in events(ctx, batch_team, about="batch-whole-gpu") if e.startswith("Preempted")]
        figures["exclusive"] = {"critical_running_after_s": round(seconds, 1), "batch_events": gone}
        if not gone:
            raise ScenarioFailure(f"the critical pod runs on {exclusive_name} but the batch pod was not preempted")
    finally:
        ctx.kubectl.delete([critical, batch])
        ctx.kubectl.delete(
            [
                _whole_gpu_pod("batch-whole-gpu", batch_team, exclusive_name),
                _whole_gpu_pod("critical-whole-gpu", critical_team, exclusive_name),
            ]
        )
        ctx.kubectl.delete([exclusive_pool])
        ctx.kubectl.apply(own)
    all_consolidated(ctx, 300)
    return Result(
        "priorities",
        True,
        f"HAMi pool {pool} full of {nodes} batch pods: the critical pod (priority "
        f"{figures['hami']['critical_priority']}) stays Pending ({hold_s:.0f} s, two scheduling cycles), no batch pod "
        "preempted (no preempt verb in "
        "HAMi's extender); exclusive pool: the batch pod is preempted and the critical pod runs after "
        f"{figures['exclusive']['critical_running_after_s']} s",
        figures,
    )


SCENARIOS = (
    Scenario("quota", quota_refuses, (SEED_TEAM,)),
    Scenario("priorities", priorities, (WIDE_TEAM, SEED_TEAM)),
)
