"""Faults (`make chaos`): HAMi's scheduler, Karpenter, a node's device plugins and the API server killed and
restarted, a GPU node lost under running pods, and a burst of pods; the invariant checker (e2e.cluster.invariants)
samples the cluster throughout, and each scenario reports how long the cluster took to recover.

docs/faults.md says what a user sees when each component fails.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from e2e.cluster import prometheus
from e2e.cluster.api import ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.invariants import SETTLE_S
from e2e.cluster.kwok_stages import COMPLETE_AFTER
from e2e.cluster.rig import GPU_NODE_PREFIX, Rig
from e2e.cluster.workloads import (
    PAUSE_IMAGE,
    Context,
    app_pods,
    bound,
    event_count,
    gpu_deployment,
    nodeclaims,
    team_pool,
    team_pools,
)
from e2e.suites.base import CONSOLIDATION_BOUND_S, Result, Scenario, ScenarioFailure, placed_by_hami, settle, wait
from gpushare import names

SEED_TEAM = "inference"
WIDE_TEAM = "ml-research"
SCHEDULER_DOWN_ALERT = "HamiSchedulerDown"
KARPENTER_DOWN_ALERT = "KarpenterDown"
# The node lock HAMi's scheduler takes to bind a pod and its device plugin releases in Allocate (pkg/util/nodelock).
HAMI_NODE_LOCK = "hami.io/mutex.lock"
# The rig renders the component-down alert with componentDownMinutes: 1 (e2e.cluster.prometheus): it fires a minute
# after HAMi's scheduler stops answering its scrape, plus a scrape and an evaluation (5 s each), on a loaded rig.
ALERT_FIRES_S = 150
ALERT_RESOLVES_S = 90
# How long the cluster may take to converge after a fault: every check of the invariant checker clean, lag included,
# so as long as the slowest lag may last (the ResourceQuota's count, until its controller's resync) and a margin.
CONVERGED_S = max(SETTLE_S.values()) + 30
# The shape of the fault scenarios' vGPU pods: four to a GPU by cores, small enough for any pool's GPU.
SMALL_VGPU = {"cores": 25, "mem_mib": 2048}
# How long a node's plugins stay dead with new pods wanting it: HAMi's 15 s re-read, a placement, an admission.
DEAD_PLUGIN_HOLD_S = 25
BURST_PODS = 300
BURST_VGPU = {"cores": 10, "mem_mib": 1024}
BURST_CREATORS = 8
BURST_RETRIES = 5
BURST_TIMEOUT_S = 300
# How long pods no instance type holds wait beside running ones while the NodeClaims are watched, beside the other
# faults: minutes, as Karpenter's own runaway scale-up check (aws/karpenter-provider-aws test/suites/chaos holds 5).
RUNAWAY_WATCH_S = 180
# What Karpenter's FailedScheduling event on a pod says when no instance type of its pools holds the request.
KARPENTER_NO_TYPE = "no instance type has enough resources"
# How long kube-apiserver stays down: past the 10 s renew deadline of the leader lease HAMi's kube-scheduler holds
# (kube-scheduler's defaults, which the chart keeps), so the lease is lost on a fast machine as on a slow one.
API_DOWN_S = 20
# The rig's processes that run as a Deployment's Pod in a cluster: one that exits is started again, as its kubelet
# restarts a container that exits (restartPolicy: Always). Any other process exiting is the rig's fault or a bug.
POD_PROCESSES = ("hami-scheduler", "hami-kube-scheduler", "karpenter", "prometheus")


def _rig(ctx: Context) -> Rig:
    if ctx.rig is None:
        raise RigError("the fault scenarios need the rig's processes")
    return ctx.rig


def _running_again(rig: Rig, name: str) -> None:
    """After a scenario that killed `name`, whatever happened: the process runs again, so a failed scenario does not
    leave the next ones without it."""
    if not rig.alive(name):
        rig.restart(name)


def _restoring(processes: tuple[str, ...], run: Callable[[Context], Result]) -> Callable[[Context], Result]:
    """`run`, then the rig processes it kills running again whether it passed or not."""

    def restoring(ctx: Context) -> Result:
        try:
            return run(ctx)
        finally:
            for name in processes:
                _running_again(_rig(ctx), name)

    return restoring


def _converged(ctx: Context, what: str) -> float:
    """Seconds until the invariant checker's last sample found nothing at all, lag included."""
    checker = ctx.invariants
    if checker is None:
        return 0.0
    try:
        return wait(ctx, f"every invariant holding again {what}", checker.clean, CONVERGED_S, on="api")
    except ScenarioFailure:
        raise ScenarioFailure(
            f"the cluster did not converge {what}: {'; '.join(f.message for f in checker.current())}"
        ) from None


def _checks(ctx: Context) -> int:
    return sum(ctx.invariants.tally.checks.values()) if ctx.invariants is not None else 0


