"""Quotas and priorities: what a team's ResourceQuota refuses, and which tier preempts where."""

from __future__ import annotations

from typing import Any

from e2e.cluster import prometheus
from e2e.cluster.kubectl import KubectlError
from e2e.cluster.stack import Plan, for_rig
from e2e.cluster.workloads import (
    PAUSE_IMAGE,
    Context,
    app_pods,
    bound,
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


# A container's GPU asks in each request style (docs/sharing.md "Team GPU quotas"): what Kubernetes' quota
# counts of it and what HAMi 2.10's own quota charges differ, and each budget must hold at its real figure.
STYLES: dict[str, dict[str, str]] = {
    "percentage": {names.GPU: "1", names.GPU_MEMORY_PERCENTAGE: "50", names.GPU_CORES: "10"},
    "no-gpumem": {names.GPU: "1", names.GPU_CORES: "10"},
    "whole-gpu": {names.GPU: "1"},
    "mib": {names.GPU: "1", names.GPU_MEMORY: "8192", names.GPU_CORES: "10"},
}
QUOTA_REFUSED = "exceeded quota"
# HAMi 2.10's webhook refuses at admission a pod whose memory it can compute and the team's HAMi quota cannot take
# (pkg/scheduler/webhook.go), its scheduler at placement one it charges only once it picks a GPU.
HAMI_WEBHOOK_REFUSED = "exceeding resource quota"
HAMI_QUOTA_REFUSED = "ResourceQuotaNotFit"


def _admission_refusal(error: str) -> str:
    """Which quota refused a pod at admission ('' when none did)."""
    if QUOTA_REFUSED in error:
        return f"Kubernetes' quota at admission: {error.splitlines()[-1]}"
    if HAMI_WEBHOOK_REFUSED in error:
        return f"HAMi's webhook at admission: {error.splitlines()[-1]}"
    return ""


def _charged(ctx: Context, team: str) -> dict[str, int]:
    """What HAMi's scheduler has charged the team's quota, from its own metric (gpumem in MiB, gpucores in %)."""
    series = prometheus.query(f'hami_resource_quota_used{{namespace="{team}"}}')
    return {s["metric"].get("quota_name", ""): int(float(s["value"][1])) for s in series}


def _style_pod(ctx: Context, team: str, pool: str, style: str, index: int) -> dict[str, Any]:
    template = gpu_deployment(ctx, f"quota-{style}", team, pool, 1, {"cores": 1, "mem_mib": 1})["spec"]["template"]
    template["spec"]["containers"][0]["resources"]["limits"] = dict(STYLES[style])
    metadata = {"name": f"quota-{style}-{index}", "namespace": team, "labels": {"app": f"quota-{style}"}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": template["spec"]}


def _memory_budget_style(ctx: Context, team: str, pool: str, style: str, charge_mib: int) -> dict[str, Any]:
    """Pods of one request style, one at a time, until a budget refuses one: at admission (Kubernetes' quota, which
    counts what the pod states, or HAMi's webhook) or at placement (HAMi's scheduler, which charges what it hands
    out). How many ran, who refused the next and why, and HAMi's charge, which must reach `charge_mib` per pod that
    ran; then every pod deleted and HAMi's charge back to none."""
    created: list[dict[str, Any]] = []
    refusal = ""
    try:
        for index in range(1, 8):
            pod = _style_pod(ctx, team, pool, style, index)
            try:
                ctx.kubectl.apply([pod])
            except KubectlError as error:
                refusal = _admission_refusal(str(error))
                if not refusal:
                    raise ScenarioFailure(f"{style}: pod {index} refused, but not by a quota: {error}") from None
                break
            created.append(pod)

            def decided(name: str = pod["metadata"]["name"]) -> bool:
                placed = bound([get_pod(ctx, team, name)])
                return bool(placed) or event_count(ctx, team, name, "FailedScheduling", HAMI_QUOTA_REFUSED) > 0

            wait(ctx, f"{style} pod {index} placed or refused by HAMi's quota", decided, on="hami")
            if not bound([get_pod(ctx, team, pod["metadata"]["name"])]):
                refusal = f"HAMi's scheduler at placement: {HAMI_QUOTA_REFUSED}"
                break
        placed = len(bound(app_pods(ctx, team, f"quota-{style}")))
        wait(
            ctx,
            f"HAMi charging {placed} {style} pods {placed * charge_mib} MiB",
            lambda: _charged(ctx, team).get(names.GPU_MEMORY) == placed * charge_mib,
            60,
            on="alerts",
        )
        charged = _charged(ctx, team)
    finally:
        _delete_waiting_first(ctx, team, created)
    wait(
        ctx,
        f"HAMi's charge of the {style} pods returned",
        lambda: not any(_charged(ctx, team).values()),
        60,
        on="alerts",
    )
    return {"placed": placed, "refused_by": refusal, "charged": charged}


def _delete_waiting_first(ctx: Context, team: str, pods: list[dict[str, Any]]) -> None:
    """The pods no node holds yet deleted before the others. A placed pod's deletion frees HAMi's quota, kube-scheduler
    retries a waiting pod at once, and a pod deleted while HAMi binds it keeps its charge for good: HAMi 2.10's
    delete handler does not take it back and a failed Bind does not either (Project-HAMi/HAMi#2308), as this scenario
    met on a fast machine (docs/sharing.md)."""
    names_of = {pod["metadata"]["name"] for pod in pods}
    on_nodes = {
        pod["metadata"]["name"]
        for pod in ctx.api.items(f"/api/v1/namespaces/{team}/pods")
        if pod["metadata"]["name"] in names_of and pod["spec"].get("nodeName")
    }
    waiting = [pod for pod in pods if pod["metadata"]["name"] not in on_nodes]
    for batch in (waiting, [pod for pod in pods if pod["metadata"]["name"] in on_nodes]):
        if batch:
            ctx.kubectl.delete(batch)


def quota_budgets(ctx: Context) -> Result:
    """A team's quota refuses at its real budget whatever the pods ask. vGPUs: a pod asking one more than
    requests.nvidia.com/gpu is refused by the API server. GPU memory, per request style (MiB, a percentage of the GPU,
    a whole GPU, cores without memory): Kubernetes counts only what a container states, HAMi 2.10's own quota
    (limits.nvidia.com/gpumem and gpucores) charges what it hands out, so the pods that run are what the budget
    holds (30720 MiB: three of 8192 MiB, four of 50% of a T4, two whole T4s) and the next is refused, by the API
    server or by HAMi's scheduler; every charge returns when the pods are deleted."""
    team = ctx.team(SEED_TEAM)
    [quota] = [q for q in ctx.plan.of_kind("ResourceQuota") if q["metadata"]["namespace"] == team]
    hard = {key: int(value) for key, value in quota["spec"]["hard"].items()}
    pool = team_pool(ctx, team)
    vgpus = _vgpu_count_refused(ctx, team, pool, hard[f"requests.{names.GPU}"])
    gpu_mib = min(
        ctx.catalog.gpu_model_of(ctx.catalog.instance_type(t)).nvml_memory_mib
        for t in ctx.plan.pool_instance_types()[pool]
    )
    memory_mib = hard[f"limits.{names.GPU_MEMORY}"] * ctx.hami.memory_factor
    cores = hard[f"limits.{names.GPU_CORES}"]
    expected = {
        "percentage": memory_mib // (gpu_mib // 2),
        "no-gpumem": memory_mib // gpu_mib,
        "whole-gpu": min(memory_mib // gpu_mib, cores // 100),
        "mib": memory_mib // 8192,
    }
    # What HAMi hands out per pod, and so charges: what the pod states, else its share of the GPU, else all of it.
    charges = {"percentage": gpu_mib // 2, "no-gpumem": gpu_mib, "whole-gpu": gpu_mib, "mib": 8192}
    styles = {style: _memory_budget_style(ctx, team, pool, style, charges[style]) for style in STYLES}
    wrong = {s: seen for s, seen in styles.items() if seen["placed"] != expected[s] or not seen["refused_by"]}
    if wrong:
        raise ScenarioFailure(f"the memory budget of {memory_mib} MiB did not hold at its figure: {wrong}")
    for style, seen in styles.items():
        charged = seen["charged"].get(names.GPU_MEMORY, 0)
        if style != "mib" and charged > memory_mib:
            raise ScenarioFailure(f"HAMi charged {charged} MiB for the {style} pods, above the {memory_mib} MiB budget")
    return Result(
        "quota",
        True,
        f"{vgpus}; GPU memory budget {memory_mib} MiB: "
        + ", ".join(
            f"{s} {seen['placed']} ran, the next refused by {seen['refused_by'].split(':')[0]}"
            for s, seen in styles.items()
        )
        + "; every charge returned after deletion",
        {"expected": expected, "styles": styles, "memory_budget_mib": memory_mib},
    )


def _vgpu_count_refused(ctx: Context, team: str, pool: str, hard_vgpus: int) -> str:
    """A pod asking one vGPU more than requests.nvidia.com/gpu, one per container (the per-GPU limit allows a container
    no more vGPUs than a node of the team has GPUs) with small per-GPU requests, so only the quota can refuse it."""
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
        if QUOTA_REFUSED not in str(error):
            raise ScenarioFailure(f"refused, but not by the quota: {error}") from None
        return f"a pod asking {asked} refused: {QUOTA_REFUSED}"
    ctx.kubectl.delete([pod])
    raise ScenarioFailure(f"a pod asking {asked} was admitted")


BURST = 8


def quota_burst(ctx: Context) -> Result:
    """HAMi 2.10's charge does not drift: a burst of twice what the memory budget holds (50% of a GPU each), HAMi
    places what fits and refuses the rest over and over as kube-scheduler retries them, and its charge stays at what
    runs (2.8.3 charged a pod again on every re-filter); deleted, the charge returns to none; the same pods again
    are charged the same."""
    team = ctx.team(SEED_TEAM)
    pool = team_pool(ctx, team)
    [quota] = [q for q in ctx.plan.of_kind("ResourceQuota") if q["metadata"]["namespace"] == team]
    memory_mib = int(quota["spec"]["hard"][f"limits.{names.GPU_MEMORY}"]) * ctx.hami.memory_factor
    deployment = gpu_deployment(ctx, "burst", team, pool, BURST, {"cores": 1, "mem_mib": 1})
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"] = dict(STYLES["percentage"])
    figures: dict[str, Any] = {"memory_budget_mib": memory_mib}
    try:
        ctx.kubectl.apply([deployment])

        def refiltered() -> bool:
            pending = [p for p in app_pods(ctx, team, "burst") if not bound([p])]
            return len(bound(app_pods(ctx, team, "burst"))) > 0 and all(
                event_count(ctx, team, p["metadata"]["name"], "FailedScheduling", HAMI_QUOTA_REFUSED) >= 3
                for p in pending
            )

        wait(ctx, "the pods beyond the budget refused by HAMi three times each", refiltered, 240, on="hami")
        placed = len(bound(app_pods(ctx, team, "burst")))
        wait(ctx, "HAMi's charge scraped", lambda: _charged(ctx, team).get(names.GPU_MEMORY, 0) > 0, 60, on="alerts")
        charged = _charged(ctx, team)
        figures["burst"] = {"pods": BURST, "placed": placed, "charged": charged}
        if charged.get(names.GPU_MEMORY, 0) > memory_mib or placed >= BURST:
            raise ScenarioFailure(f"HAMi's charge drifted past the budget: {figures['burst']}")
        # The pods HAMi refused go first (a ReplicaSet scaled down deletes its pods on no node first), then the
        # placed ones, for the reason _delete_waiting_first gives.
        deployment["spec"]["replicas"] = placed
        ctx.kubectl.apply([deployment])
        wait(ctx, "the refused pods gone", lambda: len(app_pods(ctx, team, "burst")) == placed, 60, on="hami")
        deployment["spec"]["replicas"] = 0
        ctx.kubectl.apply([deployment])
        returned = wait(
            ctx, "HAMi's charge returned after deletion", lambda: not any(_charged(ctx, team).values()), 90, on="alerts"
        )
        deployment["spec"]["replicas"] = placed
        ctx.kubectl.apply([deployment])
        wait(ctx, f"{placed} pods placed again", lambda: len(bound(app_pods(ctx, team, "burst"))) == placed, on="hami")
        wait(ctx, "HAMi's charge scraped again", lambda: _charged(ctx, team) == charged, 60, on="alerts")
        figures["again"] = {"placed": placed, "charged": _charged(ctx, team), "returned_after_s": round(returned, 1)}
    finally:
        ctx.kubectl.delete([deployment])
    return Result(
        "quota-burst",
        True,
        f"{BURST} pods of 50% of a GPU against a {memory_mib} MiB budget: {placed} placed, the rest refused by HAMi "
        f"again and again, HAMi's charge stayed {charged.get(names.GPU_MEMORY)} MiB; deleted, it returned to none "
        f"within {returned:.0f} s; placed again, charged the same",
        figures,
    )


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
            if team["name"] in ctx.tenant.teams.values():
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
    docs/sharing.md tells teams that mix pool kinds."""
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
    exclusive_name = ctx.tenant.extra_pool
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
        # kube-scheduler looks for victims (PostFilter) in the very cycle that ends in FailedScheduling: three failed
        # cycles show it found none, with the pool at its limit.
        hold_s = wait(
            ctx,
            "HAMi's kube-scheduler failing the critical pod three times",
            lambda: event_count(ctx, critical_team, "critical", "FailedScheduling") >= 3,
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
        f"{figures['hami']['critical_priority']}) stays Pending ({hold_s:.0f} s, three scheduling cycles), no "
        "batch pod preempted (no preempt verb in HAMi's extender); exclusive pool: the batch pod is preempted and "
        f"the critical pod runs after {figures['exclusive']['critical_running_after_s']} s",
        figures,
    )


SCENARIOS = (
    Scenario(
        "quota",
        quota_budgets,
        (SEED_TEAM,),
        shows=(
            "the team's budgets refuse at their real figures: a pod asking one vGPU more than the quota (one per "
            "container, each within the per-GPU limit) is refused by the API server; the 30720 MiB memory budget "
            "holds for every request style, pods added one at a time until one is refused: three of 8192 MiB run "
            "(the fourth refused by Kubernetes' quota at admission), four of 50% of a T4 (the fifth refused by "
            "HAMi's scheduler, `ResourceQuotaNotFit`), two whole T4s (the third refused by HAMi's webhook at "
            "admission), two asking cores without memory, which HAMi gives a whole GPU's (the third refused by "
            "HAMi's scheduler); every charge returns when the pods are deleted (HAMi's "
            "`hami_resource_quota_used`)"
        ),
    ),
    Scenario(
        "quota-burst",
        quota_burst,
        (SEED_TEAM,),
        shows=(
            "HAMi 2.10's charge does not drift: eight pods of 50% of a T4 at once against a budget of four, four "
            "placed, the rest refused by HAMi's scheduler again and again (three times each), and HAMi's charge "
            "stays at 30720 MiB (2.8.3 charged a pod again on every re-filter); deleted, it returns to none; the "
            "same four again are charged the same"
        ),
    ),
    Scenario(
        "priorities",
        priorities,
        (WIDE_TEAM, SEED_TEAM),
        shows=(
            "a critical team's pod arrives on the HAMi pool it shares with a batch team, filled to its NodePool "
            "limit: kube-scheduler cannot preempt for it (HAMi's extender has no preempt verb and its resources "
            "are `ignoredByScheduler`, HAMi #1878), so it fails three scheduling cycles, stays Pending and no "
            "batch pod is touched; on an exclusive pool (rendered for this scenario) the batch pod is preempted "
            "and the critical pod runs"
        ),
    ),
)
