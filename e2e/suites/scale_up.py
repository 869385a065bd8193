"""Scale-up: Karpenter launching nodes for vGPU pods that HAMi places, pool limits, and the examples."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from e2e.cluster import prometheus
from e2e.cluster.workloads import (
    DEFAULT_SCHEDULER,
    Context,
    app_pods,
    bound,
    events,
    gpu_deployment,
    initialized,
    nodeclaims,
    nodes_by_type,
    rig_pool,
    running,
    team_pool,
    usd_per_hour,
)
from e2e.suites.base import (
    Result,
    Scenario,
    ScenarioFailure,
    all_consolidated,
    placed_by_hami,
    remove_and_wait_empty,
    wait,
)
from e2e.suites.monitoring import active_alerts_about, hold_past_alert_threshold
from gpushare import names
from gpushare.paths import PROJECT_ROOT

SEED_TEAM = "inference"
WIDE_TEAM = "ml-research"
EXAMPLES_TIMEOUT_S = 360
# Two rule evaluations and a scrape past the series going away, with room for a loaded rig.
ALERTS_RESOLVE_S = 90
# What the rig names HAMi's scheduler's log (e2e/cluster/rig.py), and how client-go words a wait on its limiter
# (k8s.io/client-go rest/request.go: 'Waited before sending request" delay="63.4ms" ... client-side throttling' for
# a wait over 50 ms, "Waited for 1.39s due to client-side throttling" for one over a second).
HAMI_SCHEDULER_LOG = "hami-scheduler.log"
THROTTLED_WAIT = re.compile(r'(?:delay="|Waited for )([0-9.]+)(ms|s|µs)\b.*client-side throttling')
# client-go's own line between a short wait on the limiter and a long one (extraLongThrottleLatency): bursts wait a
# few hundred milliseconds even at kube-scheduler's rate; at client-go's default 5 a second HAMi waited 1.4-1.6 s.
LONG_THROTTLE_S = 1.0
SECONDS_PER_UNIT = {"s": 1.0, "ms": 1e-3, "µs": 1e-6}


def seed_scale_up(ctx: Context) -> Result:
    """gpu-inference (1 vGPU, 50 gpucores, 4096 MiB) to 3 replicas: a node, pods Running, quota counting."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    deployment = gpu_deployment(ctx, "gpu-inference", team, pool, 3, {"cores": 50, "mem_mib": 4096})
    ctx.kubectl.apply([deployment])
    seconds = wait(
        ctx,
        "3 gpu-inference pods Running, placed by HAMi",
        lambda: len(bound(app_pods(ctx, team, "gpu-inference"))) == 3,
    )
    # Karpenter may still be bringing up a claim it launched while the pods were pending: every claim must
    # initialize (the device plugins register), not only the ones the pods landed on.
    wait(
        ctx,
        "every NodeClaim Initialized",
        lambda: all(initialized(c) for c in nodeclaims(ctx)),
        60,
    )
    claims = nodeclaims(ctx)
    by_type = nodes_by_type(ctx)
    placement = placed_by_hami(ctx, bound(app_pods(ctx, team, "gpu-inference")))
    [quota] = ctx.api.items(f"/api/v1/namespaces/{team}/resourcequotas")
    used = quota["status"].get("used", {})
    expected = {
        f"requests.{ctx.hami.resource_name}": "3",
        f"requests.{ctx.hami.resource_cores}": "150",
        f"requests.{ctx.hami.resource_mem}": str(3 * 4096),
    }
    wrong = {key: used.get(key) for key, value in expected.items() if used.get(key) != value}
    if wrong:
        raise ScenarioFailure(f"ResourceQuota {team} used {wrong}, expected {expected}")
    # HAMi's own metrics, scraped as the stack's ServiceMonitor reaches them, count what it allocated (bytes).
    nodes = "|".join(placement)
    allocated = f'sum(hami_gpu_memory_allocated_bytes{{node=~"{nodes}"}}) / 1048576'
    wait(
        ctx,
        f"HAMi's metrics showing {3 * 4096} MiB allocated",
        lambda: any(float(r["value"][1]) == 3 * 4096 for r in prometheus.query(allocated)),
        60,
        on="alerts",
    )
    # Healthy nodes must not trip the NodeClaim alert: hold them past its (rig) threshold, then look.
    silent_s = hold_past_alert_threshold(ctx, claims)
    # A healthy cluster running GPU pods: no alert of the stack about them, nor about the whole stack, may be pending
    # or firing (GpuNodeClaimNotInitialized for initialized claims, HamiSchedulerDown while HAMi is scraped,
    # HamiPodUnplaced for placed pods...).
    # An alert that fired while the pods came up (HamiPodUnplaced's one-minute rig threshold, passed when three
    # other scenarios load the rig's two CPUs) must resolve once they run; one that stays is a defect.
    pods = {p["metadata"]["name"] for p in app_pods(ctx, team, "gpu-inference")}
    subjects = {team, *pods, *(c["metadata"]["name"] for c in claims), *placement}
    resolved = active_alerts_about(subjects)
    try:
        wait(
            ctx,
            "the stack's alerts about a healthy cluster resolved",
            lambda: not active_alerts_about(subjects),
            ALERTS_RESOLVE_S,
            on="alerts",
        )
    except ScenarioFailure:
        raise ScenarioFailure(
            f"alerts active on a healthy cluster: {', '.join(active_alerts_about(subjects))}"
        ) from None
    figures = {
        "pool": pool,
        "seconds_to_running": round(seconds, 1),
        "nodes_by_type": by_type,
        "usd_per_hour": usd_per_hour(ctx, by_type),
        "quota_used": {key: used[key] for key in expected},
        "alert_silent_for_s": silent_s,
        "alerts_active_then_resolved": resolved,
        "hami_placement": placement,
    }
    consolidated = remove_and_wait_empty(ctx, deployment, sum(by_type.values()))
    figures["seconds_to_consolidated"] = round(consolidated, 1)
    return Result(
        "seed-scale-up",
        True,
        f"3 pods Running in {seconds:.0f} s on {by_type} (${figures['usd_per_hour']}/h), placed by HAMi on "
        f"{sum(map(len, placement.values()))} vGPUs of {len(placement)} nodes (HAMi's metrics count them), quota "
        "counts them, no alert of the stack active; "
        f"consolidated {consolidated:.0f} s after scale-down",
        figures,
        ["consolidateAfter shortened to the rig's value for observability (the stack says otherwise)"],
    )


