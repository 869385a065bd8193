"""The scenarios `make e2e` runs, each a pass/fail line with figures.

Each scenario gets the running rig through `Context`, leaves the cluster as it found it (its workloads
deleted, nodes consolidated or removed) and returns a `Result`; an assertion that fails raises
`ScenarioFailure` with what was seen.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import yaml

from e2e import prometheus
from e2e.api import Api, ApiError
from e2e.errors import RigError
from e2e.hami_chart import HamiRelease
from e2e.kubectl import Kubectl, KubectlError
from e2e.node_agent import NodeAgent
from e2e.rig import wait_for
from e2e.stack import KWOK_NODE_CLASS, Plan, daily_window, for_rig
from gpushare import names
from gpushare.catalog import Catalog

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
SCALE_TIMEOUT_S = 180
MONITORING_GROUP = "monitoring.coreos.com"
# The rig renders the NodeClaim alert with nodeClaimNotInitializedMinutes: 1; rules are evaluated every 5 s.
ALERT_THRESHOLD_S = 60
ALERT_MARGIN_S = 15


class ScenarioFailure(Exception):
    """A scenario's expectation did not hold; the message says what was seen."""


@dataclass
class Result:
    name: str
    passed: bool
    summary: str
    figures: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class Context:
    log_dir: Path
    api: Api
    kubectl: Kubectl
    catalog: Catalog
    plans: dict[str, Plan]
    agent: NodeAgent
    hami: HamiRelease
    # When the rig started (UTC): the rig's scheduled disruption budgets are computed from it.
    started: datetime
    # Set once Karpenter runs: restart it with another NodeOverlay gate text, and the stack's own.
    restart_karpenter: Callable[[str], None] = lambda _gate: None
    stack_gate: str = "true"


