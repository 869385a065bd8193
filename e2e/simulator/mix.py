"""`make simulate WORKLOAD=...`: a fixed workload mix through the rig's real Karpenter, and what it costs (a day,
traced or replayed, goes through e2e.simulator.trace or e2e.simulator.replay and e2e.simulator.day instead).

The workload file names a stack and lists pod groups; each group becomes a Deployment of pause containers
in its team's namespace, on its pool. Once every pod is placed and then Karpenter's consolidation has settled
(both times reported), the report gives the nodes by type and their on-demand price against the exact optimum of
the same work (the mix and the stack's warm headroom), GPU memory and cores requested against what the nodes
registered, first-fit, the same pods at one whole GPU each, the fractional lower bound (all requested GPU memory
at the pools' cheapest $/MiB), each node of a pool dearer than its optimum with why Karpenter kept it, and every
pod left Pending with its reason.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from e2e.cluster.errors import RigError
from e2e.cluster.hami_values import HamiValues
from e2e.cluster.instance_types import PODS_PER_NODE
from e2e.cluster.stack import RIG_CONSOLIDATE_AFTER, Plan, rig_nodepool_name
from e2e.cluster.workloads import Context, gpu_deployment, initialized, nodeclaims, nodes_by_type, usd_per_hour
from e2e.simulator.demand import Demand, PodRequests, quantity_mib, quantity_millis
from e2e.simulator.exact import Limit, exact_packing
from e2e.simulator.group_checks import KWOK_RESERVED_CPU_MILLIS, KWOK_RESERVED_MEMORY_MIB, group_problems
from e2e.simulator.packing import NodeType, PodShape, best_packing
from e2e.simulator.replay import load_replay
from e2e.simulator.trace import load_trace
from gpushare import names
from gpushare.capacity import pool_plans
from gpushare.catalog import Catalog
from gpushare.config import StackConfig
from gpushare.errors import UserError, all_errors, key_path
from gpushare.files import read_yaml
from gpushare.metrics import duration_seconds
from gpushare.paths import PROJECT_ROOT
from gpushare.stackfile import read_stack_file
from gpushare.wording import Wording

# "Settled" means nothing changed for longer than kube-scheduler takes to retry a pod it found unschedulable:
# with HAMi, a pod tried before HAMi has read its new node waits in the unschedulable queue until a cluster event
# or the periodic flush moves it (seen: about 55 s in seed-scale-up). A shorter window declared pods pending
# that were only waiting for that retry.
SETTLE_S = 90
SIMULATE_TIMEOUT_S = 600
# Consolidation has settled when no NodeClaim was launched, initialized, marked for deletion or deleted and no pod
# changed phase for longer than one of Karpenter's consolidation rounds takes on the rig: the rig's consolidateAfter,
# Karpenter's 10 s disruption poll and 15 s validation, and the node's termination (CONSOLIDATION_BOUND_S of the
# scenarios), with room, so the pause between two rounds is not taken for the end.
CONSOLIDATED_S = int(duration_seconds(RIG_CONSOLIDATE_AFTER) or 0) + 10 + 15 + 20
# After every pod is placed, the longest the simulation waits for consolidation; past it the report says so.
CONSOLIDATION_TIMEOUT_S = 600
# Karpenter's events on a Node or NodeClaim saying why it does not disrupt it (kubernetes-sigs/karpenter
# pkg/controllers/disruption/events).
KARPENTER_KEPT = ("DisruptionBlocked", "Unconsolidatable")


class PodGroup(BaseModel):
    """`count` identical pods of one team on one pool."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=r"^[a-z]([-a-z0-9]{0,40}[a-z0-9])?$")
    team: str
    pool: str
    count: int = Field(ge=1, le=1000)
    vgpus: int = Field(default=1, ge=1, le=16)
    gpu_memory_mib: int = Field(alias="gpuMemoryMib", ge=1)
    gpu_cores: int = Field(alias="gpuCores", ge=1, le=100)
    cpu: str = Field(default="500m", pattern=r"^[0-9]+m?$")
    memory: str = Field(default="1Gi", pattern=r"^[0-9]+(Mi|Gi)$")

    def requests(self) -> dict[str, Any]:
        """What each pod asks, as a trace's group would write it (so one capacity check judges both)."""
        return self.model_dump(by_alias=True, exclude={"count"})


