"""The figures of one simulated day, from what the rig recorded (`day.Observations`): pure, so tested without a
rig.

Simulated minutes are real seconds since the day's start times 60 / `secondsPerHour`; dollars are node-hours at
the catalog's on-demand price. What a run is compared with comes from e2e.simulator.oracle (the oracle and the
policy-aware bound, over the demand the stack admits, at exact event times).

The run's bill, two ways:
- **raw**: each NodeClaim from its creation to its deletion, in simulated time, over [00:00, the horizon] (the
  day's end, or later when a batch asked for ran past it). A node that holds no Deployment pod at the horizon is
  billed until it is gone: its late batch and its teardown are the run's own cost.
- **latency-corrected**: the controllers are not compressed, so every real second a node spends waiting on them
  costs `3600 / secondsPerHour` seconds of node time in the raw bill. The corrected bill keeps the node's serving
  time (from its first pods running to its last pod gone, plus the pool's `consolidateAfter` as designed) in
  simulated time, and bills the real seconds it waited on controllers at full scale (1:1): from its launch to the
  pods it was launched for running, and from its last pod gone to its deletion less the rig's scaled
  `consolidateAfter`, plus `BOOT_S` for the instance to boot (which the rig's nodes do not). The difference is the
  rig's compression, in dollars. Because the waits are measured in every run, the correction holds whatever
  the controllers' speed: faster controllers only shrink what it removes.
Both sides of every ratio cover the same span: the day up to the horizon, and the tail after it to where the
run's bill ends (nodes still serving late jobs), in which the oracle and the policy bound serve the same late jobs
(`oracle.Bounds.tail_usd`); the document gives the two parts apart (`cost.within_day`, `cost.tail`).
Waits are real seconds (the controllers' own).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from e2e.simulator.day import ClaimRecord, Observations, PodRecord
from e2e.simulator.demand import Demand, PodRequests
from e2e.simulator.oracle import Bounds, Pools
from gpushare import names

CONSOLIDATION = ("Underutilized", "Empty")
# What an EC2 GPU instance takes from launch to Ready with its device plugins registered, which the rig's KWOK
# nodes skip: assumed, not measured here (third-party reports put a Karpenter GPU node at one to five minutes
# including image pulls). Measure your own from NodeClaim Launched to Initialized and set it here.
BOOT_S = 120.0
# The longest the rig was seen to take from a node's launch to its pods running (49 s: short-day at 120 s per
# simulated hour; inference-day's runs at 20 s, up to 42 s): Karpenter's batching and launch, HAMi binding a node's
# pods one at a time under its node lock. A Deployment pod the day keeps for less real time may be removed before it
# ever ran.
PLACEMENT_FLOOR_S = 50.0
# The most pods a real second the rig has kept up with: the production-shaped day's busiest hour, 25 pods in 20 real
# s, each placed within 31 s (with HAMi's scheduler at the stack's client rate; at client-go's default it managed
# 0.4 and pods queued all day). A day that adds pods faster may queue them on the rig.
PLACEMENT_RATE_PER_S = 1.25
# A pool-limit refusal as Karpenter words it (kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling).
POOL_LIMIT = "exceed limits for nodepool"


def percentile(values: list[float], share: float) -> float:
    """Nearest-rank percentile (`share` in 0..1) of a non-empty list."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


@dataclass(frozen=True)
class Billed:
    """One NodeClaim's bill in simulated minutes of the day: raw and latency-corrected intervals, and the real
    seconds it waited on controllers."""

    claim: ClaimRecord
    raw: tuple[float, float]
    corrected: tuple[float, float]
    launch_wait_s: float
    teardown_wait_s: float


class Clock:
    """Real epoch seconds to simulated minutes of the run's day."""

    def __init__(self, seen: Observations, demand: Demand) -> None:
        self.start, self.scale = seen.day_start, demand.seconds_per_hour

    def minute(self, epoch: float) -> float:
        return (epoch - self.start) * 60 / self.scale