def _namespaces_first(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(objects, key=lambda obj: obj["kind"] != "Namespace")


def objects_accepted(ctx: Context, stack: str) -> Result:
    """Every object of the stack, server-side applied with the real CRDs; a re-apply changes nothing."""
    plan = ctx.plans[stack]
    skipped = [obj for obj in plan.objects if obj["apiVersion"].startswith(MONITORING_GROUP)]
    objects = _namespaces_first([obj for obj in plan.objects if obj not in skipped])
    try:
        ctx.kubectl.apply(objects)
        before = ctx.kubectl.versions(objects)
        ctx.kubectl.apply(objects)
        after = ctx.kubectl.versions(objects)
        warnings = _type_check_warnings(ctx, [obj for obj in objects if obj["kind"] == "ValidatingAdmissionPolicy"])
    except KubectlError as error:
        raise ScenarioFailure(f"API server refused an object of {stack}: {error}") from None
    finally:
        try:
            ctx.kubectl.delete(list(reversed(objects)))
        except KubectlError as error:
            raise ScenarioFailure(f"could not delete the {stack} objects again: {error}") from None
    changed = sorted(key for key in before if before[key] != after.get(key))
    if changed:
        raise ScenarioFailure(f"re-applying {stack} changed {', '.join(changed)}")
    # The type checker resolves no field of a container's ResourceList (`c.resources.limits` alone warns
    # "undefined field 'limits'" on this API server); evaluation does see them (scenario team-admission).
    unexplained = [w for w in warnings if not re.search(r"undefined field '(limits|requests)'", w)]
    if unexplained:
        raise ScenarioFailure(f"the API server's CEL type check warns: {'; '.join(unexplained)}")
    kinds = Counter(obj["kind"] for obj in objects)
    notes = []
    if skipped:
        notes.append(
            f"{len(skipped)} {MONITORING_GROUP} objects not applied: their CRDs come from the "
            "kube-prometheus-stack chart, which the rig does not install"
        )
    if warnings:
        notes.append(
            f"{len(warnings)} CEL type-check warnings on container resource maps, which the API server's "
            "type checker cannot resolve; evaluation is shown in team-admission"
        )
    return Result(
        f"objects-{stack}",
        True,
        f"{len(objects)} objects of {stack} accepted, re-apply changed 0",
        {"objects": len(objects), "kinds": dict(sorted(kinds.items()))},
        notes,
    )


def _type_check_warnings(ctx: Context, policies: list[dict[str, Any]]) -> list[str]:
    """The API server type-checks ValidatingAdmissionPolicy CEL against the pod schema after creation and
    records warnings in status; wait until every policy has been checked, then collect them."""
    if not policies:
        return []

    def checked() -> list[dict[str, Any]] | None:
        live = ctx.kubectl.get(policies)
        done = all("typeChecking" in item.get("status", {}) for item in live)
        return live if done else None

    _wait("the API server to type-check the admission policies", lambda: checked() is not None, 60)
    return [
        f"{item['metadata']['name']} {warning['fieldRef']}: {warning['warning']}"
        for item in checked() or []
        for warning in item["status"]["typeChecking"].get("expressionWarnings", [])
    ]


# --- the running stack ---------------------------------------------------------------------------------


def install_running_stack(ctx: Context, stack: str) -> None:
    """Apply the stack as the rig runs it (NodePools on the KWOKNodeClass)."""
    applied = [obj for obj in ctx.plans[stack].objects if not obj["apiVersion"].startswith(MONITORING_GROUP)]
    objects = _namespaces_first([for_rig(obj, ctx.started) for obj in applied])
    ctx.kubectl.apply([KWOK_NODE_CLASS, *objects])


def _team_pools(ctx: Context, team: str, stack: str) -> list[str]:
    return ctx.plans[stack].namespace(team)["metadata"]["annotations"][names.TEAM_POOLS_ANNOTATION].split(",")


def _team_pool(ctx: Context, team: str, stack: str) -> str:
    return _team_pools(ctx, team, stack)[0]


def _rig_pool(ctx: Context, stack: str, pool: str) -> dict[str, Any]:
    """The NodePool named `pool` as the rig runs it."""
    [nodepool] = [p for p in ctx.plans[stack].of_kind("NodePool") if p["metadata"]["name"] == pool]
    return for_rig(nodepool, ctx.started)


def gpu_deployment(
    ctx: Context,
    name: str,
    namespace: str,
    pool: str,
    replicas: int,
    vgpu: dict[str, int],
    cpu: str = "500m",
    shared: bool = False,
) -> dict[str, Any]:
    """A Deployment of pause containers asking HAMi resources (names from the HAMi release's values), or with
    `shared` one time-sliced GPU replica."""
    limits = (
        {names.GPU_SHARED: "1"}
        if shared
        else {
            ctx.hami.resource_name: str(vgpu.get("gpu", 1)),
            ctx.hami.resource_cores: str(vgpu["cores"]),
            ctx.hami.resource_mem: str(vgpu["mem_mib"]),
        }
    )
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {
                    "nodeSelector": {names.POOL_LABEL: pool},
                    "tolerations": [
                        {"key": names.GPU_TAINT["key"], "operator": "Exists", "effect": names.GPU_TAINT["effect"]}
                    ],
                    "terminationGracePeriodSeconds": 0,
                    "containers": [
                        {
                            "name": "server",
                            "image": PAUSE_IMAGE,
                            "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}, "limits": limits},
                        }
                    ],
                },
            },
        },
    }


# What HAMi's scheduler writes on a pod it placed (pkg/util/types.go), and its device plugin's bind phase.
HAMI_NODE = "hami.io/vgpu-node"
HAMI_DEVICES = "hami.io/vgpu-devices-allocated"
HAMI_BIND_PHASE = "hami.io/bind-phase"


def gpus_of(pod: dict[str, Any]) -> list[str]:
    """The GPU UUIDs HAMi allocated to the pod's containers (`UUID,type,mem,cores:` per device, `;` per
    container)."""
    text = pod["metadata"].get("annotations", {}).get(HAMI_DEVICES, "")
    return [device.split(",")[0] for container in text.split(";") for device in container.split(":") if device]


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


def _pods(ctx: Context, namespace: str, app: str) -> list[dict[str, Any]]:
    return ctx.api.items(f"/api/v1/namespaces/{namespace}/pods?labelSelector=app%3D{app}")


def _running(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [pod for pod in pods if pod.get("status", {}).get("phase") == "Running"]


def nodeclaims(ctx: Context) -> list[dict[str, Any]]:
    return ctx.api.items("/apis/karpenter.sh/v1/nodeclaims")


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == kind), {})