def _bound_count(ctx: Context, team: str, app: str, count: int) -> bool:
    return len(bound(app_pods(ctx, team, app))) == count


def _wait_unlocked(ctx: Context, nodes: list[str]) -> None:
    """Until HAMi's node lock is off every node: the device plugin releases it after a pod's allocation, once, so a
    fault between the bind and that release leaves the node refusing HAMi's binds until the lock expires."""

    def unlocked() -> bool:
        return all(
            HAMI_NODE_LOCK not in ctx.api.get(f"/api/v1/nodes/{node}")["metadata"].get("annotations", {})
            for node in nodes
        )

    wait(ctx, f"HAMi's node lock on {', '.join(nodes)} released", unlocked, 60, on="hami")


def _scale(ctx: Context, namespace: str, name: str, replicas: int) -> None:
    ctx.api.merge_patch(f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}", {"spec": {"replicas": replicas}})


def _firing(name: str) -> bool:
    return any(alert.get("state") == "firing" for alert in prometheus.alerts(name))


def hami_scheduler_killed(ctx: Context) -> Result:
    """HAMi's scheduler SIGKILLed, then the Deployment scaled up: the pods created meanwhile skip HAMi's webhook
    (failurePolicy Ignore), but the team's admission policy has already handed them to HAMi's scheduler, so they
    wait; HamiSchedulerDown fires; after the restart HAMi rebuilds its view from the annotations and places them."""
    rig, team = _rig(ctx), ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    deployment = gpu_deployment(ctx, "during-hami-down", team, pool, 2, SMALL_VGPU)
    ctx.kubectl.apply([deployment])
    wait(ctx, "2 pods placed by HAMi", lambda: _bound_count(ctx, team, "during-hami-down", 2), on="hami")
    before = {p["metadata"]["uid"] for p in app_pods(ctx, team, "during-hami-down")}
    killed = time.monotonic()
    rig.kill("hami-scheduler")
    _scale(ctx, team, "during-hami-down", 6)
    wait(ctx, "6 pods created", lambda: len(app_pods(ctx, team, "during-hami-down")) == 6, 60, on="api")
    fired = wait(ctx, f"{SCHEDULER_DOWN_ALERT} firing", lambda: _firing(SCHEDULER_DOWN_ALERT), ALERT_FIRES_S, "alerts")
    fired_after = time.monotonic() - killed
    created = app_pods(ctx, team, "during-hami-down")
    routed = {p["spec"].get("schedulerName") for p in created}
    if routed != {ctx.hami.scheduler_name}:
        raise ScenarioFailure(f"pods created while HAMi was down went to schedulers {sorted(routed)}, not HAMi's only")
    # Only pods from before may run: the pool consolidates underused nodes (WhenEmptyOrUnderutilized), and Karpenter
    # may evict one of them meanwhile, its replacement waiting for HAMi like the new ones.
    ran_meanwhile = [p["metadata"]["name"] for p in bound(created) if p["metadata"]["uid"] not in before]
    if ran_meanwhile:
        raise ScenarioFailure(f"pods created while HAMi's scheduler was down ran: {ran_meanwhile}")
    kept = len([p for p in bound(created) if p["metadata"]["uid"] in before])
    down_s = time.monotonic() - killed
    restarted = time.monotonic()
    rig.restart("hami-scheduler")
    placed = wait(
        ctx, "all 6 pods placed by HAMi after its restart", lambda: _bound_count(ctx, team, "during-hami-down", 6)
    )
    placed_by_hami(ctx, bound(app_pods(ctx, team, "during-hami-down")))
    converged = _converged(ctx, "after HAMi's restart")
    resolved = wait(
        ctx, f"{SCHEDULER_DOWN_ALERT} resolved", lambda: not prometheus.alerts(SCHEDULER_DOWN_ALERT), ALERT_RESOLVES_S
    )
    recovery = time.monotonic() - restarted
    ctx.kubectl.delete([deployment])
    return Result(
        "hami-scheduler-killed",
        True,
        f"HAMi's scheduler down {down_s:.0f} s ({kept} of the 2 pods from before kept running): the pods created "
        "meanwhile were routed to it by the team's admission "
        f"policy and waited (none ran unplaced), {SCHEDULER_DOWN_ALERT} fired {fired_after:.0f} s after the kill; "
        f"after the restart all 6 placed in {placed:.0f} s, quotas and HAMi's charge equal to the pods after "
        f"{placed + converged:.0f} s, the alert resolved {resolved:.0f} s later ({recovery:.0f} s to recover)",
        {
            "down_s": round(down_s, 1),
            "running_from_before_while_down": kept,
            "alert_fired_after_kill_s": round(fired_after, 1),
            "alert_wait_s": round(fired, 1),
            "placed_after_restart_s": round(placed, 1),
            "recovery_s": round(recovery, 1),
        },
    )


