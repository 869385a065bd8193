"""The figures of one simulated day, from what the rig recorded (`day.Observations`): pure, so tested without a
rig.

Simulated hours are real seconds divided by the trace's `secondsPerHour`; dollars are node-hours (a NodeClaim
is paid from its creation to its deletion, clipped to the day) at the catalog's on-demand price. The oracle is,
per step, the cheapest per-GPU packing (`packing`) of the pods the trace wants alive then, as if each ran the
moment it was asked for, summed over the day. Waits are real seconds: the rig compresses the trace's clock,
not the controllers'.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable
from typing import Any

from e2e.cluster.device_plugins import NvidiaPluginConfig
from e2e.cluster.errors import RigError
from e2e.cluster.hami_chart import HamiRelease
from e2e.cluster.stack import Plan
from e2e.simulator.day import Observations, PodRecord, Window
from e2e.simulator.mix import node_types, quantity_mib, quantity_millis
from e2e.simulator.packing import NodeType, PodShape, best_packing
from e2e.simulator.trace import PodRequests, Trace, demand_at
from gpushare import names
from gpushare.catalog import Catalog

CONSOLIDATION = ("Underutilized", "Empty")


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (`share` in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


class Pools:
    """What each NodePool of the plan offers the oracle: its instance types as the rig's nodes, GPUs shared its way."""

    def __init__(self, plan: Plan, catalog: Catalog, hami: HamiRelease) -> None:
        self.catalog, self.hami = catalog, hami
        values = plan.helm_values.get(names.NVIDIA_PLUGIN_RELEASE)
        nvidia = NvidiaPluginConfig.from_values(values) if values is not None else None
        self.kinds: dict[str, list[NodeType]] = {}
        self.sharing = plan.pool_sharing()
        instance_types = plan.pool_instance_types()
        for pool in plan.of_kind("NodePool"):
            name = pool["metadata"]["name"]
            kinds = node_types(catalog, instance_types[name], hami)
            if self.sharing[name] != names.SHARING_HAMI:
                slots = 1
                if nvidia is not None and self.sharing[name] == names.SHARING_TIMESLICE:
                    labels = pool["spec"]["template"]["metadata"]["labels"]
                    slots = nvidia.register(labels, 1).get(names.GPU_SHARED, 1)
                kinds = [_whole_gpus(kind, slots) for kind in kinds]
            self.kinds[name] = kinds

    def shape(self, group: PodRequests) -> PodShape:
        hami = self.sharing[group.pool] == names.SHARING_HAMI
        return PodShape(
            group.vgpus,
            (group.gpu_memory_mib or 0) if hami else 0,
            (group.gpu_cores or 0) if hami else 0,
            quantity_millis(group.cpu),
            quantity_mib(group.memory),
        )


def _whole_gpus(kind: NodeType, slots: int) -> NodeType:
    """A node type whose GPUs hold `slots` pods each, whatever they ask (time-slicing does not isolate memory)."""
    return NodeType(kind.name, kind.usd_per_hour, kind.cpu_millis, kind.memory_mib, kind.pods, kind.gpus, slots, 0, 0)


def oracle_per_step(trace: Trace, pools: Pools) -> list[dict[str, float]]:
    """Per step, pool -> $/h of the cheapest per-GPU packing of what the trace wants alive then on that pool."""
    cache: dict[tuple[str, tuple[tuple[PodShape, int], ...]], float] = {}
    per_step = []
    for minute in trace.steps():
        by_pool: dict[str, Counter[PodShape]] = {}
        for group, count in demand_at(trace, minute):
            by_pool.setdefault(group.pool, Counter())[pools.shape(group)] += count
        usd: dict[str, float] = {}
        for pool, shapes in sorted(by_pool.items()):
            key = (pool, tuple(sorted(shapes.items(), key=repr)))
            if key not in cache:
                found = best_packing(list(shapes.elements()), pools.kinds[pool])
                if found is None:
                    raise RigError(f"no instance type of pool {pool} holds every pod the trace asks for")
                cache[key] = found[0]
            usd[pool] = cache[key]
        per_step.append(usd)
    return per_step


