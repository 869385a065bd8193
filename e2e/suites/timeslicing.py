"""Time-slicing: pods sharing one GPU as NVIDIA device plugin replicas, never handed to HAMi."""

from __future__ import annotations

import json
from typing import Any

from e2e.cluster.kubectl import KubectlError
from e2e.cluster.workloads import (
    DEFAULT_SCHEDULER,
    Context,
    admitted,
    app_pods,
    gpu_deployment,
    nodeclaims,
    running,
    team_pools,
)
from e2e.suites.base import (
    Result,
    Scenario,
    ScenarioFailure,
    remove_and_wait_empty,
    wait,
)
from gpushare import names

WIDE_TEAM = "ml-research"


def _timeslice_pool(ctx: Context, team: str) -> dict[str, Any]:
    listed = team_pools(ctx, team)
    pools = [
        p
        for p in ctx.plan.of_kind("NodePool")
        if p["metadata"]["name"] in listed
        and p["spec"]["template"]["metadata"]["labels"].get(names.SHARING_LABEL) == names.SHARING_TIMESLICE
    ]
    if not pools:
        raise ScenarioFailure(f"team {team} has no time-sliced pool")
    return pools[0]


def time_slicing(ctx: Context) -> Result:
    """Pods asking one time-sliced replica: Karpenter launches a 1-GPU node that registers `replicas` of them (the
    NVIDIA plugin's time-slicing config, not the overlay), packs that many pods on it, and one more pod takes a
    second node."""
    team = ctx.team(WIDE_TEAM)
    pool = _timeslice_pool(ctx, team)
    pool_name = pool["metadata"]["name"]
    labels = pool["spec"]["template"]["metadata"]["labels"]
    if ctx.agent.nvidia is None:
        raise ScenarioFailure(f"{ctx.stack} has a time-sliced pool but no {names.NVIDIA_PLUGIN_RELEASE} release")
    replicas = ctx.agent.nvidia.register(labels, 1).get(names.GPU_SHARED, 0)
    if replicas < 2:
        raise ScenarioFailure(f"the NVIDIA plugin config of pool {pool_name} registers {replicas} {names.GPU_SHARED}")
    deployment = gpu_deployment(ctx, "notebook", team, pool_name, replicas, {}, shared=True)
    greedy = json.loads(json.dumps(deployment["spec"]["template"]["spec"]))
    greedy["containers"][0]["resources"]["limits"][names.GPU_SHARED] = "2"
    try:
        admitted(
            ctx, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "greedy", "namespace": team}, "spec": greedy}
        )
    except KubectlError as error:
        refusal = str(error).splitlines()[-1]
    else:
        raise ScenarioFailure(f"a pod asking 2 {names.GPU_SHARED} was admitted; one replica per container is the limit")
    ctx.kubectl.apply([deployment])
    seconds = wait(
        ctx, f"{replicas} notebook pods Running", lambda: len(running(app_pods(ctx, team, "notebook"))) == replicas
    )
    nodes = [n for n in ctx.api.items("/api/v1/nodes") if n["metadata"]["labels"].get(names.POOL_LABEL) == pool_name]
    hosts = {pod["spec"]["nodeName"] for pod in running(app_pods(ctx, team, "notebook"))}
    schedulers = {pod["spec"].get("schedulerName") for pod in app_pods(ctx, team, "notebook")}
    if schedulers != {DEFAULT_SCHEDULER}:
        raise ScenarioFailure(f"time-sliced pods went to {schedulers}; HAMi's webhook must leave them to the default")
    if len(nodes) != 1 or len(hosts) != 1:
        raise ScenarioFailure(f"{replicas} pods on {len(hosts)} of {len(nodes)} nodes; expected one node for all")
    node = nodes[0]
    itype = ctx.catalog.instance_type(node["metadata"]["labels"][names.INSTANCE_TYPE_LABEL])
    allocatable = node["status"]["allocatable"]
    if (
        itype.gpu_count != 1
        or allocatable.get(names.GPU_SHARED) != str(replicas)
        or allocatable.get(names.GPU, "0") != "0"
    ):
        raise ScenarioFailure(
            f"node {itype.name} ({itype.gpu_count} GPU) allocatable {names.GPU_SHARED}="
            f"{allocatable.get(names.GPU_SHARED)}, {names.GPU}={allocatable.get(names.GPU)}; expected a 1-GPU node "
            f"with {replicas} replicas and no whole GPU"
        )
    [quota] = ctx.api.items(f"/api/v1/namespaces/{team}/resourcequotas")
    counted = quota["status"].get("used", {}).get(f"requests.{names.GPU_SHARED}")
    if counted != str(replicas):
        raise ScenarioFailure(f"ResourceQuota {team} counts requests.{names.GPU_SHARED}={counted}, not {replicas}")
    deployment["spec"]["replicas"] = replicas + 1
    ctx.kubectl.apply([deployment])
    wait(
        ctx,
        f"{replicas + 1} notebook pods Running",
        lambda: len(running(app_pods(ctx, team, "notebook"))) == replicas + 1,
    )
    claims = [c for c in nodeclaims(ctx) if c["metadata"]["labels"].get(names.NODEPOOL_LABEL) == pool_name]
    if len(claims) != 2:
        raise ScenarioFailure(f"pod {replicas + 1} made {len(claims)} NodeClaims in {pool_name}; expected 2")
    figures = {
        "pool": pool_name,
        "replicas_per_gpu": replicas,
        "instance_type": itype.name,
        "seconds_to_running": round(seconds, 1),
        "usd_per_pod_hour": round(itype.on_demand_usd_per_hour / replicas, 3),
        "refusal": refusal,
    }
    consolidated = remove_and_wait_empty(ctx, deployment)
    figures["seconds_to_consolidated"] = round(consolidated, 1)
    return Result(
        "time-slicing",
        True,
        f"{replicas} pods share one {itype.name} GPU ({names.GPU_SHARED}={replicas}, quota counts them, "
        f"${figures['usd_per_pod_hour']}/pod-h); pod {replicas + 1} takes a second node; a pod asking 2 replicas "
        f"refused at admission; never handed to HAMi's scheduler; consolidated {consolidated:.0f} s after scale-down",
        figures,
        ["the NVIDIA device plugin is played by the rig's node agent from the release's time-slicing config"],
    )


SCENARIOS = (
    Scenario(
        "time-slicing",
        time_slicing,
        (WIDE_TEAM,),
        shows=(
            "four pods asking one `nvidia.com/gpu.shared` each: Karpenter launches one 1-GPU node of the "
            "time-sliced pool, which registers 4 replicas (the NVIDIA plugin's time-slicing config, not the "
            "overlay) and no whole GPU; all four run on it, never handed to HAMi's scheduler; the quota counts "
            "`requests.nvidia.com/gpu.shared`; a fifth pod takes a second node; a pod asking 2 replicas is "
            "refused by the team's per-GPU policy; all consolidated after scale-down"
        ),
    ),
)