def _never_fits(ctx: Context, team: str, pool: str) -> dict[str, Any]:
    """Two vGPU pods asking 1000 vCPUs, which no instance type of any pool holds."""
    return gpu_deployment(ctx, "never-fits", team, pool, 2, SMALL_VGPU, cpu="1000")


def _watch_claims(ctx: Context, seconds: float) -> tuple[set[str], int]:
    """The context's NodeClaims sampled every 3 s for `seconds`: every name seen, and the most at once."""
    seen: set[str] = set()
    most = 0
    watched_until = time.monotonic() + seconds
    while time.monotonic() < watched_until:
        claims = {claim["metadata"]["name"] for claim in nodeclaims(ctx)}
        seen |= claims
        most = max(most, len(claims))
        settle(ctx, 3)
    return seen, most


def _collect_orphan_nodes(ctx: Context) -> list[str]:
    """Delete the Karpenter nodes of the context's pools that no NodeClaim claims once every NodeClaim has its node,
    as the AWS provider's instance garbage collection terminates an instance no NodeClaim links to. Karpenter
    killed between the kwok provider's Create and persisting the launch launches that NodeClaim again on restart,
    leaving the first node behind; the kwok provider has no such collector (a rig deviation, in the result)."""

    def claimed() -> set[str] | None:
        nodes = [claim.get("status", {}).get("nodeName") for claim in nodeclaims(ctx)]
        return None if not all(nodes) else {str(node) for node in nodes}

    wait(ctx, "every NodeClaim registered to its node", lambda: claimed() is not None, 90, on="karpenter")
    owned = claimed()
    if not owned:
        return []
    orphans = [
        node["metadata"]["name"]
        for node in ctx.api.items("/api/v1/nodes")
        if ctx.owns(node["metadata"].get("labels", {}).get(names.NODEPOOL_LABEL, ""))
        and node["metadata"]["name"] not in owned
    ]
    for name in orphans:
        ctx.api.request("DELETE", f"/api/v1/nodes/{name}")
    return orphans


def _orphans_summary(orphans: list[str]) -> str:
    if not orphans:
        return ""
    return f"; the rig collected {', '.join(orphans)}, launched before the kill and left without its NodeClaim"


def karpenter_killed(ctx: Context) -> Result:
    """Karpenter SIGKILLed as it launches nodes for new pods, and restarted: the launch completes with no orphaned
    or duplicate NodeClaim; then with a pod no instance type can hold pending beside them, Karpenter (restarted once
    more) launches nothing more."""
    rig, team = _rig(ctx), ctx.team(WIDE_TEAM)
    pool = team_pool(ctx, team)
    # cpu 6: at most two pods a node, so the launch is several NodeClaims at once.
    deployment = gpu_deployment(ctx, "during-karpenter-down", team, pool, 3, SMALL_VGPU, cpu="6")
    ctx.kubectl.apply([deployment])
    wait(ctx, "Karpenter launching a NodeClaim", lambda: bool(nodeclaims(ctx)))
    killed = time.monotonic()
    rig.kill("karpenter")
    claims_at_kill = len(nodeclaims(ctx))
    # The stack's KarpenterDown (added for this fault: nothing else said Karpenter was gone until pods had waited
    # podPendingMinutes) holds from the first failed scrape: pending, firing after componentDownMinutes.
    noticed = wait(
        ctx, f"{KARPENTER_DOWN_ALERT} pending", lambda: bool(prometheus.alerts(KARPENTER_DOWN_ALERT)), 60, "alerts"
    )
    rig.restart("karpenter")
    wait(ctx, "Karpenter serving metrics again", prometheus.scraping_karpenter, 90, on="karpenter")
    placed = wait(ctx, "3 pods placed", lambda: _bound_count(ctx, team, "during-karpenter-down", 3))
    if orphans := _collect_orphan_nodes(ctx):
        placed = wait(ctx, "3 pods placed again", lambda: _bound_count(ctx, team, "during-karpenter-down", 3))
    converged = _converged(ctx, "after Karpenter's restart")
    recovery = time.monotonic() - killed
    wait(ctx, f"{KARPENTER_DOWN_ALERT} resolved", lambda: not prometheus.alerts(KARPENTER_DOWN_ALERT), 60, "alerts")
    launched = len(nodeclaims(ctx))
    if launched > 3:
        raise ScenarioFailure(f"{launched} NodeClaims for 3 pods that need at most one node each: a duplicate launch")
    never = _never_fits(ctx, team, pool)
    ctx.kubectl.apply([never])
    rig.kill("karpenter")
    rig.restart("karpenter")
    wait(ctx, "Karpenter serving metrics again", prometheus.scraping_karpenter, 90, on="karpenter")
    _, most = _watch_claims(ctx, CONSOLIDATION_BOUND_S)
    most = max(most, launched)
    if most > launched:
        raise ScenarioFailure(f"Karpenter launched {most - launched} NodeClaims for pods no instance type holds")
    ctx.kubectl.delete([deployment, never])
    return Result(
        "karpenter-killed",
        True,
        f"Karpenter killed with {claims_at_kill} NodeClaim(s) launching, {KARPENTER_DOWN_ALERT} pending "
        f"{noticed:.0f} s later, restarted then: 3 pods placed "
        f"{placed:.0f} s after the restart on {launched} NodeClaims (none orphaned or duplicated, converged "
        f"{converged:.0f} s later, {recovery:.0f} s from the kill{_orphans_summary(orphans)}); with 2 pods no type "
        "holds pending and Karpenter "
        f"restarted again, the NodeClaims stayed at {most} over {CONSOLIDATION_BOUND_S} s",
        {
            "claims_at_kill": claims_at_kill,
            "alert_pending_after_kill_s": round(noticed, 1),
            "claims_after": launched,
            "orphan_nodes_collected": orphans,
            "most_claims_with_unschedulable_pods": most,
            "recovery_s": round(recovery, 1),
        },
    )