def billed_claims(demand: Demand, seen: Observations) -> list[Billed]:
    """Every NodeClaim's raw and corrected interval, clipped to the day's bill (see the module's docstring)."""
    clock = Clock(seen, demand)
    horizon = demand.horizon_minutes
    deployment_groups = {change.group.name for change in demand.changes}
    pods_on: dict[str, list[PodRecord]] = {}
    for pod in seen.pods.values():
        if pod.running is not None and pod.node:
            pods_on.setdefault(pod.node, []).append(pod)
    horizon_epoch = seen.day_start + horizon * demand.seconds_per_hour / 60
    jobs = {batch.group.name for batch in demand.batches}
    billed = []
    for claim in seen.claims.values():
        if not claim.instance_type:
            continue
        pods = pods_on.get(claim.node, [])
        end = claim.deleted or seen.run_end
        serves_deployment = any(
            p.group in deployment_groups and p.running <= horizon_epoch < (p.gone or math.inf)  # type: ignore[operator]
            for p in pods
        )
        limit = horizon if serves_deployment or end <= horizon_epoch else math.inf
        raw = _clip(clock.minute(claim.created), clock.minute(end), limit)
        corrected, launch_s, teardown_s = _corrected(claim, pods, end, seen, clock, jobs)
        billed.append(Billed(claim, raw, _clip(*corrected, limit), launch_s, teardown_s))
    return billed


def _clip(start: float, end: float, limit: float) -> tuple[float, float]:
    start, end = max(0.0, start), min(end, limit)
    return (start, max(start, end))


def _corrected(
    claim: ClaimRecord, pods: list[PodRecord], end: float, seen: Observations, clock: Clock, jobs: set[str]
) -> tuple[tuple[float, float], float, float]:
    """The node's interval as the same day would run at full scale, and its waits on controllers (real s).

    Every real second of waiting on controllers is a full-scale second here, where the rig's bill stretched it by
    the compression: the node launches when the pods it was launched for were asked for plus Karpenter's real
    reaction; each of its pods starts after its own real wait (plus BOOT_S when it waited for this node), and a
    job's pod ends its own duration after that (a Deployment's pod leaves when the day removed it); the node goes
    `consolidateAfter` (as designed) after its last pod, plus its real wait on Karpenter beyond the rig's scaled
    `consolidateAfter`."""
    waited_after = seen.consolidate_after_s.get(claim.pool, 0.0)
    designed = seen.consolidate_after_minutes.get(claim.pool, 0.0)
    if not math.isfinite(designed):  # `Never`: a node goes only for other reasons, and those are not compressed
        waited_after, designed = 0.0, 0.0
    if not pods:  # launched for pods that went elsewhere: its whole life was controllers' time and its wait to go
        teardown_s = max(0.0, end - claim.created - waited_after)
        start = clock.minute(claim.created)
        stays = BOOT_S / 60 + teardown_s / 60 + (designed if claim.deleted else 0.0)
        return (start, min(start + stays, clock.minute(end))), 0.0, teardown_s
    first_run: float = min(p.running for p in pods if p.running is not None)
    launched_for = [p for p in pods if p.created <= first_run]
    asked = min(p.created for p in launched_for)
    ready = max(p.running for p in launched_for if p.running is not None)
    launch_s = max(0.0, ready - claim.created)
    start = clock.minute(asked) + max(0.0, claim.created - asked) / 60
    ends = []
    for pod in pods:
        assert pod.running is not None
        gone = pod.gone or end
        if pod.group in jobs:  # its duration runs from its start, which the full-scale day reaches sooner
            booted = BOOT_S if pod.created <= first_run else 0.0
            began = clock.minute(pod.created) + (pod.running - pod.created + booted) / 60
            ends.append(began + clock.minute(gone) - clock.minute(pod.running))
        else:
            ends.append(clock.minute(gone))
    last_gone = max((p.gone or end) for p in pods)
    if claim.deleted is not None and claim.deleted <= last_gone and claim.consolidatable is not None:
        # Removed with pods on it (underused): its consolidateAfter ran from the pod change that left it so.
        teardown_s = max(0.0, claim.deleted - claim.consolidatable)
        return (
            (start, clock.minute(claim.consolidatable - waited_after) + designed + teardown_s / 60),
            launch_s,
            teardown_s,
        )
    if claim.deleted is None or claim.deleted <= last_gone:  # still up at the end, or removed for another reason
        return (start, clock.minute(end)), launch_s, 0.0
    teardown_s = max(0.0, claim.deleted - last_gone - waited_after)
    return (start, max(ends) + designed + teardown_s / 60), launch_s, teardown_s