def _wait(what: str, condition: Callable[[], bool], timeout_s: float = SCALE_TIMEOUT_S) -> float:
    try:
        return wait_for(what, condition, timeout_s, interval_s=1)
    except RigError as error:
        raise ScenarioFailure(str(error)) from None


def _events(ctx: Context, namespace: str, about: str = "") -> list[str]:
    """`reason: message` of the namespace's events, only those about objects named `about...` when given (earlier
    scenarios' events stay around)."""
    return [
        f"{e.get('reason')}: {e.get('message')}"
        for e in ctx.api.items(f"/api/v1/namespaces/{namespace}/events")
        if str(e.get("involvedObject", {}).get("name", "")).startswith(about)
    ]


def _remove_and_wait_empty(ctx: Context, deployment: dict[str, Any]) -> float:
    """Delete the workload; seconds until Karpenter has consolidated every GPU node away."""
    ctx.kubectl.delete([deployment])
    return _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 240)


def nodes_by_type(ctx: Context) -> dict[str, int]:
    return dict(Counter(claim["metadata"]["labels"]["node.kubernetes.io/instance-type"] for claim in nodeclaims(ctx)))


def usd_per_hour(ctx: Context, by_type: dict[str, int]) -> float:
    return round(sum(ctx.catalog.instance_type(t).on_demand_usd_per_hour * n for t, n in by_type.items()), 3)


def seed_scale_up(ctx: Context, stack: str, team: str) -> Result:
    """gpu-inference (1 vGPU, 50 gpucores, 4096 MiB) to 3 replicas: a node, pods Running, quota counting."""
    pool = _team_pool(ctx, team, stack)
    deployment = gpu_deployment(ctx, "gpu-inference", team, pool, 3, {"cores": 50, "mem_mib": 4096})
    ctx.kubectl.apply([deployment])
    seconds = _wait("3 gpu-inference pods Running", lambda: len(_running(_pods(ctx, team, "gpu-inference"))) == 3)
    # Karpenter may still be bringing up a claim it launched while the pods were pending: every claim must
    # initialize (the device plugins register), not only the ones the pods landed on.
    _wait(
        "every NodeClaim Initialized",
        lambda: all(_condition(c, "Initialized").get("status") == "True" for c in nodeclaims(ctx)),
        60,
    )
    claims = nodeclaims(ctx)
    by_type = nodes_by_type(ctx)
    placement = placed_by_hami(ctx, _running(_pods(ctx, team, "gpu-inference")))
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
    # Healthy nodes must not trip the NodeClaim alert: hold them past its (rig) threshold, then look.
    silent_s = _hold_past_alert_threshold(claims)
    if prometheus.alerts(prometheus.NOT_INITIALIZED_ALERT):
        raise ScenarioFailure(f"{prometheus.NOT_INITIALIZED_ALERT} fired for initialized NodeClaims")
    figures = {
        "pool": pool,
        "seconds_to_running": round(seconds, 1),
        "nodes_by_type": by_type,
        "usd_per_hour": usd_per_hour(ctx, by_type),
        "quota_used": {key: used[key] for key in expected},
        "alert_silent_for_s": silent_s,
        "hami_placement": placement,
    }
    consolidated = _remove_and_wait_empty(ctx, deployment)
    figures["seconds_to_consolidated"] = round(consolidated, 1)
    return Result(
        "seed-scale-up",
        True,
        f"3 pods Running in {seconds:.0f} s on {by_type} (${figures['usd_per_hour']}/h), placed by HAMi on "
        f"{sum(map(len, placement.values()))} vGPUs of {len(placement)} nodes, quota counts them, "
        f"{prometheus.NOT_INITIALIZED_ALERT} silent; consolidated {consolidated:.0f} s after scale-down",
        figures,
        ["consolidateAfter shortened to the rig's value for observability (the stack says otherwise)"],
    )


def _timeslice_pool(ctx: Context, stack: str, team: str) -> dict[str, Any]:
    listed = _team_pools(ctx, team, stack)
    pools = [
        p
        for p in ctx.plans[stack].of_kind("NodePool")
        if p["metadata"]["name"] in listed
        and p["spec"]["template"]["metadata"]["labels"].get(names.SHARING_LABEL) == names.SHARING_TIMESLICE
    ]
    if not pools:
        raise ScenarioFailure(f"team {team} of {stack} has no time-sliced pool")
    return pools[0]


