"""The rig follows a trace (e2e.simulator.trace) through a compressed day and records what real Karpenter and HAMi did.

Time: simulated minute m happens `m * secondsPerHour / 60` real seconds after the day's start, which is a
whole real minute so budget windows (cron has minute resolution) line up. The stack's NodePools are applied
compressed by the same factor: `consolidateAfter` and `expireAfter` scaled, and each scheduled budget moved to
the real minutes its simulated window covers on the trace's weekday. The controllers are not compressed: a
pod's wait, Karpenter's batching and HAMi's placement take real seconds, and waits are reported in them.

Workloads: a Deployment group is one Deployment whose replicas the rig sets at each step; a job arrival is a
Deployment of `count` pods, deleted `durationMinutes` after all its pods first ran (KWOK completes a Job's pods
the moment they run, so real Jobs would finish at once). Every pod and NodeClaim is observed every
POLL_S real seconds; e2e.simulator.figures turns the records into figures.
"""

from __future__ import annotations

import copy
import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from e2e.cluster.api import ApiError
from e2e.cluster.stack import Plan, budget_duration, daily_window, for_rig
from e2e.cluster.workloads import Context, condition, gpu_deployment, nodeclaims
from e2e.simulator.trace import WEEKDAYS, Batch, DeploymentGroup, PodRequests, Trace, batches, replica_schedule
from gpushare import names
from gpushare.karpenter_api import CronSchedule, parse_schedule
from gpushare.metrics import duration_seconds

POLL_S = 2.0
GROUP_LABEL = "simulate.gpushare.io/group"


def _scaled(duration: str, seconds_per_hour: int) -> str:
    if duration == "Never":
        return duration
    return f"{max(1, round((duration_seconds(duration) or 0) * seconds_per_hour / 3600))}s"


@dataclass(frozen=True)
class Window:
    """A zero-node budget's window in simulated minutes of the day, for the pool and the causes it holds."""

    pool: str
    start_minute: float
    end_minute: float
    reasons: tuple[str, ...]


def _once_a_day(cron: CronSchedule | str) -> tuple[int, int] | None:
    if isinstance(cron, str) or len(cron.minutes) != 1 or len(cron.hours) != 1:
        return None
    return next(iter(cron.hours)), next(iter(cron.minutes))


def compress_pool(
    pool: dict[str, Any], started: datetime, day_start: datetime, trace: Trace
) -> tuple[dict[str, Any], list[str], list[Window]]:
    """The NodePool as the rig runs it for the trace's day: what was compressed (one line each), and its
    zero-node budget windows in simulated minutes."""
    name, scale = pool["metadata"]["name"], trace.seconds_per_hour
    original = pool["spec"].get("disruption", {})
    rig = for_rig(pool, started)
    disruption = copy.deepcopy(original)
    notes, windows = [], []
    for key in ("consolidateAfter", "expireAfter"):
        value = disruption.get(key) if key == "consolidateAfter" else rig["spec"]["template"]["spec"].get(key)
        if value is None:
            continue
        compressed = _scaled(value, scale)
        if key == "consolidateAfter":
            disruption[key] = compressed
        else:
            rig["spec"]["template"]["spec"][key] = compressed
        notes.append(f"{key} {name} {value} -> {compressed}")
    budgets = []
    for budget in disruption.get("budgets", []):
        if "schedule" not in budget:
            budgets.append(budget)
            continue
        cron = parse_schedule(budget["schedule"])
        when = _once_a_day(cron)
        weekday = WEEKDAYS.index(trace.weekday)
        if when is None:
            notes.append(f"budget {name} {budget['schedule']!r} dropped: the rig compresses once-a-day windows only")
            continue
        if isinstance(cron, CronSchedule) and not (cron.any_day_of_week or weekday in cron.days_of_week):
            notes.append(f"budget {name} {budget['schedule']!r} dropped: not open on a {trace.weekday}")
            continue
        start_minute = when[0] * 60 + when[1]
        length_minutes = budget_duration(budget["duration"]).total_seconds() / 60
        real_start = day_start + timedelta(minutes=round(start_minute * scale / 3600))
        real_length = timedelta(minutes=max(1, round(length_minutes * scale / 3600)))
        window = daily_window(real_start, real_length)
        budgets.append({**budget, **window})
        sim_start = (real_start - day_start).total_seconds() * 60 / scale
        sim_end = sim_start + real_length.total_seconds() * 60 / scale
        notes.append(
            f"budget {name} nodes {budget['nodes']} {budget['schedule']!r} for {budget['duration']} -> cron "
            f"{window['schedule']!r} for {window['duration']} (simulated {_clock(sim_start)}-{_clock(sim_end)})"
        )
        if str(budget["nodes"]) in ("0", "0%"):
            windows.append(Window(name, sim_start, sim_end, tuple(budget.get("reasons", ()))))
    if "budgets" in disruption:
        disruption["budgets"] = budgets
    rig["spec"]["disruption"] = disruption
    return rig, notes, windows


def _clock(minute: float) -> str:
    return f"{int(minute // 60):02d}:{int(minute % 60):02d}"


