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
from e2e.node_agent import KWOK_NODE_ANNOTATION, RIG_STACK_LABEL, NodeAgent
from e2e.rig import wait_for
from e2e.stack import KWOK_NODE_CLASS, Plan, daily_window, for_rig, variant_plan
from gpushare import names
from gpushare.catalog import Catalog
from gpushare.hami import SharingProfile, node_capacity
from gpushare.render.alerts import FREE_GPU_MEMORY

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
SCALE_TIMEOUT_S = 180
# The mock polls its node every 30 s and the kubelet stand-in relays its ListAndWatch (every 10 s).
REGISTRATION_TIMEOUT_S = 120
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
    gpu: bool = True,
) -> dict[str, Any]:
    """A Deployment of pause containers asking HAMi resources (names from the HAMi release's values), with
    `shared` one time-sliced GPU replica instead, or without `gpu` no GPU at all (but the pool's toleration)."""
    if not gpu:
        limits = {}
    elif shared:
        limits = {names.GPU_SHARED: "1"}
    else:
        limits = {
            ctx.hami.resource_name: str(vgpu.get("gpu", 1)),
            ctx.hami.resource_cores: str(vgpu["cores"]),
            ctx.hami.resource_mem: str(vgpu["mem_mib"]),
        }
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


DEFAULT_SCHEDULER = "default-scheduler"
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


def condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
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
    seconds = _wait(
        "3 gpu-inference pods Running, placed by HAMi", lambda: len(_bound(_pods(ctx, team, "gpu-inference"))) == 3
    )
    # Karpenter may still be bringing up a claim it launched while the pods were pending: every claim must
    # initialize (the device plugins register), not only the ones the pods landed on.
    _wait(
        "every NodeClaim Initialized",
        lambda: all(condition(c, "Initialized").get("status") == "True" for c in nodeclaims(ctx)),
        60,
    )
    claims = nodeclaims(ctx)
    by_type = nodes_by_type(ctx)
    placement = placed_by_hami(ctx, _bound(_pods(ctx, team, "gpu-inference")))
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
    allocated = f'sum(GPUDeviceMemoryAllocated{{nodeid=~"{nodes}"}}) / 1048576'
    _wait(
        f"HAMi's metrics showing {3 * 4096} MiB allocated",
        lambda: any(float(r["value"][1]) == 3 * 4096 for r in prometheus.query(allocated)),
        60,
    )
    # Healthy nodes must not trip the NodeClaim alert: hold them past its (rig) threshold, then look.
    silent_s = _hold_past_alert_threshold(claims)
    # A healthy cluster running GPU pods: no alert of the stack may be pending or firing (GpuNodeClaimNotInitialized
    # for initialized claims, HamiSchedulerDown while HAMi is scraped, HamiPodUnplaced for placed pods...).
    active = sorted({alert["labels"].get("alertname", "") for alert in prometheus.active_alerts()})
    if active:
        raise ScenarioFailure(f"alerts active on a healthy cluster: {', '.join(active)}")
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
        f"{sum(map(len, placement.values()))} vGPUs of {len(placement)} nodes (HAMi's metrics count them), quota "
        "counts them, no alert of the stack active; "
        f"consolidated {consolidated:.0f} s after scale-down",
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
    schedulers = {pod["spec"].get("schedulerName") for pod in _pods(ctx, team, "notebook")}
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
        f"refused at admission; never handed to HAMi's scheduler; consolidated {consolidated:.0f} s after scale-down",
        figures,
        ["the NVIDIA device plugin is played by the rig's node agent from the release's time-slicing config"],
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

    def running() -> list[dict[str, Any]]:
        return _running([p for w in workloads.values() for p in _pods_of(ctx, w)])

    def hami_pods() -> list[dict[str, Any]]:
        return [p for p in running() if _asks(p, ctx.hami.resource_names)]

    def all_bound() -> bool:
        pods = hami_pods()
        return len(_bound(pods)) == len(pods)

    _wait("HAMi's allocation complete for every running vGPU pod", all_bound)
    vgpu_pods = hami_pods()
    placed_by_hami(ctx, vgpu_pods)
    elsewhere = {p["spec"].get("schedulerName") for p in running() if not _asks(p, ctx.hami.resource_names)}
    if elsewhere - {DEFAULT_SCHEDULER}:
        raise ScenarioFailure(f"pods asking no HAMi resource went to {elsewhere}")
    ctx.kubectl.delete(list(workloads.values()))
    consolidated = _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 300)
    return Result(
        "examples",
        True,
        f"{len(workloads)} example workloads ({pods} pods) ran in {seconds:.0f} s on {by_type} "
        f"(${usd_per_hour(ctx, by_type)}/h), the {len(vgpu_pods)} running vGPU pods placed by HAMi, the others by "
        f"the default scheduler; consolidated {consolidated:.0f} s after deletion",
        {
            "pods": pods,
            "hami_pods_running": len(vgpu_pods),
            "nodes_by_type": by_type,
            "seconds_to_running": round(seconds, 1),
        },
    )