def run_document(
    demand: Demand, seen: Observations, pools: Pools, bounds: Bounds, identity: dict[str, Any]
) -> dict[str, Any]:
    """The run's figures in the shape e2e.simulator.report reads."""
    groups = {group.name: group for group in demand.groups}
    billed = billed_claims(demand, seen)

    def price(instance_type: str) -> float:
        return pools.catalog.instance_type(instance_type).on_demand_usd_per_hour

    raw_by_pool: Counter[str] = Counter()
    corrected_by_pool: Counter[str] = Counter()
    node_hours: Counter[str] = Counter()
    horizon = demand.horizon_minutes
    end = billed_end(demand, seen, billed)
    tail: Counter[str] = Counter()
    for bill in billed:
        hours = (bill.raw[1] - bill.raw[0]) / 60
        node_hours[bill.claim.instance_type] += hours
        raw_by_pool[bill.claim.pool] += hours * price(bill.claim.instance_type)
        corrected_by_pool[bill.claim.pool] += (
            (bill.corrected[1] - bill.corrected[0]) / 60 * price(bill.claim.instance_type)
        )
        tail["usd"] += _after(bill.raw, horizon) / 60 * price(bill.claim.instance_type)
        tail["corrected_usd"] += _after(bill.corrected, horizon) / 60 * price(bill.claim.instance_type)
    tail_oracle, tail_policy = bounds.tail_usd("oracle", end), bounds.tail_usd("policy", end)
    oracle = Counter(bounds.usd("oracle")) + Counter(tail_oracle)
    policy = Counter(bounds.usd("policy")) + Counter(tail_policy)
    usd, corrected = sum(raw_by_pool.values()), sum(corrected_by_pool.values())
    oracle_usd, policy_usd = sum(oracle.values()), sum(policy.values())
    tail["oracle_usd"], tail["policy_usd"] = sum(tail_oracle.values()), sum(tail_policy.values())
    whole = {"usd": usd, "corrected_usd": corrected, "oracle_usd": oracle_usd, "policy_usd": policy_usd}
    within = {key: value - tail[key] for key, value in whole.items()}
    by_pool = {
        pool: {
            "usd": round(raw_by_pool[pool], 3),
            "corrected_usd": round(corrected_by_pool[pool], 3),
            "oracle_usd": round(oracle.get(pool, 0.0), 3),
            "policy_usd": round(policy.get(pool, 0.0), 3),
            "ratio": _ratio(raw_by_pool[pool], oracle.get(pool, 0.0)),
            "corrected_ratio": _ratio(corrected_by_pool[pool], oracle.get(pool, 0.0)),
            # Minutes whose oracle packing the solver's limit left unproven (an achievable cost there, not the optimum).
            "oracle_unproven_minutes": round(bounds.oracle[pool].unproven_minutes, 1) if pool in bounds.oracle else 0.0,
        }
        for pool in sorted(set(raw_by_pool) | set(oracle))
    }
    return {
        "kind": "trace",
        **identity,
        "stack": demand.stack,
        "seconds_per_hour": demand.seconds_per_hour,
        "hours": demand.hours,
        "horizon_hours": round(demand.horizon_minutes / 60, 3),
        "billed_end_hours": round(end / 60, 3),
        "wall_seconds": round(seen.wall_seconds, 1),
        "wall_seconds_per_simulated_hour": round(seen.wall_seconds / demand.hours, 1),
        "compression": seen.compression,
        "invariants": seen.invariants,
        "disruption_settings": {
            pool: {
                "consolidate_after_minutes": _finite(minutes),
                "rig_consolidate_after_s": _finite(seen.consolidate_after_s.get(pool, math.inf)),
            }
            for pool, minutes in sorted(seen.consolidate_after_minutes.items())
        },
        "cost": {
            "usd": round(usd, 3),
            "corrected_usd": round(corrected, 3),
            "compression_usd": round(usd - corrected, 3),
            "oracle_usd": round(oracle_usd, 3),
            "policy_usd": round(policy_usd, 3),
            "ratio": _ratio(usd, oracle_usd),
            "corrected_ratio": _ratio(corrected, oracle_usd),
            "corrected_to_policy": _ratio(corrected, policy_usd),
            "policy_ratio": _ratio(policy_usd, oracle_usd),
            # Both sides over the same span: the day up to the horizon, and the tail after it to where the bill ends.
            "within_day": _part(within),
            "tail": {"hours": round(max(0.0, end - horizon) / 60, 3), **_part(tail)},
            "node_hours_by_type": {t: round(h, 2) for t, h in sorted(node_hours.items())},
            "usd_by_type": {t: round(h * price(t), 3) for t, h in sorted(node_hours.items())},
            "by_pool": by_pool,
        },
        "latency": _latency(billed),
        "nodes": [
            {
                "nodeclaim": bill.claim.name,
                "instance_type": bill.claim.instance_type,
                "pool": bill.claim.pool,
                "raw_minutes": [round(minute, 1) for minute in bill.raw],
                "corrected_minutes": [round(minute, 1) for minute in bill.corrected],
                "launch_wait_s": round(bill.launch_wait_s, 1),
                "teardown_wait_s": round(bill.teardown_wait_s, 1),
                "disruption": bill.claim.disruption,
            }
            for bill in sorted(billed, key=lambda bill: bill.raw)
        ],
        "timeline": _timeline(demand, seen, pools, bounds, billed, groups, price),
        "waits": _waits(seen),
        "job_runs": _job_runs(demand, seen),
        "disruptions": _disruptions(demand, seen, groups),
        "nodeclaims": _nodeclaims(seen),
        "pods": _pods(demand, seen, bounds),
        "never_ran": _never_ran(seen),
        "too_fast": too_fast(demand),
    }