def time_slicing(ctx: Context, stack: str, team: str) -> Result:
    """Pods asking one time-sliced replica: Karpenter launches a 1-GPU node that registers `replicas` of them (the
    NVIDIA plugin's time-slicing config, not the overlay), packs that many pods on it, and one more pod takes a
    second node."""
    pool = _timeslice_pool(ctx, stack, team)
    pool_name = pool["metadata"]["name"]
    labels = pool["spec"]["template"]["metadata"]["labels"]
    if ctx.agent.nvidia is None:
        raise ScenarioFailure(f"{stack} has a time-sliced pool but no {names.NVIDIA_PLUGIN_RELEASE} release")
    replicas = ctx.agent.nvidia.register(labels, 1).get(names.GPU_SHARED, 0)
    if replicas < 2:
        raise ScenarioFailure(f"the NVIDIA plugin config of pool {pool_name} registers {replicas} {names.GPU_SHARED}")
    deployment = gpu_deployment(ctx, "notebook", team, pool_name, replicas, {}, shared=True)
    greedy = json.loads(json.dumps(deployment["spec"]["template"]["spec"]))
    greedy["containers"][0]["resources"]["limits"][names.GPU_SHARED] = "2"
    try:
        _admitted(
            ctx, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "greedy", "namespace": team}, "spec": greedy}
        )
    except KubectlError as error:
        refusal = str(error).splitlines()[-1]
    else:
        raise ScenarioFailure(f"a pod asking 2 {names.GPU_SHARED} was admitted; one replica per container is the limit")
    ctx.kubectl.apply([deployment])
    seconds = _wait(
        f"{replicas} notebook pods Running", lambda: len(_running(_pods(ctx, team, "notebook"))) == replicas
    )
    nodes = [n for n in ctx.api.items("/api/v1/nodes") if n["metadata"]["labels"].get(names.POOL_LABEL) == pool_name]
    hosts = {pod["spec"]["nodeName"] for pod in _running(_pods(ctx, team, "notebook"))}
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
    _wait(f"{replicas + 1} notebook pods Running", lambda: len(_running(_pods(ctx, team, "notebook"))) == replicas + 1)
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
    consolidated = _remove_and_wait_empty(ctx, deployment)
    figures["seconds_to_consolidated"] = round(consolidated, 1)
    return Result(
        "time-slicing",
        True,
        f"{replicas} pods share one {itype.name} GPU ({names.GPU_SHARED}={replicas}, quota counts them, "
        f"${figures['usd_per_pod_hour']}/pod-h); pod {replicas + 1} takes a second node; a pod asking 2 replicas "
        f"refused at admission; consolidated {consolidated:.0f} s after scale-down",
        figures,
        ["the NVIDIA device plugin is played by the rig's node agent from the release's time-slicing config"],
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


def examples_run(ctx: Context, examples: list[Path]) -> Result:
    """Every workload under examples/ at once on the running dev stack: admitted by the team policies, within
    the quotas, every pod Running (a Job: all its completions) on nodes Karpenter launched; then all consolidated
    away."""
    workloads = {
        (w["metadata"]["namespace"], w["metadata"]["name"]): w
        for p in examples
        for w in yaml.safe_load_all(p.read_text())
    }
    ctx.kubectl.apply(list(workloads.values()))
    expected = {key: w["spec"].get("replicas", w["spec"].get("completions", 1)) for key, w in workloads.items()}
    pods = sum(expected.values())
    try:
        seconds = _wait(
            f"{pods} example pods run", lambda: all(_ran(ctx, w) >= expected[key] for key, w in workloads.items())
        )
    except ScenarioFailure as failure:
        short = {f"{ns}/{name}": f"{_ran(ctx, w)}/{expected[(ns, name)]}" for (ns, name), w in workloads.items()}
        raise ScenarioFailure(f"{failure}; ran/expected {short}") from None
    by_type = nodes_by_type(ctx)
    ctx.kubectl.delete(list(workloads.values()))
    consolidated = _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 300)
    return Result(
        "examples",
        True,
        f"{len(workloads)} example workloads ({pods} pods) ran in {seconds:.0f} s on {by_type} "
        f"(${usd_per_hour(ctx, by_type)}/h); consolidated {consolidated:.0f} s after deletion",
        {"pods": pods, "nodes_by_type": by_type, "seconds_to_running": round(seconds, 1)},
        ["pods are placed by kube-scheduler on the registered resources, not by HAMi's scheduler (see report)"],
    )