REGISTRATION_TAINT = {"key": "rig.gpushare.io/registration", "value": "only", "effect": "NoSchedule"}


def _registration_nodes(ctx: Context) -> list[tuple[dict[str, Any], dict[str, int], dict[str, int]]]:
    """Per instance type of every HAMi pool of every stack: a fake node of it (the pool's labels, tainted so no
    pod lands), what gpushare's capacity model says it registers, and what the pool's NodeOverlay advertises."""
    found = []
    for stack, plan in sorted(ctx.plans.items()):
        release = HamiRelease.from_values(plan.helm_values[names.HAMI_RELEASE])
        profile = SharingProfile(
            deviceSplitCount=release.split_count,
            deviceMemoryScaling=release.memory_scaling,
            deviceCoreScaling=release.core_scaling,
        )
        overlays = {
            (o["metadata"]["labels"][names.POOL_LABEL], *_requirement(o["spec"], names.INSTANCE_TYPE_LABEL)): o
            for o in plan.of_kind("NodeOverlay")
        }
        for pool in plan.of_kind("NodePool"):
            labels = pool["spec"]["template"]["metadata"]["labels"]
            if labels.get(names.SHARING_LABEL) != names.SHARING_HAMI:
                continue
            for itype in _requirement(pool["spec"]["template"]["spec"], names.INSTANCE_TYPE_LABEL):
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


def _requirement(spec: dict[str, Any], key: str) -> list[str]:
    return next(r["values"] for r in spec["requirements"] if r["key"] == key)


def hami_registration(ctx: Context) -> Result:
    """A node of every instance type of every HAMi pool (dev and prod) registers, through rig-gpu-node's
    device-plugin API and the real mock device plugin, exactly what gpushare's capacity model plans and the
    pool's NodeOverlay advertises: the overlay never promises more than HAMi and the mock register."""
    cases = _registration_nodes(ctx)
    nodes = [node for node, _, _ in cases]
    ctx.kubectl.apply(nodes)

    def registered(node: dict[str, Any]) -> dict[str, int]:
        allocatable = ctx.api.get(f"/api/v1/nodes/{node['metadata']['name']}")["status"].get("allocatable", {})
        return {name: int(allocatable.get(name, "0")) for name in ctx.hami.resource_names}

    try:
        seconds = _wait(
            f"{len(nodes)} registration nodes registering every HAMi resource",
            lambda: all(all(registered(node).values()) for node in nodes),
            REGISTRATION_TIMEOUT_S,
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
        f"{len(cases)} instance types of the HAMi pools of {', '.join(sorted(ctx.plans))}: what the real mock and "
        f"HAMi's device plugin stand-in registered equals the capacity model and the overlay, within {seconds:.0f} s",
        {"registered": figures, "seconds": round(seconds, 1)},
    )


POLICY_ANNOTATIONS = ("hami.io/node-scheduler-policy", "hami.io/gpu-scheduler-policy")
MULTI_GPU_TYPE = "g5.12xlarge"
SEED_POLICY_POOL = "g5-shared"


def _multi_gpu_variant(ctx: Context, stack: str, team: str) -> Plan:
    """The stack with its g5-shared pool on 4-GPU nodes only and `team` given a scheduler policy (node spread,
    GPU binpack), rendered by the real program."""

    def edit(config: dict[str, Any]) -> None:
        for pool in config["gpushare:pools"]:
            if pool["name"] == SEED_POLICY_POOL:
                pool["instanceTypes"] = [MULTI_GPU_TYPE]
                pool["maxGpus"] = 8
        for entry in config["gpushare:teams"]:
            if entry["name"] == team:
                entry["schedulerPolicy"] = {"node": "spread", "gpu": "binpack"}

    return variant_plan(stack, f"{stack}-multi-gpu", ctx.log_dir.parent, edit)