def no_runaway(ctx: Context) -> Result:
    """Pods no instance type holds wait for minutes beside pods that run: Karpenter launches the node the second
    need and nothing for the first, however long they wait, and replaces no node meanwhile."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    runs = gpu_deployment(ctx, "beside-never-fits", team, pool, 2, SMALL_VGPU)
    never = _never_fits(ctx, team, pool)
    ctx.kubectl.apply([runs, never])
    wait(ctx, "2 pods placed", lambda: _bound_count(ctx, team, "beside-never-fits", 2), on="hami")
    launched = {claim["metadata"]["name"] for claim in nodeclaims(ctx)}
    seen, most = _watch_claims(ctx, RUNAWAY_WATCH_S)
    most = max(most, len(launched))
    if extra := sorted(seen - launched):
        raise ScenarioFailure(
            f"Karpenter launched {len(extra)} NodeClaim(s) while pods no instance type holds waited: {extra}"
        )
    if waited := bound(app_pods(ctx, team, "never-fits")):
        raise ScenarioFailure(f"{len(waited)} pod(s) asking 1000 vCPUs were placed, on {waited[0]['spec']['nodeName']}")
    if not event_count(ctx, team, "never-fits", "FailedScheduling", KARPENTER_NO_TYPE):
        raise ScenarioFailure(f"no FailedScheduling event from Karpenter on the pods saying {KARPENTER_NO_TYPE!r}")
    ctx.kubectl.delete([runs, never])
    return Result(
        "no-runaway",
        True,
        f"2 pods no instance type holds pending beside 2 that run: Karpenter launched {len(launched)} NodeClaim(s) "
        f"for the 2 and none more over {RUNAWAY_WATCH_S} s (at most {most} at once), its FailedScheduling event on "
        f"the others saying {KARPENTER_NO_TYPE!r}",
        {"claims": len(launched), "most_claims": most, "watched_s": RUNAWAY_WATCH_S},
    )


def _job(ctx: Context, name: str, namespace: str, pool: str, pods: int, vgpu: dict[str, int]) -> dict[str, Any]:
    """A Job whose pods run until deleted (KWOK completes them an hour after they last changed)."""
    [template] = [gpu_deployment(ctx, name, namespace, pool, pods, vgpu)["spec"]["template"]]
    template["metadata"]["annotations"] = {COMPLETE_AFTER: "1h"}
    template["spec"]["restartPolicy"] = "Never"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"parallelism": pods, "completions": pods, "backoffLimit": 10, "template": template},
    }


def _job_pods(ctx: Context, namespace: str, job: str) -> list[dict[str, Any]]:
    return ctx.api.items(f"/api/v1/namespaces/{namespace}/pods?labelSelector=batch.kubernetes.io%2Fjob-name%3D{job}")


def gpu_node_lost(ctx: Context) -> Result:
    """A GPU node holding a Deployment's and a Job's vGPU pods deleted, as a failed instance's node goes: the
    Deployment's pods come back elsewhere, the Job's start over, HAMi's allocations and the quotas free, and no pod
    is left on the node that is gone."""
    team = ctx.team(WIDE_TEAM)
    pool = team_pool(ctx, team)
    deployment = gpu_deployment(ctx, "on-lost-node", team, pool, 2, SMALL_VGPU)
    job = _job(ctx, "job-on-lost-node", team, pool, 2, SMALL_VGPU)
    ctx.kubectl.apply([deployment, job])

    def job_running() -> list[dict[str, Any]]:
        return bound(_job_pods(ctx, team, "job-on-lost-node"))

    wait(
        ctx,
        "2 Deployment and 2 Job pods placed",
        lambda: _bound_count(ctx, team, "on-lost-node", 2) and len(job_running()) == 2,
    )
    before = {
        p["metadata"]["uid"]: p["spec"]["nodeName"] for p in [*app_pods(ctx, team, "on-lost-node"), *job_running()]
    }
    lost = max(set(before.values()), key=list(before.values()).count)
    held = sum(1 for node in before.values() if node == lost)
    deleted = time.monotonic()
    ctx.api.request("DELETE", f"/api/v1/nodes/{lost}")

    def recovered() -> bool:
        pods = [*bound(app_pods(ctx, team, "on-lost-node")), *job_running()]
        return len(pods) == 4 and all(p["spec"]["nodeName"] != lost for p in pods)

    back = wait(ctx, f"4 pods placed again off {lost}", recovered)
    converged = _converged(ctx, f"after {lost} was lost")
    restarted = [p for p in job_running() if p["metadata"]["uid"] not in before]
    recovery = time.monotonic() - deleted
    ctx.kubectl.delete([deployment, job])
    return Result(
        "gpu-node-lost",
        True,
        f"node {lost} deleted under {held} of 4 vGPU pods: all 4 placed again elsewhere in {back:.0f} s "
        f"({len(restarted)} Job pods started over), HAMi's allocations and the quotas freed, no pod left on the gone "
        f"node, every invariant holding {recovery:.0f} s after the loss",
        {"pods_on_lost_node": held, "job_pods_restarted": len(restarted), "recovery_s": round(recovery, 1)},
        [f"converged {converged:.0f} s after the pods were placed again"],
    )


def _allocatable(ctx: Context, node: str) -> dict[str, str]:
    allocatable = ctx.api.get(f"/api/v1/nodes/{node}")["status"].get("allocatable", {})
    return {resource: allocatable.get(resource, "0") for resource in ctx.hami.resource_names}


def device_plugin_killed(ctx: Context) -> Result:
    """The device plugins of a node holding running vGPU pods killed (HAMi's device plugin and the mock, with the
    rig's kubelet stand-in that serves them), the node's HAMi resources made unallocatable as a kubelet makes them:
    the running pods keep running; HAMi 2.10 drops the node and re-adds it at its next read from the registration
    annotation nothing removed, so a new pod it places there waits, never started without an allocation; restarted,
    the plugins register the same capacity and every pod runs."""
    rig, team = _rig(ctx), ctx.team(WIDE_TEAM)
    pool = team_pool(ctx, team)
    deployment = gpu_deployment(ctx, "beside-dead-plugin", team, pool, 2, SMALL_VGPU)
    ctx.kubectl.apply([deployment])
    wait(ctx, "2 pods placed", lambda: _bound_count(ctx, team, "beside-dead-plugin", 2), on="hami")
    running = bound(app_pods(ctx, team, "beside-dead-plugin"))
    node = running[0]["spec"]["nodeName"]
    held = {p["metadata"]["uid"] for p in running if p["spec"]["nodeName"] == node}
    # Read once every plugin has registered: a node's capacity passes through zero while its kubelet stand-in starts
    # (a run read the mock's resources as 0 here and then compared the restarted node against that).
    wait(
        ctx,
        f"{node} registering every HAMi resource",
        lambda: all(value != "0" for value in _allocatable(ctx, node).values()),
        60,
        on="hami",
    )
    registered = _allocatable(ctx, node)

    # Killed between a pod's bind phase `success` and its node lock's release, the plugin would leave the node
    # locked for HAMi's nodeLockExpire (5 minutes) whatever comes back: the scenario kills a settled node.
    _wait_unlocked(ctx, [node])
    killed = time.monotonic()
    rig.kill(f"{GPU_NODE_PREFIX}{node}")
    try:
        return _while_plugins_dead(ctx, deployment, node, held, registered, killed)
    finally:
        _running_again(rig, f"{GPU_NODE_PREFIX}{node}")


def _while_plugins_dead(
    ctx: Context, deployment: dict[str, Any], node: str, held: set[str], registered: dict[str, str], killed: float
) -> Result:
    """device-plugin-killed from the kill on."""
    rig, team = _rig(ctx), deployment["metadata"]["namespace"]
    zero = dict.fromkeys(ctx.hami.resource_names, "0")
    ctx.api.merge_patch(f"/api/v1/nodes/{node}/status", {"status": {"allocatable": zero}})
    _scale(ctx, team, "beside-dead-plugin", 4)
    # Long enough for HAMi's 15 s re-read of the node, a placement and the kubelet's admission.
    settle(ctx, DEAD_PLUGIN_HOLD_S)
    pods = app_pods(ctx, team, "beside-dead-plugin")
    started_there = {p["metadata"]["uid"] for p in bound(pods) if p["spec"].get("nodeName") == node}
    kept = all(p.get("status", {}).get("phase") == "Running" for p in pods if p["metadata"]["uid"] in held)
    if started_there != held or not kept:
        raise ScenarioFailure(
            f"with its plugins dead, {node} ran {len(started_there)} pods with HAMi's allocation, expected the "
            f"{len(held)} it held (kept running: {kept})"
        )
    started = {p["metadata"]["uid"] for p in bound(pods)}
    waiting = [p["metadata"]["name"] for p in pods if p["metadata"]["uid"] not in started]
    restarted = time.monotonic()
    rig.restart(f"{GPU_NODE_PREFIX}{node}")
    again = wait(
        ctx, f"{node} registering {registered} again", lambda: _allocatable(ctx, node) == registered, 90, on="hami"
    )
    placed = wait(ctx, "all 4 pods placed and started", lambda: _bound_count(ctx, team, "beside-dead-plugin", 4))
    converged = _converged(ctx, f"after {node}'s plugins restarted")
    recovery = time.monotonic() - restarted
    ctx.kubectl.delete([deployment])
    return Result(
        "device-plugin-killed",
        True,
        f"the device plugins of {node} killed under {len(held)} running pod(s): they kept running; of the 2 new "
        f"pods {len(waiting)} waited (HAMi re-adds the node from its registration and places there; none started "
        f"without an allocation); restarted {restarted - killed:.0f} s after the kill, the node registered the same "
        f"{registered} in {again:.0f} s and all 4 pods ran {placed:.0f} s later ({recovery:.0f} s to recover)",
        {
            "registered": registered,
            "waiting_while_dead": len(waiting),
            "recovery_s": round(recovery, 1),
        },
        [f"converged {converged:.0f} s after all pods ran"],
    )


def _serving(ctx: Context, team: str) -> bool:
    """Whether the API server answers for every resource the scenario reads and changes."""
    paths = (
        f"/api/v1/namespaces/{team}/pods",
        f"/apis/apps/v1/namespaces/{team}/deployments",
        "/api/v1/nodes",
        "/apis/karpenter.sh/v1/nodeclaims",
        "/apis/karpenter.sh/v1/nodepools",
        "/apis/karpenter.sh/v1alpha1/nodeoverlays",
        "/api/v1/resourcequotas",
    )
    try:
        for path in paths:
            ctx.api.get(f"{path}?limit=1")
    except (ApiError, RigError):
        return False
    return True


def _node_deleted(ctx: Context, rig: Rig, name: str) -> bool:
    """Whether `name` is a GPU node's agent that ended cleanly because its Node was deleted: Karpenter consolidating
    an earlier scenario's empty node across the API server's restart, which is that agent's normal end."""
    if not name.startswith(GPU_NODE_PREFIX) or rig.exit_code(name) != 0:
        return False
    try:
        ctx.api.get(f"/api/v1/nodes/{name.removeprefix(GPU_NODE_PREFIX)}")
    except ApiError as error:
        return error.status == 404
    return False


def _exited_summary(exited: list[str]) -> str:
    if not exited:
        return "every controller kept running"
    verb = "was" if len(exited) == 1 else "were"
    return f"{', '.join(exited)} exited on a lost leader lease and {verb} started again, as a kubelet restarts them"


def api_server_restarted(ctx: Context) -> Result:
    """kube-apiserver SIGKILLed under running vGPU pods and restarted after the leader leases' renew deadline: what
    exits on a lost lease is started again as a kubelet would, every other controller reconnects by itself, a
    scale-up after it is placed, and nothing is duplicated (NodeClaims, nodes, the stack's objects)."""
    rig, team = _rig(ctx), ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    deployment = gpu_deployment(ctx, "across-api-restart", team, pool, 2, SMALL_VGPU)
    ctx.kubectl.apply([deployment])
    wait(ctx, "2 pods placed", lambda: _bound_count(ctx, team, "across-api-restart", 2), on="hami")
    # HAMi's device plugin releases a node's lock with one read of the node, no retry (pkg/util/nodelock): an API
    # server gone at that moment leaves the node locked for nodeLockExpire (docs/faults.md). The kill comes after.
    _wait_unlocked(ctx, sorted({p["spec"]["nodeName"] for p in bound(app_pods(ctx, team, "across-api-restart"))}))

    def stack_objects() -> dict[str, int]:
        paths = {
            "NodePool": "/apis/karpenter.sh/v1/nodepools",
            "NodeOverlay": "/apis/karpenter.sh/v1alpha1/nodeoverlays",
            "ResourceQuota": "/api/v1/resourcequotas",
            "Node": "/api/v1/nodes",
        }
        return {kind: len(ctx.api.items(path)) for kind, path in paths.items()}

    before = stack_objects()
    running = [name for name in rig.processes if rig.alive(name) and name != "kube-apiserver"]
    killed = time.monotonic()
    rig.kill("kube-apiserver")
    time.sleep(API_DOWN_S)
    rig.restart("kube-apiserver")
    # Ready is not serving: each resource answers 429 `storage is (re)initializing` until its watch cache is filled.
    ready = wait(ctx, "the API server serving again", lambda: _serving(ctx, team), 120, on="api")
    exited = [name for name in running if not rig.alive(name)]
    consolidated = [name for name in exited if _node_deleted(ctx, rig, name)]
    exited = [name for name in exited if name not in consolidated]
    if unexpected := [name for name in exited if name not in POD_PROCESSES]:
        raise ScenarioFailure(
            f"{', '.join(unexpected)} exited while the API server was down (their logs are beside the report)"
        )
    for name in exited:
        rig.restart(name)
    _scale(ctx, team, "across-api-restart", 4)
    placed = wait(ctx, "4 pods placed after the restart", lambda: _bound_count(ctx, team, "across-api-restart", 4))
    converged = _converged(ctx, "after the API server's restart")
    after = stack_objects()
    grown = {kind: (before[kind], after[kind]) for kind in before if kind != "Node" and after[kind] != before[kind]}
    if grown:
        raise ScenarioFailure(f"the stack's objects changed across the API server's restart: {grown}")
    recovery = time.monotonic() - killed
    ctx.kubectl.delete([deployment])
    return Result(
        "api-server-restarted",
        True,
        f"kube-apiserver killed and restarted {API_DOWN_S} s later: serving in {ready:.0f} s; "
        f"{_exited_summary(exited)}; a scale-up placed {placed:.0f} s later, every invariant holding "
        f"{recovery:.0f} s after the kill, the stack's objects unchanged ({before})",
        {
            "ready_s": round(ready, 1),
            "exited": exited,
            "ended_with_their_node": consolidated,
            "recovery_s": round(recovery, 1),
            "objects": after,
        },
        [
            f"converged {converged:.0f} s after the scale-up was placed",
            *([f"{len(consolidated)} GPU node agent(s) ended with their consolidated node"] if consolidated else []),
        ],
    )


def _burst_pod(ctx: Context, namespace: str, pool: str, index: int) -> dict[str, Any]:
    limits = {
        ctx.hami.resource_name: "1",
        ctx.hami.resource_cores: str(BURST_VGPU["cores"]),
        ctx.hami.resource_mem: str(BURST_VGPU["mem_mib"]),
    }
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"burst-{index}", "namespace": namespace, "labels": {"app": "burst"}},
        "spec": {
            "nodeSelector": {names.POOL_LABEL: pool},
            "tolerations": [{"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": names.GPU_TAINT["effect"]}],
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "server",
                    "image": PAUSE_IMAGE,
                    "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}, "limits": limits},
                }
            ],
        },
    }