def too_fast(demand: Demand) -> dict[str, Any] | None:
    """Why the day is too fast for the rig at its speed, if it is, and the slowest speed (seconds per simulated
    hour) that clears both: its shortest-lived Deployment pods live less real time than PLACEMENT_FLOOR_S (they may
    be removed before they ran), or its busiest hour adds pods faster than PLACEMENT_RATE_PER_S (they queue on the
    rig, and their waits are the rig's)."""
    found: dict[str, Any] = {}
    needed = [demand.seconds_per_hour]
    shortest = demand.shortest_life()
    if shortest is not None and demand.real_seconds(shortest[2]) < PLACEMENT_FLOOR_S:
        group, minute, life = shortest
        found["shortest_life"] = {
            "group": group,
            "minute": minute,
            "life_minutes": life,
            "life_real_s": round(demand.real_seconds(life), 1),
            "floor_s": PLACEMENT_FLOOR_S,
        }
        needed.append(math.ceil(PLACEMENT_FLOOR_S * 60 / life))
    busiest = demand.busiest_hour()
    if busiest is not None and busiest[1] / demand.seconds_per_hour > PLACEMENT_RATE_PER_S:
        minute, pods = busiest
        found["busiest_hour"] = {
            "minute": minute,
            "pods": pods,
            "pods_per_s": round(pods / demand.seconds_per_hour, 2),
            "rate_per_s": PLACEMENT_RATE_PER_S,
        }
        needed.append(math.ceil(pods / PLACEMENT_RATE_PER_S))
    return {**found, "seconds_per_hour_needed": max(needed)} if found else None


def billed_end(demand: Demand, seen: Observations, billed: list[Billed]) -> float:
    """The simulated minute the run's bill ends: the horizon, or later where a node is billed past it (the tail),
    and at least the rig's last watched second after the horizon."""
    ends = [minute for bill in billed for minute in (bill.raw[1], bill.corrected[1])]
    last_seen = Clock(seen, demand).minute(seen.run_end) if seen.run_end else 0.0
    return max([demand.horizon_minutes, *ends, last_seen])


def _after(interval: tuple[float, float], minute: float) -> float:
    """Minutes of the interval after `minute`."""
    return max(0.0, interval[1] - max(interval[0], minute))


def _part(figures: dict[str, float]) -> dict[str, float | None]:
    """A span's dollars on both sides, rounded, and the corrected ratio over it."""
    return {
        **{key: round(value, 3) for key, value in figures.items()},
        "corrected_ratio": _ratio(figures["corrected_usd"], figures["oracle_usd"]),
    }


def _finite(value: float) -> float | None:
    """A duration as JSON holds it: None for `Never`."""
    return round(value, 3) if math.isfinite(value) else None


def _ratio(value: float, bound: float) -> float | None:
    return round(value / bound, 3) if bound else None


def _latency(billed: list[Billed]) -> dict[str, Any]:
    """What the correction removed: the nodes' real waits on controllers, and the boot time billed instead."""
    return {
        "nodes": len(billed),
        "launch_wait_s": round(sum(b.launch_wait_s for b in billed), 1),
        "launch_wait_max_s": round(max((b.launch_wait_s for b in billed), default=0.0), 1),
        "teardown_wait_s": round(sum(b.teardown_wait_s for b in billed), 1),
        "teardown_wait_max_s": round(max((b.teardown_wait_s for b in billed), default=0.0), 1),
        "boot_s": BOOT_S,
    }