def _bound(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Running pods whose HAMi allocation completed (KWOK may report a pod Running before its device plugin's
    Allocate has run; a kubelet would not start it)."""
    return [p for p in _running(pods) if p["metadata"].get("annotations", {}).get(HAMI_BIND_PHASE) == "success"]


def _placed_one_by_one(
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
        _wait(f"{count} {app} pods Running, placed by HAMi", lambda n=count: len(_bound(_pods(ctx, team, app))) == n)
    pods = _bound(_pods(ctx, team, app))
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


def seed_003_policies(ctx: Context, stack: str, team: str) -> Result:
    """Seed 003 with HAMi placing: on two 4-GPU nodes of a HAMi pool (held by two CPU-heavy pods that ask no GPU),
    four one-vGPU pods per node x GPU binpack/spread combination, each pod's own annotations read by HAMi's
    scheduler; then pods without annotations in a team whose policy admission sets them."""
    variant = _multi_gpu_variant(ctx, stack, team)
    pool = for_rig(
        next(p for p in variant.of_kind("NodePool") if p["metadata"]["name"] == SEED_POLICY_POOL), ctx.started
    )
    overlays = [
        o for o in variant.of_kind("NodeOverlay") if o["metadata"]["labels"][names.POOL_LABEL] == SEED_POLICY_POOL
    ]
    policies = [
        obj
        for obj in variant.objects
        if obj["kind"].startswith("MutatingAdmissionPolicy")
        and "scheduler-policy" in obj["metadata"]["name"]
        and obj["metadata"]["name"].startswith(f"gpushare-{team}-")
    ]
    ballast = gpu_deployment(ctx, "ballast", team, SEED_POLICY_POOL, 2, {}, cpu="30", gpu=False)
    created: list[dict[str, Any]] = [ballast]
    results: dict[str, Any] = {}
    try:
        ctx.kubectl.apply([pool, *overlays])
        ctx.kubectl.apply([ballast])
        _wait("2 ballast pods Running on two nodes", lambda: len(_running(_pods(ctx, team, "ballast"))) == 2)
        nodes = {p["spec"]["nodeName"] for p in _running(_pods(ctx, team, "ballast"))}
        for node_policy in ("binpack", "spread"):
            for gpu_policy in ("binpack", "spread"):
                app = f"node-{node_policy}-gpu-{gpu_policy}"
                deployment = gpu_deployment(ctx, app, team, SEED_POLICY_POOL, 4, {"cores": 10, "mem_mib": 2000})
                deployment["spec"]["template"]["metadata"]["annotations"] = dict(
                    zip(POLICY_ANNOTATIONS, (node_policy, gpu_policy), strict=True)
                )
                created.append(deployment)
                results[app], _ = _placed_one_by_one(ctx, deployment, 4)
                ctx.kubectl.delete([deployment])
                wrong = _policy_holds(node_policy, gpu_policy, results[app], len(nodes))
                if wrong:
                    raise ScenarioFailure(f"{app}: {wrong}: {results[app]}")
        ctx.kubectl.apply(policies)
        plain = gpu_deployment(ctx, "team-policy", team, SEED_POLICY_POOL, 4, {"cores": 10, "mem_mib": 2000})
        probe = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "probe", "namespace": team}}
        probe["spec"] = plain["spec"]["template"]["spec"]

        def in_force() -> bool:
            annotations = _admitted(ctx, probe)["metadata"].get("annotations", {})
            return tuple(annotations.get(key) for key in POLICY_ANNOTATIONS) == ("spread", "binpack")

        # The API server picks up new admission policies asynchronously: a dry run shows when they apply.
        _wait(f"team {team}'s scheduler policy admission in force", in_force, 60)
        created.append(plain)
        results["team-policy"], pods = _placed_one_by_one(ctx, plain, 4)
        got = {tuple(p["metadata"]["annotations"].get(key) for key in POLICY_ANNOTATIONS) for p in pods}
        if got != {("spread", "binpack")}:
            raise ScenarioFailure(f"team {team}'s pods came out with policies {got}, not its spread/binpack")
        wrong = _policy_holds("spread", "binpack", results["team-policy"], len(nodes))
        if wrong:
            raise ScenarioFailure(f"team-policy: {wrong}: {results['team-policy']}")
    finally:
        ctx.kubectl.delete([*created, *policies])
        ctx.kubectl.delete(overlays)
        ctx.kubectl.apply([_rig_pool(ctx, stack, SEED_POLICY_POOL)])
    _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 240)
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


EXCLUSIVE_POOL = "rig-exclusive"


def _with_exclusive_pool(ctx: Context, stack: str) -> Plan:
    """The stack with a one-GPU exclusive pool (one g4dn.xlarge at most) that every team lists."""

    def edit(config: dict[str, Any]) -> None:
        config["gpushare:pools"].append(
            {
                "name": EXCLUSIVE_POOL,
                "instanceTypes": ["g4dn.xlarge"],
                "capacityTypes": ["on-demand"],
                "maxGpus": 1,
                "sharing": "exclusive",
            }
        )
        for team in config["gpushare:teams"]:
            team["pools"].append(EXCLUSIVE_POOL)

    return variant_plan(stack, f"{stack}-exclusive", ctx.log_dir.parent, edit)


def _policies_changed_by(plan: Plan, variant: Plan) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The admission policies a variant renders differently (a team's own pools, its per-GPU bound), and the
    plan's versions of them to restore."""
    own = {p["metadata"]["name"]: p for p in plan.of_kind("ValidatingAdmissionPolicy")}
    changed = [p for p in variant.of_kind("ValidatingAdmissionPolicy") if own.get(p["metadata"]["name"]) != p]
    return changed, [own[p["metadata"]["name"]] for p in changed if p["metadata"]["name"] in own]


def _admits(ctx: Context, pod: dict[str, Any]) -> bool:
    try:
        _admitted(ctx, pod)
    except KubectlError:
        return False
    return True


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


def _pod(ctx: Context, namespace: str, name: str) -> dict[str, Any]:
    return ctx.api.get(f"/api/v1/namespaces/{namespace}/pods/{name}")


def priorities(ctx: Context, stack: str, batch_team: str, critical_team: str) -> Result:
    """A critical team's pod arrives when the pool it shares with a batch team is full. On a HAMi pool
    kube-scheduler cannot preempt for it: HAMi's extender has no preempt verb and its resources are
    ignoredByScheduler, so the batch pods keep their GPUs and the critical pod waits (HAMi #1878). On an
    exclusive pool, where nvidia.com/gpu is the kubelet's own resource, the batch pod is preempted."""
    pool = _team_pool(ctx, critical_team, stack)
    [nodepool] = [p for p in ctx.plans[stack].of_kind("NodePool") if p["metadata"]["name"] == pool]
    limit = int(nodepool["spec"]["limits"][names.GPU])
    types = ctx.plans[stack].pool_instance_types()[pool]
    smallest = min(types, key=lambda t: ctx.catalog.instance_type(t).on_demand_usd_per_hour)
    whole_gpu_mib = ctx.catalog.gpu_model_of(ctx.catalog.instance_type(smallest)).nvml_memory_mib
    # Each batch pod takes a whole GPU's memory on its own node: the pool's vGPU limit allows limit / split nodes.
    nodes = limit // ctx.hami.split_count
    batch = gpu_deployment(ctx, "batch-fill", batch_team, pool, nodes, {"cores": 100, "mem_mib": whole_gpu_mib})
    critical = gpu_deployment(ctx, "critical", critical_team, pool, 1, {"cores": 10, "mem_mib": 2048})
    exclusive = _with_exclusive_pool(ctx, stack)
    [exclusive_pool] = [
        for_rig(p, ctx.started) for p in exclusive.of_kind("NodePool") if p["metadata"]["name"] == EXCLUSIVE_POOL
    ]
    widened, own = _policies_changed_by(ctx.plans[stack], exclusive)
    figures: dict[str, Any] = {"hami_pool": pool, "batch_pods": nodes}
    try:
        ctx.kubectl.apply([batch])
        _wait(
            f"{nodes} batch pods Running (the pool full)",
            lambda: len(_running(_pods(ctx, batch_team, "batch-fill"))) == nodes,
            300,
        )
        ctx.kubectl.apply([critical])
        hold_s = 60
        time.sleep(hold_s)
        pending = [p for p in _pods(ctx, critical_team, "critical") if p.get("status", {}).get("phase") != "Running"]
        survivors = len(_running(_pods(ctx, batch_team, "batch-fill")))
        [critical_pod] = _pods(ctx, critical_team, "critical")
        figures["hami"] = {
            "critical_priority": critical_pod["spec"].get("priority"),
            "critical_pending_after_s": hold_s if pending else 0,
            "batch_pods_running": survivors,
            "nominated_node": critical_pod.get("status", {}).get("nominatedNodeName"),
            "events": _events(ctx, critical_team, about="critical")[-3:],
        }
        if not pending or survivors != nodes:
            raise ScenarioFailure(f"on HAMi pool {pool} the critical pod ran or a batch pod went: {figures['hami']}")
        ctx.kubectl.delete([critical, batch])
        _wait("the HAMi pool empty", lambda: not nodeclaims(ctx), 300)
        ctx.kubectl.apply([exclusive_pool, *widened])
        low = _whole_gpu_pod("batch-whole-gpu", batch_team, EXCLUSIVE_POOL)
        high = _whole_gpu_pod("critical-whole-gpu", critical_team, EXCLUSIVE_POOL)
        _wait("the teams' policies admitting the exclusive pool", lambda: _admits(ctx, low) and _admits(ctx, high), 60)
        ctx.kubectl.apply([low])
        _wait(
            "the batch pod Running on the exclusive pool",
            lambda: _pod(ctx, batch_team, low["metadata"]["name"]).get("status", {}).get("phase") == "Running",
        )
        ctx.kubectl.apply([high])
        seconds = _wait(
            "the critical pod Running on the exclusive pool",
            lambda: _pod(ctx, critical_team, high["metadata"]["name"]).get("status", {}).get("phase") == "Running",
        )
        gone = [e for e in _events(ctx, batch_team, about="batch-whole-gpu") if e.startswith("Preempted")]
        figures["exclusive"] = {"critical_running_after_s": round(seconds, 1), "batch_events": gone}
        if not gone:
            raise ScenarioFailure(f"the critical pod runs on {EXCLUSIVE_POOL} but the batch pod was not preempted")
    finally:
        ctx.kubectl.delete([critical, batch])
        ctx.kubectl.delete(
            [
                _whole_gpu_pod("batch-whole-gpu", batch_team, EXCLUSIVE_POOL),
                _whole_gpu_pod("critical-whole-gpu", critical_team, EXCLUSIVE_POOL),
            ]
        )
        ctx.kubectl.delete([exclusive_pool])
        ctx.kubectl.apply(own)
    _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 300)
    return Result(
        "priorities",
        True,
        f"HAMi pool {pool} full of {nodes} batch pods: the critical pod (priority "
        f"{figures['hami']['critical_priority']}) stays Pending {hold_s} s, no batch pod preempted (no preempt verb in "
        "HAMi's extender); exclusive pool: the batch pod is preempted and the critical pod runs after "
        f"{figures['exclusive']['critical_running_after_s']} s",
        figures,
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
            return bool(claims) and condition(claims[0], "Initialized").get("reason") == "ResourceNotRegistered"

        seconds = _wait("a NodeClaim Initialized=Unknown, reason ResourceNotRegistered", stuck)
        [claim] = nodeclaims(ctx)
        initialized = condition(claim, "Initialized")
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
    the quota's requests.nvidia.com/gpu, one per container (the per-GPU limit allows a container no more vGPUs than
    a node of the team has GPUs) with small per-GPU requests, so only the quota can refuse it."""
    [quota] = [q for q in ctx.plans[stack].of_kind("ResourceQuota") if q["metadata"]["namespace"] == team]
    hard_vgpus = int(quota["spec"]["hard"][f"requests.{ctx.hami.resource_name}"])
    pool = _team_pool(ctx, team, stack)
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


UNPLACED_ALERT = "HamiPodUnplaced"
ONE_GPU_POOL = "g4dn-shared"
# How long the scenario watches Karpenter and HAMi disagree: past the rig's one-minute alert threshold, Karpenter's
# 30 s pod-metrics refresh and a few consolidation rounds.
DISAGREE_WATCH_S = 150
FRAGMENT_MIB = 13000
FRAGMENT_PODS = 6


def _claims_by_pool(ctx: Context) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for claim in nodeclaims(ctx):
        found.setdefault(claim["metadata"]["labels"].get(names.NODEPOOL_LABEL, ""), set()).add(
            claim["metadata"]["name"]
        )
    return found


def _unplaced_alerts() -> set[str]:
    """Pods the stack's HamiPodUnplaced alert fires for (`namespace/name`)."""
    return {
        f"{a['labels'].get('namespace')}/{a['labels'].get('name')}"
        for a in prometheus.alerts(UNPLACED_ALERT)
        if a.get("state") == "firing"
    }