def several_nodes(ctx: Context, replicas: int) -> Result:
    """Enough replicas for several GPU nodes: how many of which type Karpenter launches, at what price."""
    team = ctx.team(WIDE_TEAM)
    pool = team_pool(ctx, team)
    # cpu 6 keeps a node type from holding them all, so the pool grows by several nodes.
    deployment = gpu_deployment(ctx, "gpu-batch", team, pool, replicas, {"cores": 25, "mem_mib": 4096}, cpu="6")
    ctx.kubectl.apply([deployment])
    seconds = wait(
        ctx, f"{replicas} gpu-batch pods Running", lambda: len(running(app_pods(ctx, team, "gpu-batch"))) == replicas
    )
    by_type = nodes_by_type(ctx)
    vgpu_cores = sum(
        int(node["status"]["allocatable"].get(ctx.hami.resource_cores, "0"))
        for node in ctx.api.items("/api/v1/nodes")
        if node["metadata"].get("labels", {}).get(names.POOL_LABEL) == pool
    )
    cheapest = _cheapest_single_type(ctx, pool, replicas, cpu_millis=6000, cores=25)
    figures = {
        "pool": pool,
        "replicas": replicas,
        "cheapest_single_type": cheapest,
        "seconds_to_running": round(seconds, 1),
        "nodes_by_type": by_type,
        "usd_per_hour": usd_per_hour(ctx, by_type),
        "gpucores_registered": vgpu_cores,
        "gpucores_requested": 25 * replicas,
    }
    consolidated = remove_and_wait_empty(ctx, deployment, sum(by_type.values()))
    figures["seconds_to_consolidated"] = round(consolidated, 1)
    return Result(
        "several-nodes",
        True,
        f"{replicas} pods Running in {seconds:.0f} s on {sum(by_type.values())} nodes {by_type} "
        f"(${figures['usd_per_hour']}/h, {25 * replicas}/{vgpu_cores} gpucores used; one type at best: "
        f"{cheapest['nodes']} x {cheapest['type']} ${cheapest['usd_per_hour']}/h)",
        figures,
    )