class Workload(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    stack: Literal["dev", "prod"]
    pods: tuple[PodGroup, ...] = Field(min_length=1)


# Keys only a trace has: a file with any of them is a trace, whatever else it holds.
TRACE_KEYS = ("deployments", "jobs", "secondsPerHour", "hours", "stepMinutes", "weekday", "variants")


def workload_problems(raw: Any, config: dict[str, Any] | None) -> list[str]:
    """Every problem of a fixed mix, one line each as `key: problem`: the schema's, and with the stack's `config`
    map each group's team, pool and what the pool can hold, over every group valid on its own."""
    lines: dict[str, str] = {}
    try:
        Workload.model_validate(raw)
    except ValidationError as error:
        lines.update(
            (problem.key, str(problem).removeprefix(f"{problem.key}: "))
            for problem in all_errors(error, lambda loc: key_path("", loc) or "(top level)", Wording(Workload)).errors
        )
    items = raw.get("pods") if isinstance(raw, dict) else None
    groups, seen = [], {}
    for index, item in enumerate(items if isinstance(items, list) else []):
        name = item.get("name") if isinstance(item, dict) else None
        if isinstance(name, str) and name in seen:
            lines[f"pods[{index}].name"] = f"{name!r} is used by {seen[name]} too"
        seen.setdefault(name, f"pods[{index}]")
        try:
            groups.append((f"pods[{index}]", PodGroup.model_validate(item)))
        except ValidationError:
            continue
    if config is not None and isinstance(raw, dict) and raw.get("stack") in ("dev", "prod"):
        requests = [(where, PodRequests.model_validate(group.requests())) for where, group in groups]
        problems = group_problems(str(raw["stack"]), config, requests)
        sharing = {pool["name"]: pool.get("sharing") for pool in config.get("gpushare:pools", [])}
        for where, group in groups:
            if sharing.get(group.pool, names.SHARING_HAMI) != names.SHARING_HAMI:
                problems.append(
                    (
                        f"{where}.pool",
                        f"{group.pool} shares GPUs by {sharing[group.pool]}; a fixed mix asks HAMi vGPUs (use a "
                        "trace for other pools)",
                    )
                )
        for key, problem in problems:
            lines[key] = f"{lines[key]}; {problem}" if key in lines else problem
    return [f"{key}: {problem}" for key, problem in lines.items()]


def load_workload(path: Path, config: dict[str, Any] | None = None) -> Workload:
    """The workload file, or a UserError with one line per problem naming the key (with the stack's `config`
    map, also each group's team and pool and what the pool can hold)."""
    raw = read_yaml(path)
    problems = workload_problems(raw, config)
    if problems:
        raise UserError("\n".join(f"{path}: {problem}" for problem in problems))
    return Workload.model_validate(raw)


def load_simulation(path: Path, mapping: Path | None = None) -> Workload | Demand:
    """A fixed mix (a file with `pods` and none of a trace's keys), a trace of a day, or with `mapping` a pod list
    replayed; each checked against its stack's config, every problem at once (UserError)."""
    configs = {stack: read_stack_file(PROJECT_ROOT / f"Pulumi.{stack}.yaml") for stack in ("dev", "prod")}
    if mapping is not None:
        return load_replay(path, mapping, configs)
    data = read_yaml(path)
    stack = data.get("stack") if isinstance(data, dict) else None
    config = configs.get(stack) if isinstance(stack, str) else None
    if isinstance(data, dict) and "pods" in data and not any(key in data for key in TRACE_KEYS):
        return load_workload(path, config)
    return load_trace(path, config).demand()


def whole_gpu_cost(catalog: Catalog, pool_types: dict[str, list[str]], workload: Workload) -> float:
    """Each pod on GPUs of its own (vgpus whole GPUs), at its pool's cheapest price per GPU."""
    total = 0.0
    for group in workload.pods:
        per_gpu = min(
            catalog.instance_type(t).on_demand_usd_per_hour / catalog.instance_type(t).gpu_count
            for t in pool_types[group.pool]
        )
        total += group.count * group.vgpus * per_gpu
    return round(total, 3)


def fractional_lower_bound(catalog: Catalog, pool_types: dict[str, list[str]], workload: Workload) -> float:
    """All requested GPU memory at the cheapest $/MiB of the pools' types: no packing can cost less."""
    types = {t for group in workload.pods for t in pool_types[group.pool]}
    per_mib = min(
        catalog.instance_type(t).on_demand_usd_per_hour
        / (catalog.instance_type(t).gpu_count * catalog.gpu_model_of(catalog.instance_type(t)).nvml_memory_mib)
        for t in types
    )
    requested = sum(group.count * group.gpu_memory_mib for group in workload.pods)
    return round(requested * per_mib, 3)


def node_types(catalog: Catalog, types: list[str], hami: HamiValues) -> list[NodeType]:
    """The pool's instance types as the rig's nodes offer them: kwok's allocatable, GPUs as HAMi slices them."""
    kinds = []
    for name in types:
        itype = catalog.instance_type(name)
        kinds.append(
            NodeType(
                name=name,
                usd_per_hour=itype.on_demand_usd_per_hour,
                cpu_millis=itype.vcpu * 1000 - KWOK_RESERVED_CPU_MILLIS,
                memory_mib=itype.memory_mib - KWOK_RESERVED_MEMORY_MIB,
                pods=PODS_PER_NODE,
                gpus=itype.gpu_count,
                split=hami.split_count,
                gpu_memory_mib=int(catalog.gpu_model_of(itype).nvml_memory_mib * hami.memory_scaling),
                gpu_cores=int(100 * hami.core_scaling),
            )
        )
    return kinds


def pool_kinds(config: StackConfig, catalog: Catalog) -> dict[str, tuple[list[NodeType], Limit]]:
    """Pool name -> its instance types as the rig's nodes offer them (kwok's allocatable, GPUs as the domain layer's
    capacity model registers them: gpushare.capacity) and its NodePool limit with what one node of each type counts
    against it. HAMi pools share each GPU's memory and cores among `deviceSplitCount` vGPUs; exclusive and
    time-sliced GPUs hold one pod or `replicas` pods each, whatever they ask (time-slicing isolates no memory)."""
    found = {}
    for name, plan in pool_plans(config).items():
        hami = {capacity.instance_type: capacity for capacity in plan.capacities}
        kinds = []
        for node in plan.nodes:
            itype = catalog.instance_type(node.instance_type)
            capacity = hami.get(itype.name)
            if capacity is not None:
                split = capacity.vgpus // capacity.gpus
                memory, cores = capacity.vgpu_max_memory_mib, capacity.gpu_cores // capacity.gpus
            else:
                split, memory, cores = node.resources[plan.limit_resource] // itype.gpu_count, 0, 0
            kinds.append(
                NodeType(
                    name=itype.name,
                    usd_per_hour=itype.on_demand_usd_per_hour,
                    cpu_millis=itype.vcpu * 1000 - KWOK_RESERVED_CPU_MILLIS,
                    memory_mib=itype.memory_mib - KWOK_RESERVED_MEMORY_MIB,
                    pods=PODS_PER_NODE,
                    gpus=itype.gpu_count,
                    split=split,
                    gpu_memory_mib=memory,
                    gpu_cores=cores,
                )
            )
        units = {node.instance_type: node.resources[plan.limit_resource] for node in plan.nodes}
        found[name] = (kinds, (plan.node_pool_limit, units))
    return found


def pod_shapes(workload: Workload, pool: str) -> list[PodShape]:
    """The pool's pods of the mix, one shape per pod."""
    return [
        PodShape(
            group.vgpus, group.gpu_memory_mib, group.gpu_cores, quantity_millis(group.cpu), quantity_mib(group.memory)
        )
        for group in workload.pods
        if group.pool == pool
        for _ in range(group.count)
    ]


def headroom_pods(plan: Plan, hami: HamiValues) -> dict[str, list[PodShape]]:
    """Pool -> the warm pods the stack's CapacityBuffers keep room for there (their PodTemplates' containers): work
    the rig's Karpenter keeps nodes for whatever the mix asks, so the optimum counts it too."""
    templates = {
        (t["metadata"]["namespace"], t["metadata"]["name"]): t["template"]["spec"] for t in plan.of_kind("PodTemplate")
    }
    found: dict[str, list[PodShape]] = {}
    for buffer in plan.of_kind("CapacityBuffer"):
        spec = templates[(buffer["metadata"]["namespace"], buffer["spec"]["podTemplateRef"]["name"])]
        resources = spec["containers"][0]["resources"]
        limits, requests = resources.get("limits", {}), resources.get("requests", {})
        shape = PodShape(
            int(limits.get(names.GPU, 1)),
            int(limits.get(hami.resource_mem, 0)),
            int(limits.get(hami.resource_cores, 0)),
            quantity_millis(requests.get("cpu", "0")),
            quantity_mib(requests.get("memory", "0Mi")),
        )
        pool = spec["nodeSelector"][names.POOL_LABEL]
        found.setdefault(pool, []).extend([shape] * buffer["spec"]["replicas"])
    return found


def packing_bound(
    catalog: Catalog,
    pool_types: dict[str, list[str]],
    workload: Workload,
    hami: HamiValues,
    headroom: dict[str, list[PodShape]] | None = None,
) -> dict[str, Any]:
    """Each pool's pods (with `headroom`, the warm pods the stack keeps room for, on every pool that has them)
    packed two ways, summed over the pools: first-fit per GPU (e2e.simulator.packing, the figure runs were compared
    with before) and the exact optimum with its proven bound (e2e.simulator.exact; the pools' NodePool limits are
    not applied, so it is a bound the rig cannot beat either way)."""
    headroom = headroom or {}
    usd, optimum, bound = 0.0, 0.0, 0.0
    by_type: Counter[str] = Counter()
    optimal_types: Counter[str] = Counter()
    statuses, by_pool = {}, {}
    for pool in sorted({group.pool for group in workload.pods} | set(headroom)):
        pods = pod_shapes(workload, pool) + headroom.get(pool, [])
        kinds = node_types(catalog, pool_types[pool], hami)
        found = best_packing(pods, kinds)
        if found is None:
            raise RigError(f"no instance type of pool {pool} holds every pod of the workload")
        usd += found[0]
        by_type.update(found[1])
        exact = exact_packing(pods, kinds)
        optimum += exact.usd_per_hour
        bound += exact.lower_bound_usd
        optimal_types.update(exact.nodes_by_type())
        statuses[pool] = exact.status
        by_pool[pool] = {"usd_per_hour": round(exact.usd_per_hour, 3), "nodes_by_type": exact.nodes_by_type()}
    return {
        "usd_per_hour": round(usd, 3),
        "nodes_by_type": dict(sorted(by_type.items())),
        "optimum_usd_per_hour": round(optimum, 3),
        "optimum_lower_bound_usd_per_hour": round(bound, 3),
        "optimum_nodes_by_type": dict(sorted(optimal_types.items())),
        "optimum_status": statuses,
        "optimum_by_pool": by_pool,
    }


def _deployment(ctx: Context, group: PodGroup) -> dict[str, Any]:
    deployment = gpu_deployment(
        ctx,
        group.name,
        group.team,
        group.pool,
        group.count,
        {"gpu": group.vgpus, "cores": group.gpu_cores, "mem_mib": group.gpu_memory_mib},
        cpu=group.cpu,
    )
    deployment["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["memory"] = group.memory
    return deployment


def _running(ctx: Context, workload: Workload) -> int:
    return sum(
        pod.get("status", {}).get("phase") == "Running"
        for team in {g.team for g in workload.pods}
        for pod in ctx.api.items(f"/api/v1/namespaces/{team}/pods")
    )


def _nodes_state(ctx: Context) -> tuple[tuple[str, bool, bool], ...]:
    """Each NodeClaim of the stack's pools: its name, whether it is initialized and whether it is being deleted."""
    return tuple(
        sorted(
            (claim["metadata"]["name"], initialized(claim), "deletionTimestamp" in claim["metadata"])
            for claim in nodeclaims(ctx)
        )
    )


def simulate(ctx: Context, workload: Workload) -> dict[str, Any]:
    """Apply the workload, wait until every pod is placed (or nothing changes for SETTLE_S), then until Karpenter's
    consolidation has settled (CONSOLIDATED_S without a change, at most CONSOLIDATION_TIMEOUT_S more), and
    measure; the two waits are reported apart."""
    deployments = [_deployment(ctx, group) for group in workload.pods]
    ctx.kubectl.apply(deployments)
    wanted = sum(group.count for group in workload.pods)
    started = time.monotonic()
    last, stable_since = None, started
    launched: set[str] = set()
    while True:
        state = (_running(ctx, workload), _nodes_state(ctx))
        launched.update(name for name, _, _ in state[1])
        if state != last:
            last, stable_since = state, time.monotonic()
        running, claims = state
        settled = time.monotonic() - stable_since > SETTLE_S and all(ready for _, ready, _ in claims)
        if running == wanted or settled:
            break
        if time.monotonic() - started > SIMULATE_TIMEOUT_S:
            raise RigError(f"the workload did not settle within {SIMULATE_TIMEOUT_S} s (state {state})")
        time.sleep(2)
    placed_s = time.monotonic() - started
    consolidated = False
    while time.monotonic() - placed_s - started < CONSOLIDATION_TIMEOUT_S:
        state = (_running(ctx, workload), _nodes_state(ctx))
        launched.update(name for name, _, _ in state[1])
        if state != last:
            last, stable_since = state, time.monotonic()
        claims = state[1]
        if time.monotonic() - stable_since > CONSOLIDATED_S and all(ready and not gone for _, ready, gone in claims):
            consolidated = True
            break
        time.sleep(2)
    result = _measure(ctx, workload, placed_s, stable_since - started if consolidated else None)
    return {**result, "nodeclaims_launched": len(launched)}


def _measure(ctx: Context, workload: Workload, placed_s: float, consolidated_s: float | None) -> dict[str, Any]:
    catalog = ctx.catalog
    by_type = nodes_by_type(ctx)
    registered = {ctx.hami.resource_mem: 0, ctx.hami.resource_cores: 0}
    for node in ctx.api.items("/api/v1/nodes"):
        for resource in registered:
            registered[resource] += int(node["status"].get("allocatable", {}).get(resource, "0"))
    requested = {ctx.hami.resource_mem: 0, ctx.hami.resource_cores: 0}
    pending = []
    on_node: dict[str, list[dict[str, Any]]] = {}
    for team in sorted({g.team for g in workload.pods}):
        for pod in ctx.api.items(f"/api/v1/namespaces/{team}/pods"):
            limits = pod["spec"]["containers"][0]["resources"]["limits"]
            if pod.get("status", {}).get("phase") == "Running":
                on_node.setdefault(pod["spec"].get("nodeName", ""), []).append(pod)
                for resource in requested:
                    requested[resource] += int(limits.get(resource, "0"))
            else:
                conditions = pod.get("status", {}).get("conditions", [])
                reason = next((c.get("message", "") for c in conditions if c["type"] == "PodScheduled"), "")
                pending.append(f"{team}/{pod['metadata']['name']}: {reason or 'not scheduled yet'}")
        for event in ctx.api.items(f"/api/v1/namespaces/{team}/events"):
            if event.get("reason") == "FailedCreate":
                pending.append(f"{team}/{event['involvedObject']['name']}: {event.get('message', '')}")
    pool_types = ctx.plans[workload.stack].pool_instance_types()
    wanted = sum(group.count for group in workload.pods)
    headroom = headroom_pods(ctx.plans[workload.stack], ctx.hami)
    best = packing_bound(catalog, pool_types, workload, ctx.hami, headroom)
    alone = packing_bound(catalog, pool_types, workload, ctx.hami) if headroom else best
    nodes = _rig_nodes(ctx, on_node)
    by_pool = _by_pool(catalog, nodes, best["optimum_by_pool"])
    return {
        "stack": workload.stack,
        "pods": wanted,
        "running": sum(len(pods) for pods in on_node.values()),
        "seconds_to_place": round(placed_s, 1),
        "seconds_to_consolidate": None if consolidated_s is None else round(consolidated_s, 1),
        "consolidation_wait_s": {"stable": CONSOLIDATED_S, "at_most": CONSOLIDATION_TIMEOUT_S},
        "nodes_by_type": by_type,
        "usd_per_hour": usd_per_hour(ctx, by_type),
        "by_pool": by_pool,
        "dearer_nodes": dearer_nodes(nodes, by_pool, _policies(ctx.plans[workload.stack])),
        "gpu_memory_used_percent": _percent(requested[ctx.hami.resource_mem], registered[ctx.hami.resource_mem]),
        "gpu_cores_used_percent": _percent(requested[ctx.hami.resource_cores], registered[ctx.hami.resource_cores]),
        "one_pod_per_whole_gpu_usd_per_hour": whole_gpu_cost(catalog, pool_types, workload),
        "fractional_lower_bound_usd_per_hour": fractional_lower_bound(catalog, pool_types, workload),
        "best_packing_usd_per_hour": best["usd_per_hour"],
        "best_packing_nodes_by_type": best["nodes_by_type"],
        "optimal_packing_usd_per_hour": best["optimum_usd_per_hour"],
        "optimal_packing_lower_bound_usd_per_hour": best["optimum_lower_bound_usd_per_hour"],
        "optimal_packing_nodes_by_type": best["optimum_nodes_by_type"],
        "optimal_packing_status": best["optimum_status"],
        "headroom_pods": {pool: len(pods) for pool, pods in sorted(headroom.items())},
        "optimal_packing_without_headroom_usd_per_hour": alone["optimum_usd_per_hour"],
        "pending": sorted(set(pending)),
    }


@dataclass(frozen=True)
class RigNode:
    """One NodeClaim as the measurement saw it: its pool (the stack's name), type, pods and GPU memory, and
    Karpenter's last word on why it left the node (its DisruptionBlocked or Unconsolidatable event)."""

    name: str
    pool: str
    instance_type: str
    pods: int
    gpu_memory_used_mib: int
    gpu_memory_mib: int
    karpenter: str = ""


def _rig_nodes(ctx: Context, on_node: dict[str, list[dict[str, Any]]]) -> list[RigNode]:
    """The stack's NodeClaims with what runs on them and Karpenter's last event about each."""
    stack_pool = {rig_nodepool_name(pool): pool for pool in ctx.plan.pool_instance_types()}
    said: dict[str, tuple[str, str]] = {}
    for event in ctx.api.items("/api/v1/events"):
        if event.get("reason") in KARPENTER_KEPT and event["involvedObject"].get("kind") in ("Node", "NodeClaim"):
            at = event.get("lastTimestamp") or event.get("eventTime") or ""
            name = event["involvedObject"]["name"]
            if at >= said.get(name, ("", ""))[0]:
                said[name] = (at, f"{event['reason']}: {event.get('message', '')}")
    nodes = {node["metadata"]["name"]: node for node in ctx.api.items("/api/v1/nodes")}
    found = []
    for claim in nodeclaims(ctx):
        node_name = claim.get("status", {}).get("nodeName", "")
        pods = on_node.get(node_name, [])
        allocatable = nodes.get(node_name, {}).get("status", {}).get("allocatable", {})
        found.append(
            RigNode(
                name=claim["metadata"]["name"],
                pool=stack_pool.get(claim["metadata"]["labels"].get(names.NODEPOOL_LABEL, ""), ""),
                instance_type=claim["metadata"]["labels"][names.INSTANCE_TYPE_LABEL],
                pods=len(pods),
                gpu_memory_used_mib=sum(
                    int(p["spec"]["containers"][0]["resources"]["limits"].get(ctx.hami.resource_mem, "0")) for p in pods
                ),
                gpu_memory_mib=int(allocatable.get(ctx.hami.resource_mem, "0")),
                karpenter=(said.get(claim["metadata"]["name"]) or said.get(node_name) or ("", ""))[1],
            )
        )
    return found


def _policies(plan: Plan) -> dict[str, str]:
    """Pool -> its consolidation policy."""
    return {
        pool["metadata"]["name"]: pool["spec"].get("disruption", {}).get("consolidationPolicy", "")
        for pool in plan.of_kind("NodePool")
    }


def _by_pool(catalog: Catalog, nodes: list[RigNode], optimum: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per pool of the mix or of a node: the rig's nodes and $/h beside the optimum's."""
    found = {}
    for pool in sorted({node.pool for node in nodes} | set(optimum)):
        types = Counter(node.instance_type for node in nodes if node.pool == pool)
        usd = sum(catalog.instance_type(t).on_demand_usd_per_hour * n for t, n in types.items())
        best = optimum.get(pool, {"usd_per_hour": 0.0, "nodes_by_type": {}})
        found[pool] = {
            "usd_per_hour": round(usd, 3),
            "nodes_by_type": dict(sorted(types.items())),
            "optimum_usd_per_hour": best["usd_per_hour"],
            "optimum_nodes_by_type": best["nodes_by_type"],
        }
    return found


def dearer_nodes(
    nodes: list[RigNode], by_pool: dict[str, dict[str, Any]], policies: dict[str, str]
) -> list[dict[str, Any]]:
    """On every pool that costs more than its optimum, each node and why Karpenter kept it as it is: its own last
    word on the node, or else empty (not yet removed) or a pool that consolidates only empty nodes."""
    found = []
    for node in sorted(nodes, key=lambda n: (n.pool, n.gpu_memory_used_mib, n.name)):
        pool = by_pool.get(node.pool, {})
        if pool.get("usd_per_hour", 0.0) <= pool.get("optimum_usd_per_hour", 0.0) + 0.001:
            continue
        if node.karpenter:
            why = f"Karpenter: {node.karpenter}"
        elif not node.pods:
            why = "empty, and Karpenter had not removed it when the wait ended"
        elif policies.get(node.pool) == "WhenEmpty":
            why = "the pool's consolidationPolicy is WhenEmpty: Karpenter removes only empty nodes"
        else:
            why = "Karpenter said nothing about it (it found no cheaper consolidation)"
        found.append(
            {
                "pool": node.pool,
                "nodeclaim": node.name,
                "instance_type": node.instance_type,
                "pods": node.pods,
                "gpu_memory_used_mib": node.gpu_memory_used_mib,
                "gpu_memory_mib": node.gpu_memory_mib,
                "why": why,
            }
        )
    return found


def _against(result: dict[str, Any]) -> str:
    """The rig's cost as a multiple of the optimum."""
    optimum = result["optimal_packing_usd_per_hour"]
    return f"{result['usd_per_hour'] / optimum:.2f}x" if optimum else "-"


def _proof(result: dict[str, Any]) -> str:
    """Proven optimal, or the pools where the solver's limit left a gap, with the bound."""
    open_pools = [
        f"{pool} {status}" for pool, status in result["optimal_packing_status"].items() if status != "optimal"
    ]
    if not open_pools:
        return "proven optimal"
    return f"not proven: {', '.join(open_pools)}; lower bound ${result['optimal_packing_lower_bound_usd_per_hour']}/h"


def _percent(used: int, available: int) -> float:
    return round(100 * used / available, 1) if available else math.nan


def _types(nodes: dict[str, int]) -> str:
    return ", ".join(f"{n} x {t}" for t, n in sorted(nodes.items())) or "none"


def _consolidation(result: dict[str, Any]) -> str:
    """When the nodes last changed, or that they still changed when the wait ended."""
    waits = result["consolidation_wait_s"]
    if result["seconds_to_consolidate"] is None:
        return f"nodes still changing {waits['at_most']} s after the pods were placed"
    return f"nodes consolidated after {result['seconds_to_consolidate']:.0f} s (then {waits['stable']} s unchanged)"


def _with_headroom(result: dict[str, Any]) -> str:
    """What the optimum holds beside the mix: the warm pods the stack keeps room for, and the mix alone's cost."""
    headroom = result["headroom_pods"]
    if not headroom:
        return ""
    pools = ", ".join(f"{n} pods on {pool}" for pool, n in headroom.items())
    return (
        f" of the mix and the stack's warm headroom ({pools}; the mix alone "
        f"${result['optimal_packing_without_headroom_usd_per_hour']}/h)"
    )


def table(result: dict[str, Any]) -> str:
    lines = [
        f"stack {result['stack']}: {result['running']}/{result['pods']} pods running; placed after "
        f"{result['seconds_to_place']:.0f} s, {_consolidation(result)}",
        "nodes: "
        + _types(result["nodes_by_type"])
        + f" ({sum(result['nodes_by_type'].values())} of the {result['nodeclaims_launched']} NodeClaims Karpenter "
        "launched)",
        f"cost: ${result['usd_per_hour']}/h, {_against(result)} the optimum{_with_headroom(result)}: "
        f"${result['optimal_packing_usd_per_hour']}/h on {_types(result['optimal_packing_nodes_by_type'])} "
        f"({_proof(result)})",
        f"beside it: first-fit per GPU ${result['best_packing_usd_per_hour']}/h on "
        + _types(result["best_packing_nodes_by_type"])
        + f", one pod per whole GPU ${result['one_pod_per_whole_gpu_usd_per_hour']}/h, fractional lower bound "
        f"${result['fractional_lower_bound_usd_per_hour']}/h",
        f"GPU memory used {result['gpu_memory_used_percent']}%, GPU cores used {result['gpu_cores_used_percent']}% "
        "of what the nodes registered",
    ]
    for name, pool in result["by_pool"].items():
        if pool["usd_per_hour"] > pool["optimum_usd_per_hour"] + 0.001:
            lines.append(
                f"pool {name} dearer than its optimum: ${pool['usd_per_hour']}/h on {_types(pool['nodes_by_type'])} "
                f"against ${pool['optimum_usd_per_hour']}/h on {_types(pool['optimum_nodes_by_type'])}; its nodes:"
            )
            lines += [
                f"  {node['nodeclaim']} ({node['instance_type']}): {node['pods']} pods, GPU memory "
                f"{node['gpu_memory_used_mib']} of {node['gpu_memory_mib']} MiB; {node['why']}"
                for node in result["dearer_nodes"]
                if node["pool"] == name
            ]
    lines += [f"pending: {reason}" for reason in result["pending"]]
    return "\n".join(lines)