def _hami_refusal(ctx: Context, namespace: str, app: str) -> str:
    """The last FailedScheduling message HAMi's scheduler gave a pod of `app`."""
    messages = [e for e in _events(ctx, namespace, about=app) if e.startswith("FailedScheduling")]
    return messages[-1] if messages else ""


def _watch_disagreement(ctx: Context, team: str, apps: dict[str, str]) -> dict[str, Any]:
    """Watch pods Karpenter finds room for and HAMi does not place, for DISAGREE_WATCH_S: per app, the NodeClaims
    its pool launched (distinct names: a launch/consolidate loop shows as more than one), whether the pod ever
    ran, when HamiPodUnplaced fired for it and HAMi's reason."""
    launched: dict[str, set[str]] = {pool: set() for pool in apps.values()}
    fired: dict[str, float] = {}
    ran: set[str] = set()
    started = time.monotonic()
    while time.monotonic() - started < DISAGREE_WATCH_S:
        for pool, claims in _claims_by_pool(ctx).items():
            launched.setdefault(pool, set()).update(claims)
        firing = _unplaced_alerts()
        for app in apps:
            pods = _pods(ctx, team, app)
            if _running(pods):
                ran.add(app)
            for pod in pods:
                if f"{team}/{pod['metadata']['name']}" in firing:
                    fired.setdefault(app, round(time.monotonic() - started))
        time.sleep(2)
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
        _admitted(ctx, probe)
    except KubectlError as error:
        return str(error).splitlines()[-1]
    return ""


