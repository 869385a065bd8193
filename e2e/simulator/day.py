"""The rig plays a day's demand (e2e.simulator.demand.Demand) and records what real Karpenter and HAMi did.

Time: simulated minute m happens `m * secondsPerHour / 60` real seconds after the day's start. The stack's
NodePools are applied compressed by the same factor (`consolidateAfter` and `expireAfter` scaled); their scheduled
budgets are switched on and off by the rig at the exact second their simulated window opens and closes (the
previous evening's overnight window is open at 00:00), since cron's whole minutes are hours of a compressed day.
The controllers are not compressed: a pod's wait, Karpenter's batching and HAMi's placement take real seconds.

Before the clock starts, the day's 00:00 state runs: the Deployments at their 00:00 counts, with the budgets open
at 00:00, until their pods run (the oracle counts that demand from minute 0). A Deployment group is a Deployment
scaled at each change; a job arrival is an Indexed Job whose pods each run their own duration from their own start
(KWOK completes them: e2e.cluster.kwok_stages), an evicted pod's replacement starting over; a gang's pods are armed
together once all of them run. After the day's end Deployments hold their last count while late batches finish,
and the rig watches until every node that holds no Deployment pod is gone (or `TAIL_CAP_S` passed), so a late
batch's teardown is billed. Pods, NodeClaims and events are watched, not polled: each change is stamped with the
rig's clock when the API server sends it.
"""

from __future__ import annotations

import copy
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from e2e.cluster.api import Api, ApiError
from e2e.cluster.errors import RigError
from e2e.cluster.invariants import HAMI_NODE, Invariants
from e2e.cluster.kwok_stages import COMPLETE_AFTER, COMPLETE_AT
from e2e.cluster.stack import Plan, for_rig, rig_nodepool_name
from e2e.cluster.workloads import HAMI_BIND_PHASE, Context, condition, gpu_deployment, initialized
from e2e.simulator.budgets import Window, always_budgets, budget_windows, consolidate_after_minutes
from e2e.simulator.demand import Batch, Demand, PodRequests
from gpushare import names
from gpushare.metrics import duration_seconds

POLL_S = 2.0  # how often the timeline (the plot) is sampled; the figures use the watched records
TICK_S = 0.2  # the longest the rig sleeps between checks (a gang armed, the tail done)
START_TIMEOUT_S = 300.0  # the most the 00:00 state may take to run before the clock starts anyway
TAIL_CAP_S = 240.0  # after the horizon, the most the rig waits for nodes without Deployment pods to go
# After the horizon, the least the rig watches on: long enough for Karpenter to act on a node the day's last
# changes left underused (its 10 s poll and 15 s validation, the scaled consolidateAfter, the eviction), so the
# corrected bill can end such a node when the full-scale day would have.
TAIL_SETTLE_S = 45.0
GROUP_LABEL = "simulate.gpushare.io/group"
JOB_INDEX = "batch.kubernetes.io/job-completion-index"
RIG_ARMS = "8760h"  # a job's pod waits this long for the rig to set its completion (a year: never, in a day)
# The Job controller's retries of pods that an eviction replaced: an evicted pod starts over, it is not a failure.
JOB_BACKOFF_LIMIT = 1000


def scaled(duration: str, seconds_per_hour: int) -> str:
    """A NodePool duration as the compressed day runs it (at least a second)."""
    if duration == "Never":
        return duration
    return f"{max(1, round((duration_seconds(duration) or 0) * seconds_per_hour / 3600))}s"


@dataclass(frozen=True)
class Switch:
    """At `minute` (simulated), the pool's budgets become `budgets`."""

    minute: float
    pool: str
    budgets: list[dict[str, Any]]


def budgets_at(always: list[dict[str, Any]], windows: list[Window], minute: float) -> list[dict[str, Any]]:
    """The budgets in force at `minute`: those without a schedule, and every window open then."""
    return [*always, *(w.budget for w in windows if w.start_minute <= minute < w.end_minute)]