@dataclass
class PodRecord:
    """One pod the day created, as last seen."""

    uid: str
    name: str
    app: str
    team: str
    group: str
    priority: str
    scheduler: str
    created: float
    running: float | None = None
    node: str | None = None
    pending_message: str = ""
    gone: float | None = None


@dataclass
class ClaimRecord:
    """One NodeClaim Karpenter launched during the day."""

    name: str
    instance_type: str
    pool: str
    created: float
    initialized: float | None = None
    deleted: float | None = None
    disruption: str = ""
    node: str = ""


@dataclass
class Sample:
    """What ran and waited at one poll (epoch seconds)."""

    at: float
    running: dict[str, int]  # group -> running pods
    pending: int


@dataclass
class Observations:
    """Everything e2e.simulator.figures needs: records, samples, the relevant events, and the compression."""

    day_start: float
    day_end: float
    pods: dict[str, PodRecord] = field(default_factory=dict)
    claims: dict[str, ClaimRecord] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    compression: list[str] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    wall_seconds: float = 0.0  # the whole run, the rig's start-up included


def _epoch(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


class Day:
    """Follows one trace on the running rig (`ctx`) with the stack as `plan` renders it."""

    def __init__(self, ctx: Context, trace: Trace, plan: Plan) -> None:
        self.ctx, self.trace, self.plan = ctx, trace, plan
        self.sharing = plan.pool_sharing()
        self.teams = sorted({group.team for group in trace.groups})

    def deployment(self, name: str, group: PodRequests, replicas: int) -> dict[str, Any]:
        """A Deployment of the group's pods, asking for GPUs the way its pool shares them: HAMi's resources, one
        time-sliced replica per vGPU, or whole GPUs with HAMi's webhook told to leave the pod alone."""
        sharing = self.sharing[group.pool]
        hami = sharing == names.SHARING_HAMI
        request = {"gpu": group.vgpus, "cores": group.gpu_cores or 0, "mem_mib": group.gpu_memory_mib or 0}
        body = gpu_deployment(
            self.ctx,
            name,
            group.team,
            group.pool,
            replicas,
            request,
            cpu=group.cpu,
            shared=sharing == names.SHARING_TIMESLICE,
        )
        template = body["spec"]["template"]
        container = template["spec"]["containers"][0]
        if sharing == names.SHARING_TIMESLICE:
            container["resources"]["limits"][names.GPU_SHARED] = str(group.vgpus)
        elif not hami:
            container["resources"]["limits"] = {names.GPU: str(group.vgpus)}
            template["metadata"]["labels"][names.HAMI_WEBHOOK_IGNORE[0]] = "ignore"
        template["metadata"]["labels"][GROUP_LABEL] = group.name
        container["resources"]["requests"]["memory"] = group.memory
        return body

    def install(self, day_start: datetime) -> tuple[list[str], list[Window]]:
        """Apply the stack's NodePools compressed for the day that starts at `day_start`."""
        pools, notes, windows = [], [], []
        for pool in self.plan.of_kind("NodePool"):
            compressed, pool_notes, pool_windows = compress_pool(pool, self.ctx.started, day_start, self.trace)
            pools.append(compressed)
            notes += pool_notes
            windows += pool_windows
        self.ctx.kubectl.apply(pools)
        return notes, windows

    def run(self) -> Observations:
        """Follow the trace from the next whole minute to the day's end; the workloads are deleted after."""
        now = time.time()
        day_start = datetime.fromtimestamp(math.ceil((now + 5) / 60) * 60, UTC)
        notes, windows = self.install(day_start)
        scale = self.trace.seconds_per_hour
        seen = Observations(day_start.timestamp(), day_start.timestamp() + self.trace.hours * scale)
        seen.compression, seen.windows = notes, windows
        changes = replica_schedule(self.trace)
        arrivals = batches(self.trace)
        running_batches: dict[str, tuple[Batch, float | None]] = {}
        created: set[str] = set()
        time.sleep(max(0.0, seen.day_start - time.time()))
        while (now := time.time()) < seen.day_end:
            minute = (now - seen.day_start) * 60 / scale
            while changes and changes[0][0] <= minute:
                _, group, replicas = changes.pop(0)
                self._scale(group, replicas, created)
            while arrivals and arrivals[0].minute <= minute:
                batch = arrivals.pop(0)
                self.ctx.kubectl.apply([self.deployment(batch.name, batch.group, batch.count)])
                running_batches[batch.name] = (batch, None)
            self._observe(seen, now)
            self._finish_batches(seen, running_batches, now)
            time.sleep(max(0.0, POLL_S - (time.time() - now)))
        self._collect_events(seen)
        self._clean_up()
        return seen

    def _scale(self, group: DeploymentGroup, replicas: int, created: set[str]) -> None:
        if group.name not in created:
            self.ctx.kubectl.apply([self.deployment(group.name, group, replicas)])
            created.add(group.name)
            return
        path = f"/apis/apps/v1/namespaces/{group.team}/deployments/{group.name}"
        self.ctx.api.merge_patch(path, {"spec": {"replicas": replicas}})

    def _finish_batches(
        self, seen: Observations, batches_alive: dict[str, tuple[Batch, float | None]], now: float
    ) -> None:
        """Note when each batch's pods first all ran; delete it `durationMinutes` (simulated) later."""
        for name, (batch, all_ran) in list(batches_alive.items()):
            if all_ran is None:
                ran = [p for p in seen.pods.values() if p.app == name and p.gone is None and p.running is not None]
                if len(ran) >= batch.count:
                    batches_alive[name] = (batch, now)
            elif now >= all_ran + batch.duration_minutes * self.trace.seconds_per_hour / 60:
                path = f"/apis/apps/v1/namespaces/{batch.group.team}/deployments/{name}"
                try:
                    self.ctx.api.request("DELETE", path, {"propagationPolicy": "Background"})
                except ApiError as error:
                    if error.status != 404:
                        raise
                del batches_alive[name]

    def _observe(self, seen: Observations, now: float) -> None:
        running: dict[str, int] = {}
        pending, present = 0, set()
        for team in self.teams:
            for pod in self.ctx.api.items(f"/api/v1/namespaces/{team}/pods?labelSelector={GROUP_LABEL}"):
                meta, spec, status = pod["metadata"], pod["spec"], pod.get("status", {})
                record = seen.pods.get(meta["uid"])
                if record is None:
                    record = PodRecord(
                        meta["uid"],
                        meta["name"],
                        meta["labels"].get("app", ""),
                        team,
                        meta["labels"][GROUP_LABEL],
                        spec.get("priorityClassName", ""),
                        spec.get("schedulerName", ""),
                        _epoch(meta["creationTimestamp"]) or now,
                    )
                    seen.pods[meta["uid"]] = record
                present.add(meta["uid"])
                if meta.get("deletionTimestamp"):
                    record.gone = record.gone or _epoch(meta["deletionTimestamp"]) or now
                    continue
                if status.get("phase") == "Running":
                    ready = condition(pod, "Ready")
                    record.running = record.running or _epoch(ready.get("lastTransitionTime")) or now
                    record.node = spec.get("nodeName")
                    running[record.group] = running.get(record.group, 0) + 1
                else:
                    pending += 1
                    record.pending_message = condition(pod, "PodScheduled").get("message", "") or record.pending_message
        for record in seen.pods.values():
            if record.uid not in present and record.gone is None:
                record.gone = now
        claims_present = set()
        for claim in nodeclaims(self.ctx):
            meta = claim["metadata"]
            record = seen.claims.get(meta["name"])
            if record is None:
                labels = meta.get("labels", {})
                record = ClaimRecord(
                    meta["name"],
                    labels.get(names.INSTANCE_TYPE_LABEL, ""),
                    labels.get(names.NODEPOOL_LABEL, ""),
                    _epoch(meta["creationTimestamp"]) or now,
                )
                seen.claims[meta["name"]] = record
            claims_present.add(meta["name"])
            record.instance_type = record.instance_type or meta.get("labels", {}).get(names.INSTANCE_TYPE_LABEL, "")
            record.node = claim.get("status", {}).get("nodeName") or record.node
            initialized = condition(claim, "Initialized")
            if initialized.get("status") == "True" and record.initialized is None:
                record.initialized = _epoch(initialized.get("lastTransitionTime")) or now
            reason = condition(claim, "DisruptionReason")
            if reason.get("status") == "True":
                record.disruption = reason.get("reason", "")
            if meta.get("deletionTimestamp") and record.deleted is None:
                record.deleted = _epoch(meta["deletionTimestamp"]) or now
        for record in seen.claims.values():
            if record.name not in claims_present and record.deleted is None:
                record.deleted = now
        seen.samples.append(Sample(now, running, pending))

    def _collect_events(self, seen: Observations) -> None:
        """The day's evictions, preemptions, refusals and Karpenter's disruption decisions."""
        kept = ("Evicted", "Preempted", "FailedCreate", "FailedScheduling", "DisruptionTerminating")
        for namespace in [*self.teams, "default"]:
            for event in self.ctx.api.items(f"/api/v1/namespaces/{namespace}/events"):
                at = _epoch(
                    event.get("lastTimestamp") or event.get("eventTime") or event["metadata"]["creationTimestamp"]
                )
                if event.get("reason") in kept and at is not None and at >= seen.day_start:
                    seen.events.append(
                        {
                            "namespace": namespace,
                            "reason": event["reason"],
                            "message": event.get("message", ""),
                            "kind": event["involvedObject"].get("kind", ""),
                            "name": event["involvedObject"].get("name", ""),
                            "uid": event["involvedObject"].get("uid", ""),
                            "count": event.get("count") or 1,
                            "source": (event.get("source") or {}).get("component")
                            or event.get("reportingComponent", ""),
                            "at": at,
                        }
                    )

    def _clean_up(self) -> None:
        for team in self.teams:
            self.ctx.kubectl.run("delete", "deployments", "--all", "-n", team, "--wait=false")