def _cheapest_single_type(ctx: Context, pool: str, replicas: int, cpu_millis: int, cores: int) -> dict[str, Any]:
    """The cheapest way to hold the pods on nodes of one pool type (kwok reserves 100m CPU per node)."""
    options = []
    for name in ctx.plan.pool_instance_types()[pool]:
        itype = ctx.catalog.instance_type(name)
        per_node = min((itype.vcpu * 1000 - 100) // cpu_millis, itype.gpu_count * 100 // cores)
        if per_node:
            nodes = -(-replicas // per_node)
            options.append((round(nodes * itype.on_demand_usd_per_hour, 3), nodes, name))
    usd, nodes, name = min(options)
    return {"type": name, "nodes": nodes, "usd_per_hour": usd}


def cpu_limit_blocks_second_node(ctx: Context) -> Result:
    """A `cpu: 10` NodePool limit: one node fits, the second is refused."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    nodepool = rig_pool(ctx, pool)
    limited = {**nodepool, "spec": {**nodepool["spec"], "limits": {**nodepool["spec"].get("limits", {}), "cpu": "10"}}}
    # cpu 5 fits only types with 8 or more vCPUs; two such nodes exceed 10.
    deployment = gpu_deployment(ctx, "cpu-limited", team, pool, 2, {"cores": 50, "mem_mib": 4096}, cpu="5")
    needle = "all available instance types exceed limits for nodepool"
    try:
        ctx.kubectl.apply([limited])
        ctx.kubectl.apply([deployment])
        seconds = wait(ctx, f"a Karpenter event '{needle}'", lambda: any(needle in e for e in events(ctx, team)))
        wait(ctx, "one pod Running", lambda: len(running(app_pods(ctx, team, "cpu-limited"))) == 1)
        by_type = nodes_by_type(ctx)
    finally:
        ctx.kubectl.delete([deployment])
        ctx.kubectl.apply([nodepool])
    all_consolidated(ctx)
    return Result(
        "cpu-limit",
        True,
        f"limit cpu=10: first node {by_type}, second refused ('{needle}') after {seconds:.0f} s",
        {"nodes_by_type": by_type, "seconds_to_event": round(seconds, 1)},
    )


def _asks(pod: dict[str, Any], resources: tuple[str, ...]) -> bool:
    """Whether a container of the pod asks one of `resources` (HAMi's webhook looks at limits and requests)."""
    return any(
        name in resources
        for container in pod["spec"]["containers"]
        for side in ("limits", "requests")
        for name in container.get("resources", {}).get(side, {})
    )


def _pods_of(ctx: Context, workload: dict[str, Any]) -> list[dict[str, Any]]:
    """A Deployment's pods by its selector, a Job's by the label the Job controller sets."""
    if workload["kind"] == "Job":
        labels = {"batch.kubernetes.io/job-name": workload["metadata"]["name"]}
    else:
        labels = workload["spec"]["selector"]["matchLabels"]
    selector = ",".join(f"{key}%3D{value}" for key, value in labels.items())
    return ctx.api.items(f"/api/v1/namespaces/{workload['metadata']['namespace']}/pods?labelSelector={selector}")


def _ran(ctx: Context, workload: dict[str, Any]) -> int:
    """Pods of the workload that run or ran to completion (KWOK completes a Job's pods as soon as they run)."""
    return len([p for p in _pods_of(ctx, workload) if p.get("status", {}).get("phase") in ("Running", "Succeeded")])


def _on_tenant(ctx: Context, workload: dict[str, Any]) -> dict[str, Any]:
    """An example as it runs on the scenario's copies of the stack's teams and pools: its namespace and the pool
    its pods select renamed, nothing else."""
    workload["metadata"]["namespace"] = ctx.team(workload["metadata"]["namespace"])
    selector = workload["spec"]["template"]["spec"].get("nodeSelector", {})
    if names.POOL_LABEL in selector:
        selector[names.POOL_LABEL] = ctx.pool(selector[names.POOL_LABEL])
    return workload


def hami_throttled(log: Path) -> tuple[int, float]:
    """How often HAMi's scheduler has waited on its client's rate limiter so far, and its longest wait in seconds."""
    waits = []
    with log.open(errors="replace") as lines:
        for line in lines:
            found = THROTTLED_WAIT.search(line)
            if found:
                waits.append(float(found[1]) * SECONDS_PER_UNIT[found[2]])
    return len(waits), max(waits, default=0.0)


def examples_run(ctx: Context, examples: list[Path]) -> Result:
    """Every workload under examples/ at once on the running dev stack (its teams' copies): admitted by the team
    policies, within the quotas, every pod Running (a Job: all its completions) on nodes Karpenter launched, HAMi's
    scheduler never waiting a second or more on its own client's rate limit (the busiest burst of the run, beside
    the scenarios running with it); then all consolidated away."""
    workloads = {
        (w["metadata"]["namespace"], w["metadata"]["name"]): w
        for p in examples
        for w in (_on_tenant(ctx, w) for w in yaml.safe_load_all(p.read_text()))
    }
    ctx.kubectl.apply(list(workloads.values()))
    expected = {key: w["spec"].get("replicas", w["spec"].get("completions", 1)) for key, w in workloads.items()}
    pods = sum(expected.values())
    try:
        # HAMi binds one pod per node at a time (its node lock), for every scenario running beside this one.
        seconds = wait(
            ctx,
            f"{pods} example pods run",
            lambda: all(_ran(ctx, w) >= expected[key] for key, w in workloads.items()),
            EXAMPLES_TIMEOUT_S,
        )
    except ScenarioFailure as failure:
        short = {f"{ns}/{name}": f"{_ran(ctx, w)}/{expected[(ns, name)]}" for (ns, name), w in workloads.items()}
        raise ScenarioFailure(f"{failure}; ran/expected {short}") from None
    by_type = nodes_by_type(ctx)

    def running_now() -> list[dict[str, Any]]:
        return running([p for w in workloads.values() for p in _pods_of(ctx, w)])

    def hami_pods() -> list[dict[str, Any]]:
        return [p for p in running_now() if _asks(p, ctx.hami.resource_names)]

    def all_bound() -> bool:
        pods = hami_pods()
        return len(bound(pods)) == len(pods)

    wait(ctx, "HAMi's allocation complete for every running vGPU pod", all_bound, on="hami")
    vgpu_pods = hami_pods()
    placed_by_hami(ctx, vgpu_pods)
    elsewhere = {p["spec"].get("schedulerName") for p in running_now() if not _asks(p, ctx.hami.resource_names)}
    if elsewhere - {DEFAULT_SCHEDULER}:
        raise ScenarioFailure(f"pods asking no HAMi resource went to {elsewhere}")
    throttled, longest_s = hami_throttled(ctx.log_dir / HAMI_SCHEDULER_LOG)
    if longest_s >= LONG_THROTTLE_S:
        raise ScenarioFailure(
            f"HAMi's scheduler waited up to {longest_s:.2f} s on its own client's rate limit ({throttled} waits in "
            "its log): the stack's --kube-qps/--kube-burst are not in force"
        )
    ctx.kubectl.delete(list(workloads.values()))
    consolidated = all_consolidated(ctx, 300)
    return Result(
        "examples",
        True,
        f"{len(workloads)} example workloads ({pods} pods) ran in {seconds:.0f} s on {by_type} "
        f"(${usd_per_hour(ctx, by_type)}/h), the {len(vgpu_pods)} running vGPU pods placed by HAMi, the others by "
        f"the default scheduler, HAMi's longest wait on its own client's rate limit {longest_s:.2f} s ({throttled} "
        f"waits); consolidated {consolidated:.0f} s after deletion",
        {
            "pods": pods,
            "hami_pods_running": len(vgpu_pods),
            "nodes_by_type": by_type,
            "seconds_to_running": round(seconds, 1),
            "hami_client_throttled": {"waits": throttled, "longest_s": round(longest_s, 3)},
        },
    )


SCENARIOS = (
    Scenario(
        "seed-scale-up",
        seed_scale_up,
        (SEED_TEAM,),
        shows=(
            "the seed's `gpu-inference` Deployment (1 vGPU, 50 gpucores, 4096 MiB) scaled to 3: Karpenter "
            "launches nodes of the team's pool, they initialize once the device plugins register, HAMi's webhook "
            "hands the pods to HAMi's scheduler, which places each on a GPU (its node lock released by the device"
            " plugin's Allocate), the team's ResourceQuota and HAMi's own metrics count them, no alert of the "
            "stack about them stays pending or firing past its threshold (one that fired while they came up, on a"
            " loaded rig, must resolve within 90 s); after scale-down the nodes are consolidated away"
        ),
    ),
    Scenario(
        "several-nodes",
        lambda ctx: several_nodes(ctx, 12),
        (WIDE_TEAM,),
        shows=(
            "12 pods that need several nodes: which nodes Karpenter picks and what they cost, against the "
            "cheapest single-type packing"
        ),
    ),
    Scenario(
        "cpu-limit",
        cpu_limit_blocks_second_node,
        (SEED_TEAM,),
        shows=(
            "a `cpu: 10` NodePool limit lets one 8-vCPU node in and refuses the second (`all available instance "
            "types exceed limits for nodepool`)"
        ),
    ),
    Scenario(
        "examples",
        lambda ctx: examples_run(ctx, sorted((PROJECT_ROOT / "examples").glob("*.yaml"))),
        (WIDE_TEAM, SEED_TEAM),
        shows=(
            "every workload under `examples/` applied at once to the dev teams (the scenario's copies: namespace "
            "and pool renamed, nothing else): admitted by the team policies, within the quotas, every pod running"
            " (the Job's completions done) on nodes Karpenter launched, every vGPU pod placed by HAMi and every "
            "other pod by the default scheduler, HAMi's scheduler never waiting a second or more on its own "
            "client's rate limit (its log's `client-side throttling` waits: at client-go's default rate they "
            "reached 1.4-1.6 s, at the stack's `--kube-qps`/`--kube-burst` under 0.2 s), then consolidated away"
        ),
    ),
)