def run_document(
    trace: Trace, seen: Observations, pools: Pools, oracle: list[dict[str, float]], identity: dict[str, Any]
) -> dict[str, Any]:
    """The run's figures in the shape e2e.simulator.report reads."""
    scale = trace.seconds_per_hour
    groups = {group.name: group for group in trace.groups}

    def hour(epoch: float) -> float:
        return (epoch - seen.day_start) / scale

    def price(instance_type: str) -> float:
        return pools.catalog.instance_type(instance_type).on_demand_usd_per_hour

    node_hours: Counter[str] = Counter()
    usd_by_pool: Counter[str] = Counter()
    for claim in seen.claims.values():
        start, end = max(claim.created, seen.day_start), min(claim.deleted or seen.day_end, seen.day_end)
        if end > start and claim.instance_type:
            node_hours[claim.instance_type] += (end - start) / scale
            usd_by_pool[claim.pool] += (end - start) / scale * price(claim.instance_type)
    usd_by_type = {t: round(h * price(t), 3) for t, h in sorted(node_hours.items())}
    usd = round(sum(usd_by_type.values()), 3)
    oracle_by_pool: Counter[str] = Counter()
    for step in oracle:
        oracle_by_pool.update({pool: usd * trace.step_minutes / 60 for pool, usd in step.items()})
    oracle_usd = round(sum(oracle_by_pool.values()), 3)
    by_pool = {
        pool: {
            "usd": round(usd_by_pool[pool], 3),
            "oracle_usd": round(oracle_by_pool[pool], 3),
            "ratio": round(usd_by_pool[pool] / oracle_by_pool[pool], 3) if oracle_by_pool[pool] else None,
        }
        for pool in sorted(set(usd_by_pool) | set(oracle_by_pool))
    }
    return {
        "kind": "trace",
        **identity,
        "stack": trace.stack,
        "seconds_per_hour": scale,
        "hours": trace.hours,
        "wall_seconds": round(seen.wall_seconds, 1),
        "wall_seconds_per_simulated_hour": round(seen.wall_seconds / trace.hours, 1),
        "compression": seen.compression,
        "cost": {
            "usd": usd,
            "oracle_usd": oracle_usd,
            "ratio": round(usd / oracle_usd, 3) if oracle_usd else None,
            "node_hours_by_type": {t: round(h, 2) for t, h in sorted(node_hours.items())},
            "usd_by_type": usd_by_type,
            "by_pool": by_pool,
        },
        "timeline": _timeline(trace, seen, pools, oracle, groups, hour, price),
        "waits": _waits(seen),
        "disruptions": _disruptions(seen, groups, hour),
        "nodeclaims": _nodeclaims(seen),
        "never_ran": _never_ran(seen),
    }