def compress_pool(
    pool: dict[str, Any], started: datetime, demand: Demand
) -> tuple[dict[str, Any], list[str], list[Window], list[Switch]]:
    """The NodePool as the rig runs it for the day (durations scaled, budgets as they are at 00:00), what was
    compressed (one line each), its budget windows in simulated minutes and the switches that follow them."""
    name, scale = pool["metadata"]["name"], demand.seconds_per_hour
    rig = for_rig(pool, started)
    disruption = copy.deepcopy(pool["spec"].get("disruption", {}))
    notes = []
    for key, holder in (("consolidateAfter", disruption), ("expireAfter", rig["spec"]["template"]["spec"])):
        value = pool["spec"].get("disruption", {}).get(key) if key == "consolidateAfter" else holder.get(key)
        if value is None:
            continue
        holder[key] = scaled(value, scale)
        notes.append(f"{key} {name} {value} -> {holder[key]}")
    windows, budget_notes = budget_windows(pool, demand.weekday, demand.horizon_minutes, demand.offset_minutes)
    always = always_budgets(pool)
    if "budgets" in disruption:
        disruption["budgets"] = budgets_at(always, windows, 0)
    rig["spec"]["disruption"] = disruption
    edges = sorted(
        {edge for w in windows for edge in (w.start_minute, w.end_minute) if 0 < edge < demand.horizon_minutes}
    )
    switches = [Switch(edge, name, budgets_at(always, windows, edge)) for edge in edges]
    return rig, notes + budget_notes, windows, switches


@dataclass
class PodRecord:
    """One pod the day created, as last seen (epoch seconds on the rig's clock)."""

    uid: str
    name: str
    app: str  # its Deployment or Job
    team: str
    group: str
    priority: str
    scheduler: str
    created: float
    running: float | None = None
    node: str | None = None
    pending_message: str = ""
    gone: float | None = None
    index: int | None = None  # a Job's completion index: the pod of the batch it stands for
    completed: float | None = None


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
    consolidatable: float | None = None  # since when Karpenter has last held it consolidatable


@dataclass
class Sample:
    """What ran and waited at one moment (epoch seconds)."""

    at: float
    running: dict[str, int]  # group -> running pods
    pending: int


@dataclass
class Observations:
    """Everything e2e.simulator.figures needs: records, samples, the relevant events, and the compression."""

    day_start: float
    run_end: float = 0.0
    pods: dict[str, PodRecord] = field(default_factory=dict)
    claims: dict[str, ClaimRecord] = field(default_factory=dict)
    samples: list[Sample] = field(default_factory=list)
    events: list[dict[str, Any]] = field(default_factory=list)
    compression: list[str] = field(default_factory=list)
    windows: list[Window] = field(default_factory=list)
    consolidate_after_s: dict[str, float] = field(default_factory=dict)  # pool -> real seconds the rig applied
    consolidate_after_minutes: dict[str, float] = field(default_factory=dict)  # pool -> as the stack designs it
    wall_seconds: float = 0.0  # the whole run, the rig's start-up included
    invariants: dict[str, Any] = field(default_factory=dict)  # what the invariant checker judged over the day


def _asks_hami(pod: dict[str, Any]) -> bool:
    return any(
        resource in container.get("resources", {}).get("limits", {})
        for container in pod["spec"]["containers"]
        for resource in (names.GPU_MEMORY, names.GPU_CORES)
    )


def _started(pod: dict[str, Any]) -> bool:
    """A running pod's containers have started: KWOK reports a pod Running once bound, but a kubelet starts a pod
    asking HAMi's resources only after HAMi's device plugin allocated it (its bind phase `success`), which it
    refuses for a pod HAMi's scheduler did not place."""
    return not _asks_hami(pod) or pod["metadata"].get("annotations", {}).get(HAMI_BIND_PHASE) == "success"


def _epoch(timestamp: str | None) -> float | None:
    if not timestamp:
        return None
    return datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp()