def burst(ctx: Context) -> Result:
    """BURST_PODS vGPU pods created within seconds across both teams and their HAMi pools: each team's quota
    admits what it holds and refuses the rest, every admitted pod is placed by HAMi within the pools' limits, and
    the invariant checker, sampling throughout, sees no GPU over-booked and no quota exceeded."""
    teams = [ctx.team(SEED_TEAM), ctx.team(WIDE_TEAM)]
    # Each team on its first HAMi pool (inference's g4dn-shared, ml-research's g5-shared): two pools, each with room
    # for all its team's quota admits, so every admitted pod can be placed.
    sharing = ctx.plan.pool_sharing()
    hami_pools = {
        team: next(p for p in team_pools(ctx, team) if sharing.get(p) == names.SHARING_HAMI) for team in teams
    }
    targets = [(team, pool) for team, pool in hami_pools.items() for _ in range(BURST_PODS // len(teams))]

    def create(index: int) -> bool:
        team, pool = targets[index]
        for _attempt in range(BURST_RETRIES):
            try:
                ctx.api.request("POST", f"/api/v1/namespaces/{team}/pods", _burst_pod(ctx, team, pool, index))
                return True
            except ApiError as error:
                if error.status == 403:  # the team's quota (or HAMi's) refused it: by design
                    return False
                if error.status not in (409, 429, 500):  # a quota update that lost a race is retried
                    raise
        raise ScenarioFailure(f"burst pod {index} neither admitted nor refused after {BURST_RETRIES} attempts")

    started = time.monotonic()
    with ThreadPoolExecutor(max_workers=BURST_CREATORS) as creators:
        admitted = sum(creators.map(create, range(len(targets))))
    created_s = time.monotonic() - started

    def all_placed() -> bool:
        return sum(len(bound(app_pods(ctx, team, "burst"))) for team in teams) == admitted

    try:
        wait(ctx, f"{admitted} admitted burst pods placed by HAMi", all_placed, BURST_TIMEOUT_S)
    finally:
        placed_s = time.monotonic() - started
        for team in teams:
            ctx.kubectl.run("delete", "pods", "-l", "app=burst", "-n", team, "--wait=false")
    claims = nodeclaims(ctx)
    return Result(
        "burst",
        True,
        f"{len(targets)} vGPU pods created in {created_s:.0f} s across {len(teams)} teams and "
        f"{len(set(hami_pools.values()))} pools: {admitted} admitted by the quotas, all placed by HAMi "
        f"{placed_s:.0f} s after the first on {len(claims)} nodes, no GPU over-booked nor quota exceeded in "
        f"{_checks(ctx)} checks of the run so far",
        {
            "created": len(targets),
            "admitted": admitted,
            "seconds_to_created": round(created_s, 1),
            "seconds_to_all_placed": round(placed_s, 1),
            "nodes": len(claims),
        },
    )


SCENARIOS = (
    Scenario(
        "hami-scheduler-killed",
        _restoring(("hami-scheduler",), hami_scheduler_killed),
        (SEED_TEAM,),
        alone=True,
        shows=(
            "HAMi's scheduler SIGKILLed, then its team's Deployment scaled from 2 to 6: the pods created meanwhile "
            "skip HAMi's webhook (the stack renders `failurePolicy: Ignore`: failing closed would stop every pod "
            "creation its namespace selector covers, hami-scheduler's own replacement among them), but the team's "
            "MutatingAdmissionPolicy has already set `schedulerName: hami-scheduler`, so they wait Pending instead "
            "of being bound by the default scheduler without a GPU; `HamiSchedulerDown` fires; restarted, HAMi "
            "rebuilds its view from the nodes' and pods' annotations and places them, every quota charge equals "
            "its pods, the alert resolves"
        ),
    ),
    Scenario(
        "karpenter-killed",
        _restoring(("karpenter",), karpenter_killed),
        (WIDE_TEAM,),
        alone=True,
        shows=(
            "Karpenter SIGKILLed while it launches NodeClaims for three pods of 6 vCPUs (the stack's `KarpenterDown`, "
            "added for this fault, goes pending at the first failed scrape) and restarted: the launch "
            "completes on at most three NodeClaims, none orphaned or duplicated; with two pods no instance type "
            "holds (1000 vCPUs) pending and Karpenter restarted again, it launches nothing more over a "
            "consolidation bound (Karpenter's own runaway scale-up check, on the stack's pools)"
        ),
    ),
    Scenario(
        "no-runaway",
        no_runaway,
        (SEED_TEAM,),
        shows=(
            f"2 pods no instance type holds (1000 vCPUs) pending for {RUNAWAY_WATCH_S} s beside 2 vGPU pods that run, "
            "beside the other faults: Karpenter launches the node the running pods need and no other NodeClaim, "
            "none replaced (Karpenter's own runaway scale-up check, on the stack's pools, over minutes)"
        ),
    ),
    Scenario(
        "gpu-node-lost",
        gpu_node_lost,
        (WIDE_TEAM,),
        shows=(
            "the GPU node holding most of a Deployment's and a Job's vGPU pods deleted, as a failed instance's node "
            "goes: the Deployment's pods come back on other capacity, the Job's start over, HAMi's allocations, "
            "its quota charge and the ResourceQuota are freed, no pod is left bound to the gone node"
        ),
    ),
    Scenario(
        "device-plugin-killed",
        device_plugin_killed,
        (WIDE_TEAM,),
        shows=(
            "a node's device plugins (HAMi's and the mock) killed under running vGPU pods, its HAMi resources "
            "unallocatable as a kubelet makes them: the running pods keep running; HAMi 2.10 drops the node and "
            "re-adds it at its next read from the registration annotation nothing removed, so new pods it places "
            "there wait (none starts without an allocation); restarted, the plugins register the same capacity "
            "and every pod runs"
        ),
    ),
    Scenario(
        "api-server-restarted",
        _restoring(("kube-apiserver", *POD_PROCESSES), api_server_restarted),
        (SEED_TEAM,),
        alone=True,
        shows=(
            f"kube-apiserver SIGKILLed under running vGPU pods and restarted {API_DOWN_S} s later: HAMi's "
            "kube-scheduler loses its leader lease and exits, and is started again as its kubelet would; Karpenter, "
            "HAMi's extender, KWOK and the controllers reconnect by themselves, a scale-up after it is placed, and "
            "no NodePool, overlay or quota is duplicated"
        ),
    ),
    Scenario(
        "burst",
        burst,
        (SEED_TEAM, WIDE_TEAM),
        alone=True,
        shows=(
            f"{BURST_PODS} vGPU pods created within seconds across both teams and their HAMi pools: the quotas admit "
            "what each team holds and refuse the rest, every admitted pod is placed by HAMi within the pools' limits, "
            "and the invariant checker sampling throughout sees no GPU over-booked and no quota exceeded; the time to "
            "all placed is in the report"
        ),
    ),
)