def karpenter_hami_disagree(ctx: Context, stack: str, team: str) -> Result:
    """Where Karpenter's summed view of a node and HAMi's per-GPU placement disagree, what the real pair does and
    how the stack prevents or surfaces it. (1) Without the team's per-GPU admission bound: a container asking 2
    vGPUs on one-GPU nodes, and one asking more memory than one GPU of a 4-GPU node holds; Karpenter launches
    nodes for them, HAMi never places them, HamiPodUnplaced fires. (2) With the bound: both refused at admission,
    naming the limit. (3) Fragmentation, which no admission rule can see: on a pool of 4-GPU nodes, pods that fit
    one per GPU; Karpenter counts room for more on the node and launches nothing, the rest pend, HAMi's own
    metrics show the memory free in sum but not on any one GPU, and the alert fires. (4) Pool design prevents it:
    the same pods on the stack's one-GPU pool all run."""
    variant = _multi_gpu_variant(ctx, stack, team)
    multi_pool = for_rig(
        next(p for p in variant.of_kind("NodePool") if p["metadata"]["name"] == SEED_POLICY_POOL), ctx.started
    )
    overlays = [
        o for o in variant.of_kind("NodeOverlay") if o["metadata"]["labels"][names.POOL_LABEL] == SEED_POLICY_POOL
    ]
    [binding] = [
        b
        for b in ctx.plans[stack].of_kind("ValidatingAdmissionPolicyBinding")
        if b["metadata"]["name"] == f"gpushare-{team}-per-gpu-limit"
    ]
    gpu_mib = ctx.catalog.gpu_model_of(ctx.catalog.instance_type(MULTI_GPU_TYPE)).nvml_memory_mib
    more_vgpus = gpu_deployment(ctx, "more-vgpus", team, ONE_GPU_POOL, 1, {"gpu": 2, "cores": 10, "mem_mib": 1000})
    over_one_gpu = gpu_deployment(ctx, "over-one-gpu", team, SEED_POLICY_POOL, 1, {"cores": 10, "mem_mib": 30000})
    fragmented = gpu_deployment(
        ctx, "fragmented", team, SEED_POLICY_POOL, FRAGMENT_PODS, {"cores": 10, "mem_mib": FRAGMENT_MIB}
    )
    figures: dict[str, Any] = {}
    try:
        ctx.kubectl.apply([multi_pool, *overlays])
        ctx.kubectl.delete([binding])
        _wait("the per-GPU bound out of force", lambda: not _admission_refusal(ctx, more_vgpus), 60)
        ctx.kubectl.apply([more_vgpus, over_one_gpu])
        unbounded = _watch_disagreement(ctx, team, {"more-vgpus": ONE_GPU_POOL, "over-one-gpu": SEED_POLICY_POOL})
        figures["without_admission_bound"] = unbounded
        wrong = {
            app: seen
            for app, seen in unbounded.items()
            if seen["ran"] or not seen["nodeclaims_launched"] or seen["alert_after_s"] is None
        }
        if wrong:
            raise ScenarioFailure(f"expected a node launched, the pod never placed and {UNPLACED_ALERT}: {wrong}")
        ctx.kubectl.delete([more_vgpus, over_one_gpu])
        _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 240)
        ctx.kubectl.apply([binding])
        _wait("the per-GPU bound in force", lambda: bool(_admission_refusal(ctx, more_vgpus)), 60)
        refusals = {d["metadata"]["name"]: _admission_refusal(ctx, d) for d in (more_vgpus, over_one_gpu)}
        figures["admission_refusals"] = refusals
        if "nvidia.com/gpu per container must be at most 1" not in refusals["more-vgpus"] or (
            "nvidia.com/gpumem per container must be at most" not in refusals["over-one-gpu"]
        ):
            raise ScenarioFailure(f"the per-GPU bound did not refuse both pods naming the limit: {refusals}")

        # One at a time up to what the node's GPUs hold (a burst only adds node-lock retries), then the rest.
        fits = ctx.catalog.instance_type(MULTI_GPU_TYPE).gpu_count * (gpu_mib // FRAGMENT_MIB)
        _placed_one_by_one(ctx, fragmented, fits)
        fragmented["spec"]["replicas"] = FRAGMENT_PODS
        ctx.kubectl.apply([fragmented])
        seen = _watch_disagreement(ctx, team, {"fragmented": SEED_POLICY_POOL})["fragmented"]
        pods = _pods(ctx, team, "fragmented")
        placement = placed_by_hami(ctx, _bound(pods))
        free = {
            legend: max(float(s["value"][1]) for s in prometheus.query(f"{how} by (nodeid) ({FREE_GPU_MEMORY})"))
            / 2**20
            for legend, how in (("summed_mib", "sum"), ("largest_on_one_gpu_mib", "max"))
        }
        figures["fragmentation"] = {
            **seen,
            "pods_placed": len(_bound(pods)),
            "pods_pending": len(pods) - len(_bound(pods)),
            "placement": placement,
            "free_gpu_memory": free,
        }
        if (
            seen["nodeclaims_launched"] != 1
            or len(pods) - len(_bound(pods)) != FRAGMENT_PODS - fits
            or seen["alert_after_s"] is None
            or not free["largest_on_one_gpu_mib"] < FRAGMENT_MIB <= free["summed_mib"]
        ):
            raise ScenarioFailure(f"fragmentation did not show as expected: {figures['fragmentation']}")
        ctx.kubectl.delete([fragmented])
        ctx.kubectl.delete(overlays)
        ctx.kubectl.apply([_rig_pool(ctx, stack, SEED_POLICY_POOL)])
        _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 240)

        ctx.kubectl.apply([fragmented])
        seconds = _wait(
            f"{FRAGMENT_PODS} pods placed by HAMi on the one-GPU pool",
            lambda: len(_bound(_pods(ctx, team, "fragmented"))) == FRAGMENT_PODS,
            240,
        )
        one_gpu = placed_by_hami(ctx, _bound(_pods(ctx, team, "fragmented")))
        figures["one_gpu_pool"] = {"seconds": round(seconds, 1), "nodes": nodes_by_type(ctx), "placement": one_gpu}
    finally:
        ctx.kubectl.delete([more_vgpus, over_one_gpu, fragmented])
        ctx.kubectl.delete(overlays)
        ctx.kubectl.apply([_rig_pool(ctx, stack, SEED_POLICY_POOL), binding])
    _wait("every NodeClaim consolidated away", lambda: not nodeclaims(ctx), 240)
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