def _hold_past_alert_threshold(claims: list[dict[str, Any]]) -> int:
    """Sleep until the oldest claim is older than the rig's one-minute alert threshold plus two evaluations."""
    created = min(
        datetime.fromisoformat(claim["metadata"]["creationTimestamp"].replace("Z", "+00:00")) for claim in claims
    )
    remaining = ALERT_THRESHOLD_S + ALERT_MARGIN_S - (datetime.now(UTC) - created).total_seconds()
    time.sleep(max(0.0, remaining))
    return int((datetime.now(UTC) - created).total_seconds())


def several_nodes(ctx: Context, stack: str, team: str, replicas: int) -> Result:
    """Enough replicas for several GPU nodes: how many of which type Karpenter launches, at what price."""
    pool = _team_pool(ctx, team, stack)
    # cpu 6 keeps a node type from holding them all, so the pool grows by several nodes.
    deployment = gpu_deployment(ctx, "gpu-batch", team, pool, replicas, {"cores": 25, "mem_mib": 4096}, cpu="6")
    ctx.kubectl.apply([deployment])
    seconds = _wait(
        f"{replicas} gpu-batch pods Running", lambda: len(_running(_pods(ctx, team, "gpu-batch"))) == replicas
    )
    by_type = nodes_by_type(ctx)
    vgpu_cores = sum(
        int(node["status"]["allocatable"].get(ctx.hami.resource_cores, "0"))
        for node in ctx.api.items("/api/v1/nodes")
        if node["metadata"].get("labels", {}).get(names.POOL_LABEL) == pool
    )
    cheapest = _cheapest_single_type(ctx, pool, replicas, cpu_millis=6000, cores=25, stack=stack)
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
    consolidated = _remove_and_wait_empty(ctx, deployment)
    figures["seconds_to_consolidated"] = round(consolidated, 1)
    return Result(
        "several-nodes",
        True,
        f"{replicas} pods Running in {seconds:.0f} s on {sum(by_type.values())} nodes {by_type} "
        f"(${figures['usd_per_hour']}/h, {25 * replicas}/{vgpu_cores} gpucores used; one type at best: "
        f"{cheapest['nodes']} x {cheapest['type']} ${cheapest['usd_per_hour']}/h)",
        figures,
    )