class _Watch(threading.Thread):
    """Lists a collection, then watches it, handing every object to `seen(kind, object, receive time)`; lists
    again whenever the server ends the stream, so nothing is missed for long."""

    def __init__(self, api: Api, path: str, seen: Callable[[str, dict[str, Any], float], None]) -> None:
        super().__init__(name=f"watch {path}", daemon=True)
        self.api, self.path, self.seen = api, path, seen
        self.stopping = threading.Event()
        self.failure: Exception | None = None
        self.listed = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                listing = self.api.get(self.path)
                now = time.time()
                for item in listing["items"]:
                    self.seen("LISTED", item, now)
                self.listed.set()
                version = listing["metadata"]["resourceVersion"]
                for event in self.api.watch(self.path, version):
                    if self.stopping.is_set():
                        return
                    if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                        self.seen(event["type"], event["object"], time.time())
                    elif event["type"] == "ERROR":  # the version expired: list again
                        break
            except (ApiError, RigError) as error:
                self.failure = error
                self.stopping.wait(1.0)


class Day:
    """Plays one day's demand on the running rig (`ctx`) with the stack as `plan` renders it."""

    def __init__(self, ctx: Context, demand: Demand, plan: Plan) -> None:
        self.ctx, self.demand, self.plan = ctx, demand, plan
        self.sharing = plan.pool_sharing()
        self.teams = sorted({group.team for group in demand.groups})
        self.deployment_groups = {change.group.name for change in demand.changes}
        self.lock = threading.Lock()
        self.seen = Observations(0.0)
        self.events: dict[str, dict[str, Any]] = {}  # event uid -> its last version
        self.started: list[PodRecord] = []  # pods that began running, for the rig to arm their completion

    # --- the workloads ---------------------------------------------------------------------------------------

    def _template(self, name: str, group: PodRequests) -> dict[str, Any]:
        """The group's pod, asking for GPUs the way its pool shares them: HAMi's resources, one time-sliced replica
        per vGPU, or whole GPUs with HAMi's webhook told to leave the pod alone."""
        sharing = self.sharing[group.pool]
        request = {"gpu": group.vgpus, "cores": group.gpu_cores or 0, "mem_mib": group.gpu_memory_mib or 0}
        body = gpu_deployment(
            self.ctx,
            name,
            group.team,
            group.pool,
            1,
            request,
            cpu=group.cpu,
            shared=sharing == names.SHARING_TIMESLICE,
        )
        template = body["spec"]["template"]
        container = template["spec"]["containers"][0]
        if sharing == names.SHARING_TIMESLICE:
            container["resources"]["limits"][names.GPU_SHARED] = str(group.vgpus)
        elif sharing != names.SHARING_HAMI:
            container["resources"]["limits"] = {names.GPU: str(group.vgpus)}
            template["metadata"]["labels"][names.HAMI_WEBHOOK_IGNORE[0]] = names.HAMI_WEBHOOK_IGNORE[1]
        template["metadata"]["labels"][GROUP_LABEL] = group.name
        container["resources"]["requests"]["memory"] = group.memory
        return template

    def deployment(self, name: str, group: PodRequests, replicas: int) -> dict[str, Any]:
        template = self._template(name, group)
        return {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": name, "namespace": group.team},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template},
        }

    def job(self, batch: Batch) -> dict[str, Any]:
        """An Indexed Job of the batch's pods, each waiting for the rig to set when it completes (`_arm`); an
        eviction's replacement is not a failure (the pod failure policy ignores it)."""
        template = self._template(batch.name, batch.group)
        template["spec"]["restartPolicy"] = "Never"
        template["metadata"]["annotations"] = {COMPLETE_AFTER: RIG_ARMS}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": batch.name, "namespace": batch.group.team, "labels": {GROUP_LABEL: batch.group.name}},
            "spec": {
                "completions": batch.count,
                "parallelism": batch.count,
                "completionMode": "Indexed",
                "backoffLimit": JOB_BACKOFF_LIMIT,
                "podFailurePolicy": {
                    "rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
                },
                "template": template,
            },
        }

    # --- what the rig sees -----------------------------------------------------------------------------------

    def _pod(self, kind: str, pod: dict[str, Any], now: float) -> None:
        meta, spec, status = pod["metadata"], pod["spec"], pod.get("status", {})
        if meta.get("namespace") not in self.teams:
            return
        with self.lock:
            record = self.seen.pods.get(meta["uid"])
            if record is None:
                index = meta.get("annotations", {}).get(JOB_INDEX)
                record = PodRecord(
                    meta["uid"],
                    meta["name"],
                    meta["labels"].get("app", ""),
                    meta["namespace"],
                    meta["labels"][GROUP_LABEL],
                    spec.get("priorityClassName", ""),
                    spec.get("schedulerName", ""),
                    now if kind == "ADDED" else (_epoch(meta["creationTimestamp"]) or now),
                    index=int(index) if index is not None else None,
                )
                self.seen.pods[meta["uid"]] = record
            phase = status.get("phase")
            if phase == "Succeeded" and record.completed is None:
                record.completed = now
            if kind == "DELETED" or meta.get("deletionTimestamp") or phase in ("Succeeded", "Failed"):
                record.gone = record.gone or now
            elif phase == "Running" and _started(pod):
                if record.running is None:
                    record.running = now
                    self.started.append(record)
                record.node = spec.get("nodeName")
            elif phase == "Running":
                placed = "placed by HAMi's scheduler" if HAMI_NODE in meta.get("annotations", {}) else "bypassing HAMi"
                record.pending_message = f"bound ({placed}) but never allocated by HAMi's device plugin"
            else:
                record.pending_message = condition(pod, "PodScheduled").get("message", "") or record.pending_message

    def _claim(self, kind: str, claim: dict[str, Any], now: float) -> None:
        meta = claim["metadata"]
        labels = meta.get("labels", {})
        with self.lock:
            record = self.seen.claims.get(meta["name"])
            if record is None:
                created = now if kind == "ADDED" else (_epoch(meta["creationTimestamp"]) or now)
                record = ClaimRecord(meta["name"], "", labels.get(names.POOL_LABEL, ""), created)
                self.seen.claims[meta["name"]] = record
            record.instance_type = record.instance_type or labels.get(names.INSTANCE_TYPE_LABEL, "")
            record.node = claim.get("status", {}).get("nodeName") or record.node
            if initialized(claim) and record.initialized is None:
                record.initialized = now
            if condition(claim, "Consolidatable").get("status") == "True":
                record.consolidatable = record.consolidatable or now
            elif record.deleted is None:
                record.consolidatable = None
            reason = condition(claim, "DisruptionReason")
            if reason.get("status") == "True":
                record.disruption = reason.get("reason", "")
            if (kind == "DELETED" or meta.get("deletionTimestamp")) and record.deleted is None:
                record.deleted = now

    KEPT_EVENTS = ("Evicted", "Preempted", "FailedCreate", "FailedScheduling", "DisruptionTerminating")

    def _event(self, kind: str, event: dict[str, Any], now: float) -> None:
        meta = event["metadata"]
        if event.get("reason") not in self.KEPT_EVENTS or meta.get("namespace") not in [*self.teams, "default"]:
            return
        stamped = _epoch(event.get("lastTimestamp") or event.get("eventTime") or meta["creationTimestamp"]) or now
        at = now if kind in ("ADDED", "MODIFIED") else stamped
        if at < self.seen.day_start - 1 or kind == "DELETED":
            return
        involved = event["involvedObject"]
        with self.lock:
            self.events[meta["uid"]] = {
                "namespace": meta["namespace"],
                "reason": event["reason"],
                "message": event.get("message", ""),
                "kind": involved.get("kind", ""),
                "name": involved.get("name", ""),
                "uid": involved.get("uid", ""),
                "source": (event.get("source") or {}).get("component") or event.get("reportingComponent", ""),
                "at": at,
            }

    # --- the day ---------------------------------------------------------------------------------------------

    def install(self) -> list[Switch]:
        """Apply the stack's NodePools compressed for the day, as they are at 00:00; the switches to come."""
        pools, switches = [], []
        for pool in self.plan.of_kind("NodePool"):
            name = pool["metadata"]["name"]
            compressed, notes, windows, pool_switches = compress_pool(pool, self.ctx.started, self.demand)
            pools.append(compressed)
            self.seen.compression += notes
            self.seen.windows += windows
            switches += pool_switches
            applied = compressed["spec"].get("disruption", {}).get("consolidateAfter", "0s")
            self.seen.consolidate_after_s[name] = math.inf if applied == "Never" else duration_seconds(applied) or 0
            self.seen.consolidate_after_minutes[name] = consolidate_after_minutes(pool)
        self.ctx.kubectl.apply(pools)
        return sorted(switches, key=lambda switch: switch.minute)

    def run(self) -> Observations:
        """The 00:00 state, then the day from its first real second to the horizon and the tail; the workloads
        are deleted after."""
        watches = [
            _Watch(self.ctx.api, f"/api/v1/pods?labelSelector={GROUP_LABEL}", self._pod),
            _Watch(self.ctx.api, "/apis/karpenter.sh/v1/nodeclaims", self._claim),
            _Watch(self.ctx.api, "/api/v1/events", self._event),
        ]
        for watch in watches:
            watch.start()
        for watch in watches:
            if not watch.listed.wait(60):
                raise RigError(f"could not list {watch.path}: {watch.failure}")
        switches = self.install()
        checker = Invariants.for_release(self.ctx.api, self.ctx.hami, self.ctx.rendered_hami.metrics_port)
        checker.start()
        try:
            self._start_state()
            self._play(switches)
        finally:
            for watch in watches:
                watch.stopping.set()
            tally = checker.stop()
        # A broken invariant fails the run (exit 1) once its document is written: e2e.run reads it there.
        self.seen.invariants = tally.summary()
        with self.lock:
            self.seen.events = sorted(self.events.values(), key=lambda e: e["at"])
        self._clean_up()
        return self.seen

    def _start_state(self) -> None:
        """The Deployments at their 00:00 counts and the batches already running then, running before the clock
        starts (or START_TIMEOUT_S passed)."""
        at_start = self.demand.replicas_at_start()
        groups = {group.name: group for group in self.demand.groups}
        running_batches = [batch for batch in self.demand.batches if batch.running_at_start]
        for name, count in at_start.items():
            self._create(self.deployment(name, groups[name], count))
        for batch in running_batches:
            self._create(self.job(batch))
        wanted, began = sum(at_start.values()) + sum(batch.count for batch in running_batches), time.time()
        while time.time() - began < START_TIMEOUT_S:
            with self.lock:
                running = sum(1 for p in self.seen.pods.values() if p.running is not None and p.gone is None)
            if running >= wanted:
                break
            time.sleep(TICK_S)
        took = time.time() - began
        self.seen.compression.append(
            f"the 00:00 state ({wanted} pods) ran {took:.0f} s before the clock started"
            if took < START_TIMEOUT_S
            else f"the 00:00 state did not all run within {START_TIMEOUT_S:.0f} s; the clock started anyway"
        )

    def _play(self, switches: list[Switch]) -> None:
        demand, seen = self.demand, self.seen
        actions: list[tuple[float, int, Callable[[], None]]] = []
        for order, change in enumerate(demand.changes):
            if change.minute > 0:
                actions.append((change.minute, order, lambda c=change: self._scale(c.group, c.replicas)))
        for order, batch in enumerate(demand.batches):
            if not batch.running_at_start:
                actions.append((batch.minute, len(actions) + order, lambda b=batch: self._create(self.job(b))))
        for order, switch in enumerate(switches):
            actions.append((switch.minute, -1 - order, lambda s=switch: self._switch(s)))  # budgets first
        actions.sort(key=lambda action: (action[0], action[1]))
        seen.day_start = time.time()
        horizon_s = demand.real_seconds(demand.horizon_minutes)
        batches = {batch.name: batch for batch in demand.batches}
        armed: dict[str, frozenset[str]] = {}
        next_sample = seen.day_start
        while True:
            now = time.time()
            elapsed = now - seen.day_start
            while actions and demand.real_seconds(actions[0][0]) <= elapsed:
                actions.pop(0)[2]()
            self._arm(batches, armed)
            if now >= next_sample:
                self._sample(now)
                next_sample += POLL_S
            settled = elapsed >= horizon_s + TAIL_SETTLE_S and self._tail_done()
            if elapsed >= horizon_s and (settled or elapsed >= horizon_s + TAIL_CAP_S):
                break
            due = [seen.day_start + demand.real_seconds(actions[0][0])] if actions else []
            time.sleep(max(0.0, min([now + TICK_S, next_sample, *due]) - time.time()))
        seen.run_end = time.time()
        if elapsed >= horizon_s + TAIL_CAP_S:
            seen.compression.append(
                f"nodes without a Deployment pod were still up {TAIL_CAP_S:.0f} s after the horizon"
            )

    def _create(self, workload: dict[str, Any]) -> None:
        """POST a Deployment or Job (milliseconds, where kubectl would hold the clock for a process start)."""
        group = "apps" if workload["kind"] == "Deployment" else "batch"
        path = f"/apis/{group}/v1/namespaces/{workload['metadata']['namespace']}/{workload['kind'].lower()}s"
        self.ctx.api.request("POST", path, workload)

    def _scale(self, group: PodRequests, replicas: int) -> None:
        path = f"/apis/apps/v1/namespaces/{group.team}/deployments/{group.name}"
        try:
            self.ctx.api.merge_patch(path, {"spec": {"replicas": replicas}})
        except ApiError as error:
            if error.status != 404:
                raise
            self._create(self.deployment(group.name, group, replicas))

    def _switch(self, switch: Switch) -> None:
        path = f"/apis/karpenter.sh/v1/nodepools/{rig_nodepool_name(switch.pool)}"
        self.ctx.api.merge_patch(path, {"spec": {"disruption": {"budgets": switch.budgets}}})

    def _arm(self, batches: dict[str, Batch], armed: dict[str, frozenset[str]]) -> None:
        """Set each job pod that began running to complete its duration from its start (a batch running when the
        day began: from the clock's start, for what was left of it); a gang's pods all once the last of them runs,
        from then. A replacement starts over, and re-arms its whole gang."""
        with self.lock:
            began, self.started[:] = list(self.started), []
        for pod in began:
            batch = batches.get(pod.app)
            if batch is None or pod.running is None:
                continue  # a Deployment's pod
            if not batch.gang:
                self._complete_at(
                    pod, max(pod.running, self.seen.day_start) + self.demand.real_seconds(batch.duration_minutes)
                )
                continue
            with self.lock:
                gang = [p for p in self.seen.pods.values() if p.app == batch.name and p.gone is None]
            uids = frozenset(p.uid for p in gang)
            if len(gang) < batch.count or any(p.running is None for p in gang) or armed.get(batch.name) == uids:
                continue
            at = max(max(p.running for p in gang if p.running), self.seen.day_start) + self.demand.real_seconds(
                batch.duration_minutes
            )
            for member in gang:
                self._complete_at(member, at)
            armed[batch.name] = uids

    def _complete_at(self, pod: PodRecord, epoch: float) -> None:
        """Tell KWOK to complete the pod at `epoch` (e2e.cluster.kwok_stages COMPLETE_AT)."""
        at = datetime.fromtimestamp(epoch, UTC).isoformat()
        self.ctx.api.merge_patch(
            f"/api/v1/namespaces/{pod.team}/pods/{pod.name}", {"metadata": {"annotations": {COMPLETE_AT: at}}}
        )

    def _sample(self, now: float) -> None:
        running: dict[str, int] = {}
        pending = 0
        with self.lock:
            for pod in self.seen.pods.values():
                if pod.gone is not None:
                    continue
                if pod.running is not None:
                    running[pod.group] = running.get(pod.group, 0) + 1
                else:
                    pending += 1
        self.seen.samples.append(Sample(now, running, pending))

    def _tail_done(self) -> bool:
        """Every batch finished and every node left holds a running Deployment pod."""
        with self.lock:
            alive = [p for p in self.seen.pods.values() if p.gone is None]
            if any(p.group not in self.deployment_groups for p in alive):
                return False
            held = {p.node for p in alive if p.running is not None}
            return all(c.node in held for c in self.seen.claims.values() if c.deleted is None)

    def _clean_up(self) -> None:
        for team in self.teams:
            for kind in ("deployments", "jobs"):
                self.ctx.kubectl.run("delete", kind, "--all", "-n", team, "--wait=false", "--cascade=background")