def _timeline(
    demand: Demand,
    seen: Observations,
    pools: Pools,
    bounds: Bounds,
    billed: list[Billed],
    groups: dict[str, PodRequests],
    price: Callable[[str], float],
) -> list[dict[str, Any]]:
    clock = Clock(seen, demand)
    entries = []
    for sample in seen.samples:
        minute = clock.minute(sample.at)
        alive = [b.claim for b in billed if b.raw[0] <= minute < b.raw[1]]
        corrected = [b.claim for b in billed if b.corrected[0] <= minute < b.corrected[1]]
        gpus = [pools.catalog.instance_type(c.instance_type) for c in alive]
        hami = {name: pools.sharing.get(g.pool) == names.SHARING_HAMI for name, g in groups.items()}
        used_mib = sum(
            n * groups[g].vgpus * (groups[g].gpu_memory_mib or 0) for g, n in sample.running.items() if hami[g]
        )
        used_cores = sum(n * groups[g].vgpus * (groups[g].gpu_cores or 0) for g, n in sample.running.items() if hami[g])
        entries.append(
            {
                "hour": round(minute / 60, 3),
                "usd_per_hour": round(sum(price(c.instance_type) for c in alive), 3),
                "corrected_usd_per_hour": round(sum(price(c.instance_type) for c in corrected), 3),
                "oracle_usd_per_hour": round(bounds.at("oracle", minute), 3),
                "policy_usd_per_hour": round(bounds.at("policy", minute), 3),
                "gpu_memory_used_mib": used_mib,
                "gpu_memory_paid_mib": sum(
                    t.gpu_count * pools.catalog.gpu_model_of(t).nvml_memory_mib
                    for t, c in zip(gpus, alive, strict=True)
                    if pools.sharing.get(c.pool) == names.SHARING_HAMI
                ),
                "gpu_cores_used": used_cores,
                "gpu_cores_paid": sum(
                    100 * t.gpu_count
                    for t, c in zip(gpus, alive, strict=True)
                    if pools.sharing.get(c.pool) == names.SHARING_HAMI
                ),
                "pods_running": sum(sample.running.values()),
                "pods_pending": sample.pending,
                "nodes": len(alive),
            }
        )
    return entries


def _job_runs(demand: Demand, seen: Observations) -> dict[str, Any]:
    """How long the job pods that completed ran against what their batch asked (real seconds): the rig's check
    that each pod ran its own duration from its own start (a gang's pods from when the last of them started)."""
    asked = {batch.name: demand.real_seconds(batch.duration_minutes) for batch in demand.batches}
    gangs = {batch.name for batch in demand.batches if batch.gang}
    late = [
        pod.completed - pod.running - asked[pod.app]
        for pod in seen.pods.values()
        if pod.app in asked and pod.app not in gangs and pod.completed is not None and pod.running is not None
    ]
    if not late:
        return {"pods": 0, "median_late_s": None, "max_late_s": None}
    return {"pods": len(late), "median_late_s": round(percentile(late, 0.5), 2), "max_late_s": round(max(late), 2)}


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


def _disruptions(demand: Demand, seen: Observations, groups: dict[str, PodRequests]) -> dict[str, dict[str, int]]:
    """Pods evicted by Karpenter (by the NodeClaim's disruption reason) or preempted by the scheduler; and, per
    team, evictions inside a zero-node budget window of the evicted pod's pool that covers the cause."""
    clock = Clock(seen, demand)
    by_cause: Counter[str] = Counter()
    in_window: Counter[str] = Counter()
    teams = {group.team for group in groups.values()}
    for event in seen.events:
        if event["kind"] != "Pod" or event["reason"] not in ("Evicted", "Preempted"):
            continue
        cause = event["message"].removeprefix("Evicted pod: ") if event["reason"] == "Evicted" else "Preempted"
        by_cause[cause] += 1
        pod = seen.pods.get(event["uid"])
        if pod is None or event["reason"] != "Evicted":
            continue
        minute = clock.minute(event["at"])
        pool = groups[pod.group].pool
        if any(window.pool == pool and window.holds(cause, minute) for window in seen.windows):
            in_window[pod.team] += 1
    return {"by_cause": dict(sorted(by_cause.items())), "in_budget_window": {t: in_window[t] for t in sorted(teams)}}


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