def _cheapest_single_type(
    ctx: Context, pool: str, replicas: int, cpu_millis: int, cores: int, stack: str
) -> dict[str, Any]:
    """The cheapest way to hold the pods on nodes of one pool type (kwok reserves 100m CPU per node)."""
    options = []
    for name in ctx.plans[stack].pool_instance_types()[pool]:
        itype = ctx.catalog.instance_type(name)
        per_node = min((itype.vcpu * 1000 - 100) // cpu_millis, itype.gpu_count * 100 // cores)
        if per_node:
            nodes = -(-replicas // per_node)
            options.append((round(nodes * itype.on_demand_usd_per_hour, 3), nodes, name))
    usd, nodes, name = min(options)
    return {"type": name, "nodes": nodes, "usd_per_hour": usd}


def no_overlays(ctx: Context, stack: str, team: str) -> Result:
    """Without NodeOverlays Karpenter cannot see HAMi's resources: Pending, and it says why."""
    pool = _team_pool(ctx, team, stack)
    overlays = [
        obj for obj in ctx.plans[stack].of_kind("NodeOverlay") if obj["metadata"]["labels"][names.POOL_LABEL] == pool
    ]
    ctx.kubectl.delete(overlays)
    deployment = gpu_deployment(ctx, "no-overlay", team, pool, 1, {"cores": 50, "mem_mib": 4096})
    try:
        ctx.kubectl.apply([deployment])
        needle = "no instance type has enough resources"
        seconds = _wait(f"a Karpenter event '{needle}'", lambda: any(needle in e for e in _events(ctx, team)), 90)
        if nodeclaims(ctx):
            raise ScenarioFailure(f"Karpenter launched {len(nodeclaims(ctx))} NodeClaims without overlays")
    finally:
        ctx.kubectl.delete([deployment])
        ctx.kubectl.apply(overlays)
    return Result(
        "no-overlays",
        True,
        f"without the {pool} overlays the pod stays Pending; Karpenter said '{needle}' after {seconds:.0f} s",
        {"seconds_to_event": round(seconds, 1)},
    )


def gate_off(ctx: Context, stack: str, team: str) -> Result:
    """The negative control of the gate: with the stack's overlays in place but Karpenter's NodeOverlay gate off,
    Karpenter ignores them and a vGPU pod stays Pending with the same message as without overlays."""
    pool = _team_pool(ctx, team, stack)
    deployment = gpu_deployment(ctx, "gate-off", team, pool, 1, {"cores": 50, "mem_mib": 4096})
    needle = "no instance type has enough resources"
    ctx.restart_karpenter("false")
    try:
        ctx.kubectl.apply([deployment])
        seconds = _wait(
            f"a Karpenter event '{needle}'",
            lambda: any(needle in message for message in _events(ctx, team, about="gate-off")),
            90,
        )
        if nodeclaims(ctx):
            raise ScenarioFailure(f"Karpenter launched {len(nodeclaims(ctx))} NodeClaims with the gate off")
    finally:
        ctx.kubectl.delete([deployment])
        ctx.restart_karpenter(ctx.stack_gate)
    return Result(
        "gate-off",
        True,
        f"with NodeOverlay=false the {pool} overlays are ignored: the pod stays Pending; Karpenter said '{needle}' "
        f"after {seconds:.0f} s",
        {"seconds_to_event": round(seconds, 1)},
        ["Karpenter restarted with --feature-gates=NodeOverlay=false for this scenario, then with the stack's value"],
    )


def resource_not_registered(ctx: Context, stack: str, team: str) -> Result:
    """No device plugin on the node: NodeClaim Initialized=Unknown/ResourceNotRegistered, never consolidated."""
    pool = _team_pool(ctx, team, stack)
    ctx.agent.unplugged_pools.add(pool)
    deployment = gpu_deployment(ctx, "unplugged", team, pool, 1, {"cores": 50, "mem_mib": 4096})
    try:
        ctx.kubectl.apply([deployment])

        def stuck() -> bool:
            claims = nodeclaims(ctx)
            return bool(claims) and _condition(claims[0], "Initialized").get("reason") == "ResourceNotRegistered"

        seconds = _wait("a NodeClaim Initialized=Unknown, reason ResourceNotRegistered", stuck)
        [claim] = nodeclaims(ctx)
        condition = _condition(claim, "Initialized")
        name = claim["metadata"]["name"]

        def firing() -> bool:
            return any(
                a["state"] == "firing" and a["labels"].get("name") == name
                for a in prometheus.alerts(prometheus.NOT_INITIALIZED_ALERT)
            )

        alert_s = seconds + _wait(f"{prometheus.NOT_INITIALIZED_ALERT} firing for {name}", firing)
        ctx.kubectl.delete([deployment])
        # Empty now: a consolidatable node would go within consolidateAfter; an uninitialized one must stay.
        hold_s = 45
        time.sleep(hold_s)
        remaining = [c["metadata"]["name"] for c in nodeclaims(ctx)]
        if claim["metadata"]["name"] not in remaining:
            raise ScenarioFailure("the uninitialized NodeClaim was consolidated")
    finally:
        ctx.kubectl.delete([deployment])
        ctx.agent.unplugged_pools.discard(pool)
    gone = _wait("the NodeClaim to initialize and consolidate once the plugin runs", lambda: not nodeclaims(ctx), 240)
    return Result(
        "resource-not-registered",
        True,
        f"Initialized={condition['status']} ({condition['reason']}) after {seconds:.0f} s, "
        f"{prometheus.NOT_INITIALIZED_ALERT} firing after {alert_s:.0f} s, still there {hold_s} s after its pods "
        f"left; consolidated {gone:.0f} s after the plugin ran",
        {
            "seconds_to_condition": round(seconds, 1),
            "seconds_to_alert": round(alert_s, 1),
            "held_s": hold_s,
            "message": condition.get("message", ""),
        },
    )


def cpu_limit_blocks_second_node(ctx: Context, stack: str, team: str) -> Result:
    """A `cpu: 10` NodePool limit: one node fits, the second is refused."""
    pool = _team_pool(ctx, team, stack)
    nodepool = _rig_pool(ctx, stack, pool)
    limited = {**nodepool, "spec": {**nodepool["spec"], "limits": {**nodepool["spec"].get("limits", {}), "cpu": "10"}}}
    # cpu 5 fits only types with 8 or more vCPUs; two such nodes exceed 10.
    deployment = gpu_deployment(ctx, "cpu-limited", team, pool, 2, {"cores": 50, "mem_mib": 4096}, cpu="5")
    needle = "all available instance types exceed limits for nodepool"
    try:
        ctx.kubectl.apply([limited])
        ctx.kubectl.apply([deployment])
        seconds = _wait(f"a Karpenter event '{needle}'", lambda: any(needle in e for e in _events(ctx, team)))
        _wait("one pod Running", lambda: len(_running(_pods(ctx, team, "cpu-limited"))) == 1)
        by_type = nodes_by_type(ctx)
    finally:
        ctx.kubectl.delete([deployment])
        ctx.kubectl.apply([nodepool])
    _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 240)
    return Result(
        "cpu-limit",
        True,
        f"limit cpu=10: first node {by_type}, second refused ('{needle}') after {seconds:.0f} s",
        {"nodes_by_type": by_type, "seconds_to_event": round(seconds, 1)},
    )


def disruption_budget(ctx: Context, stack: str, team: str) -> Result:
    """A `nodes: 0` budget whose window covers now keeps an empty node; moved away from now, the same budget lets
    Karpenter consolidate it. Both windows are computed from the clock, so this holds at any hour and weekday."""
    pool = _team_pool(ctx, team, stack)
    nodepool = _rig_pool(ctx, stack, pool)
    now = datetime.now(UTC)

    def with_window(start: datetime, duration: timedelta) -> dict[str, Any]:
        disruption = {**nodepool["spec"]["disruption"], "budgets": [{"nodes": "0", **daily_window(start, duration)}]}
        return {**nodepool, "spec": {**nodepool["spec"], "disruption": disruption}}

    covering = with_window(now - timedelta(hours=1), timedelta(hours=3))
    away = with_window(now + timedelta(hours=12), timedelta(hours=1))
    deployment = gpu_deployment(ctx, "budgeted", team, pool, 1, {"cores": 50, "mem_mib": 4096})
    hold_s = 45
    try:
        ctx.kubectl.apply([covering])
        ctx.kubectl.apply([deployment])
        _wait("the budgeted pod Running", lambda: len(_running(_pods(ctx, team, "budgeted"))) == 1)
        ctx.kubectl.delete([deployment])
        # Empty now: with no budget in force it would go within consolidateAfter (the rig's 15 s).
        time.sleep(hold_s)
        kept = [c["metadata"]["name"] for c in nodeclaims(ctx)]
        if not kept:
            window = covering["spec"]["disruption"]["budgets"]
            raise ScenarioFailure(f"the empty node was consolidated while the nodes: 0 window {window} covered now")
        allowed_in = prometheus.allowed_disruptions(pool)
        if not allowed_in or any(not value.endswith("=0") for value in allowed_in):
            raise ScenarioFailure(f"Karpenter allows disruptions {allowed_in} of {pool} inside the nodes: 0 window")
        ctx.kubectl.apply([away])
        gone = _wait("the empty node consolidated once the window is away from now", lambda: not nodeclaims(ctx), 240)
        allowed_out = prometheus.allowed_disruptions(pool)
    finally:
        ctx.kubectl.delete([deployment])
        ctx.kubectl.apply([nodepool])
    inside, outside = (window["spec"]["disruption"]["budgets"][0]["schedule"] for window in (covering, away))
    return Result(
        "disruption-budget",
        True,
        f"nodes: 0 over now ({inside!r}, 3h): Karpenter allows {allowed_in}, empty node kept {hold_s} s; window "
        f"moved away ({outside!r}, 1h): consolidated after {gone:.0f} s",
        {
            "held_s": hold_s,
            "seconds_to_consolidated": round(gone, 1),
            "allowed_disruptions_inside_window": allowed_in,
            "allowed_disruptions_outside_window": allowed_out,
        },
        ["windows computed from the clock at run time (Karpenter reads budget schedules in UTC)"],
    )


def quota_refuses(ctx: Context, stack: str, team: str) -> Result:
    """A pod beyond the team's ResourceQuota is refused by the API server itself. It asks one vGPU more than
    the quota's requests.nvidia.com/gpu, with small per-GPU requests so the per-GPU limit lets it through."""
    [quota] = [q for q in ctx.plans[stack].of_kind("ResourceQuota") if q["metadata"]["namespace"] == team]
    hard_vgpus = int(quota["spec"]["hard"][f"requests.{ctx.hami.resource_name}"])
    pool = _team_pool(ctx, team, stack)
    template = gpu_deployment(ctx, "over-quota", team, pool, 1, {"gpu": hard_vgpus + 1, "cores": 1, "mem_mib": 1})
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "over-quota", "namespace": team},
        "spec": template["spec"]["template"]["spec"],
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
            lines += [f"event {namespace}: {event}" for event in _events(ctx, namespace)[-10:]]
        except ApiError as error:
            lines.append(f"events of {namespace} not readable: {error}")
    karpenter_log = ctx.log_dir / "karpenter.log"
    if karpenter_log.exists():
        lines += [f"karpenter: {line}" for line in karpenter_log.read_text(errors="replace").splitlines()[-15:]]
    return lines