def _timeline(
    trace: Trace,
    seen: Observations,
    pools: Pools,
    oracle: list[dict[str, float]],
    groups: dict[str, PodRequests],
    hour: Callable[[float], float],
    price: Callable[[str], float],
) -> list[dict[str, Any]]:
    entries = []
    for sample in seen.samples:
        alive = [
            c for c in seen.claims.values() if c.created <= sample.at < (c.deleted or math.inf) and c.instance_type
        ]
        gpus = [pools.catalog.instance_type(c.instance_type) for c in alive]
        step = min(len(oracle) - 1, int(hour(sample.at) * 60 // trace.step_minutes))
        used_mib = sum(n * groups[g].vgpus * (groups[g].gpu_memory_mib or 0) for g, n in sample.running.items())
        used_cores = sum(n * groups[g].vgpus * (groups[g].gpu_cores or 0) for g, n in sample.running.items())
        entries.append(
            {
                "hour": round(hour(sample.at), 3),
                "usd_per_hour": round(sum(price(c.instance_type) for c in alive), 3),
                "oracle_usd_per_hour": round(sum(oracle[max(0, step)].values()), 3),
                "gpu_memory_used_mib": used_mib,
                "gpu_memory_paid_mib": sum(t.gpu_count * pools.catalog.gpu_model_of(t).nvml_memory_mib for t in gpus),
                "gpu_cores_used": used_cores,
                "gpu_cores_paid": sum(100 * t.gpu_count for t in gpus),
                "pods_running": sum(sample.running.values()),
                "pods_pending": sample.pending,
                "nodes": len(alive),
            }
        )
    return entries


def _wait_figures(pods: list[tuple[PodRecord, float, float]]) -> dict[str, Any]:
    waits = [wait for _, wait, _ in pods]
    return {
        "pods": len(pods),
        "p50_s": round(percentile(waits, 0.5), 1),
        "p95_s": round(percentile(waits, 0.95), 1),
        "max_s": round(max(waits), 1),
        "beyond_launch_max_s": round(max(beyond for _, _, beyond in pods), 1),
    }


def _waits(seen: Observations) -> dict[str, dict[str, Any]]:
    """Creation to Running per pod that ran, and the part of it after its node was initialized (for a pod that
    waited for a new node, the time HAMi and the scheduler took once the node was there)."""
    initialized = {c.node: c.initialized for c in seen.claims.values() if c.node}
    ran = []
    for pod in seen.pods.values():
        if pod.running is None:
            continue
        wait = max(0.0, pod.running - pod.created)
        ready = initialized.get(pod.node or "")
        ran.append((pod, wait, max(0.0, pod.running - max(pod.created, ready or 0.0))))
    by: dict[str, dict[str, Any]] = {"by_team": {}, "by_priority": {}}
    for key, attribute in (("by_team", "team"), ("by_priority", "priority")):
        for value in sorted({getattr(pod, attribute) for pod, _, _ in ran}):
            by[key][value or "(none)"] = _wait_figures([r for r in ran if getattr(r[0], attribute) == value])
    return by


def _disruptions(
    seen: Observations, groups: dict[str, PodRequests], hour: Callable[[float], float]
) -> dict[str, dict[str, int]]:
    """Pods evicted by Karpenter (by the NodeClaim's disruption reason) or preempted by the scheduler; and, per
    team, evictions inside a zero-node budget window of the evicted pod's pool that covers the cause."""
    by_cause: Counter[str] = Counter()
    in_window: Counter[str] = Counter()
    teams = {group.team for group in groups.values()}
    for event in seen.events:
        if event["kind"] != "Pod" or event["reason"] not in ("Evicted", "Preempted"):
            continue
        cause = event["message"].removeprefix("Evicted pod: ") if event["reason"] == "Evicted" else "Preempted"
        by_cause[cause] += event["count"]
        pod = seen.pods.get(event["uid"])
        if pod is None or event["reason"] != "Evicted":
            continue
        minute = hour(event["at"]) * 60
        if any(_holds(window, groups[pod.group].pool, cause, minute) for window in seen.windows):
            in_window[pod.team] += event["count"]
    return {"by_cause": dict(sorted(by_cause.items())), "in_budget_window": {t: in_window[t] for t in sorted(teams)}}


def _holds(window: Window, pool: str, cause: str, minute: float) -> bool:
    applies = not window.reasons or cause in window.reasons
    return window.pool == pool and applies and window.start_minute <= minute < window.end_minute


def _nodeclaims(seen: Observations) -> dict[str, Any]:
    reasons = {claim.name: claim.disruption for claim in seen.claims.values()}
    for event in seen.events:
        if event["kind"] == "NodeClaim" and event["reason"] == "DisruptionTerminating" and event["name"] in reasons:
            reasons[event["name"]] = event["message"].removeprefix("Disrupting NodeClaim: ")
    by_reason = Counter(reason for reason in reasons.values() if reason)
    return {
        "launched": len(seen.claims),
        "consolidated": sum(by_reason[reason] for reason in CONSOLIDATION),
        "by_reason": dict(sorted(by_reason.items())),
    }


def _never_ran(seen: Observations) -> list[dict[str, Any]]:
    """Pods that never ran, grouped by who refused them, what they said (node names as <node>, so one cause is one
    line) and whether the trace removed them while they waited; plus the pods admission refused."""
    karpenter = {
        event["uid"]: event["message"]
        for event in sorted(seen.events, key=lambda e: e["at"])
        if event["reason"] == "FailedScheduling" and event["source"] == "karpenter"
    }
    nodes = sorted({claim.node for claim in seen.claims.values() if claim.node}, key=len, reverse=True)

    def plain(message: str) -> str:
        for node in nodes:
            message = message.replace(node, "<node>")
        return message

    found: Counter[tuple[str, str]] = Counter()
    for pod in seen.pods.values():
        if pod.running is not None:
            continue
        when = "removed while waiting" if pod.gone is not None else "still waiting at the day's end"
        if pod.uid in karpenter:
            found[("karpenter", f"{when}: {plain(karpenter[pod.uid])}")] += 1
        elif pod.pending_message:
            found[(pod.scheduler or "scheduler", f"{when}: {plain(pod.pending_message)}")] += 1
        else:
            found[("nobody", f"{when}, before any scheduler answered")] += 1
    for event in seen.events:
        if event["reason"] == "FailedCreate":
            found[("admission", event["message"])] += event["count"]
    return [
        {"refused_by": who, "message": message[:300], "pods": count}
        for (who, message), count in sorted(found.items(), key=lambda item: (-item[1], item[0]))
    ]