def _pods(demand: Demand, seen: Observations, bounds: Bounds) -> dict[str, Any]:
    """Pods, never events: per group what the day asked, what ran (served), what was never created or waited on
    a pool limit (refused) and what was created but never ran (never placed); and what the oracle left out or
    delayed because the team's quota refuses it by design. A job's pod is its Job's completion index (a pod
    evicted and replaced is still one pod); a Deployment's pods are interchangeable, so its count is of pods."""
    deployments = {change.group.name for change in demand.changes}
    karpenter = _karpenter_messages(seen)
    by_group: dict[str, list[PodRecord]] = {}
    for pod in seen.pods.values():
        by_group.setdefault(pod.group, []).append(pod)
    per_group = {}
    for group in demand.groups:
        name, pods = group.name, by_group.get(group.name, [])
        if name in deployments:
            created, ran = len(pods), sum(pod.running is not None for pod in pods)
        else:
            slots: dict[tuple[str, int | None], bool] = {}
            for pod in pods:
                key = (pod.app, pod.index)
                slots[key] = slots.get(key, False) or pod.running is not None
            created, ran = len(slots), sum(slots.values())
        asked = bounds.admission.asked[name]
        served = min(asked, ran)
        at_limit = sum(
            POOL_LIMIT in karpenter.get(pod.uid, "") for pod in pods if pod.running is None and pod.gone is None
        )
        never_placed = max(0, min(asked - served, created - ran) - at_limit)
        per_group[name] = {
            "asked": asked,
            "served": served,
            "refused": asked - served - never_placed,
            "never_placed": never_placed,
            "quota_refused_by_design": bounds.admission.refused[name],
            "quota_delayed_by_design": bounds.admission.late[name],
        }
    keys = ("asked", "served", "refused", "never_placed", "quota_refused_by_design", "quota_delayed_by_design")
    return {"by_group": per_group, "total": {key: sum(entry[key] for entry in per_group.values()) for key in keys}}


def _karpenter_messages(seen: Observations) -> dict[str, str]:
    """Pod uid -> Karpenter's last word on it (a FailedScheduling event of its own)."""
    return {
        event["uid"]: event["message"]
        for event in sorted(seen.events, key=lambda e: e["at"])
        if event["reason"] == "FailedScheduling" and event["source"] == "karpenter"
    }


def _plain(message: str, nodes: list[str]) -> str:
    """A refusal without what differs per pod or node (names, amounts), so one cause is one line."""
    for node in nodes:
        message = message.replace(node, "<node>")
    message = re.sub(r'pods "[^"]*"', "pods", message)
    limited = re.search(r"limited: (\S[^,]*(?:,[^,:]+=[^,]+)*)", message)
    if "exceeded quota" in message and limited:
        resources = ", ".join(item.split("=")[0] for item in limited.group(1).split(","))
        message = message[: message.index("exceeded quota")] + f"exceeded quota ({resources})"
    return message


def _never_ran(seen: Observations) -> list[dict[str, Any]]:
    """Pods that never ran, grouped by who refused them, what they said and whether the trace removed them while
    they waited; plus the workloads whose pods admission refused (one line per cause, counted in pods by
    `_pods`, here once per workload)."""
    karpenter = _karpenter_messages(seen)
    nodes = sorted({claim.node for claim in seen.claims.values() if claim.node}, key=len, reverse=True)
    found: Counter[tuple[str, str]] = Counter()
    for pod in seen.pods.values():
        if pod.running is not None:
            continue
        when = "removed while waiting" if pod.gone is not None else "still waiting at the end"
        if pod.uid in karpenter:
            found[("karpenter", f"{when}: {_plain(karpenter[pod.uid], nodes)}")] += 1
        elif pod.pending_message:
            found[(pod.scheduler or "scheduler", f"{when}: {_plain(pod.pending_message, nodes)}")] += 1
        else:
            found[("nobody", f"{when}, before any scheduler answered")] += 1
    refused_workloads: dict[str, set[str]] = {}
    for event in seen.events:
        if event["reason"] == "FailedCreate":
            refused_workloads.setdefault(_plain(event["message"], nodes), set()).add(event["name"])
    rows = [
        {"refused_by": who, "message": message[:300], "pods": count}
        for (who, message), count in sorted(found.items(), key=lambda item: (-item[1], item[0]))
    ]
    rows += [
        {"refused_by": "admission", "message": message[:300], "workloads": len(workloads)}
        for message, workloads in sorted(refused_workloads.items())
    ]
    return rows