def _admitted(ctx: Context, pod: dict[str, Any]) -> dict[str, Any]:
    """The pod as the API server would store it, after every admission plugin (server-side dry run)."""
    return json.loads(ctx.kubectl.run(*ctx.kubectl.APPLY, "--dry-run=server", "-o", "json", objects=[pod]))


def team_admission(ctx: Context, stack: str, team: str) -> Result:
    """The team's admission policies, evaluated by the API server on pods that ask HAMi resources."""
    pool = _team_pool(ctx, team, stack)
    annotations = ctx.plans[stack].namespace(team)["metadata"].get("annotations", {})
    expected = {
        "hami.io/node-scheduler-policy": annotations["gpushare.io/node-scheduler-policy"],
        "hami.io/gpu-scheduler-policy": annotations["gpushare.io/gpu-scheduler-policy"],
    }
    spec = gpu_deployment(ctx, "probe", team, pool, 1, {"cores": 50, "mem_mib": 1024})["spec"]["template"]["spec"]

    def pod(name: str, own: dict[str, str], mem_mib: int = 1024) -> dict[str, Any]:
        body = json.loads(json.dumps(spec))
        body["containers"][0]["resources"]["limits"][ctx.hami.resource_mem] = str(mem_mib)
        metadata = {"name": name, "namespace": team, "annotations": own}
        return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": body}

    plain = _admitted(ctx, pod("plain", {}))
    got = {key: plain["metadata"].get("annotations", {}).get(key) for key in expected}
    if got != expected:
        raise ScenarioFailure(f"a pod without annotations came out with {got}, expected the team's {expected}")
    own = {
        "hami.io/node-scheduler-policy": "binpack"
        if expected["hami.io/node-scheduler-policy"] != "binpack"
        else "spread"
    }
    kept = _admitted(ctx, pod("own", own))["metadata"]["annotations"]["hami.io/node-scheduler-policy"]
    if kept != own["hami.io/node-scheduler-policy"]:
        raise ScenarioFailure(f"a pod's own scheduler policy was overwritten with {kept}")
    priority = (plain["spec"].get("priorityClassName"), plain["spec"].get("priority"))
    types = ctx.plans[stack].pool_instance_types()[pool]
    largest_mib = max(ctx.catalog.gpu_model_of(ctx.catalog.instance_type(t)).nvml_memory_mib for t in types)
    try:
        _admitted(ctx, pod("too-big", {}, largest_mib + 1))
    except KubectlError as error:
        refusal = str(error).splitlines()[-1]
    else:
        raise ScenarioFailure(f"a pod asking {largest_mib + 1} MiB on one GPU (largest {largest_mib}) was admitted")
    if str(largest_mib) not in refusal:
        raise ScenarioFailure(f"the refusal does not name the limit {largest_mib}: {refusal}")
    return Result(
        "team-admission",
        True,
        f"{team}: pod without annotations got {expected}, its own kept, priority {priority[0]}={priority[1]}; "
        f"{largest_mib + 1} MiB on one GPU refused",
        {"priority": list(priority), "refusal": refusal},
    )
