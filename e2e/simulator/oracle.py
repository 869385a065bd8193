"""The oracle of a day and the policy-aware bound, integrated over the exact minutes the demand changes.

- **Admitted demand.** What the day asks for (`trace.Demand`), less what the stack refuses by design: a team's
  ResourceQuota admits a pod only while it fits, in the order the pods were asked for; a pod refused waits and is
  admitted the moment room frees up (a ReplicaSet or Job retrying), and a job's pod runs its duration from then.
  The quota resources are the plan's own `requests.*` keys; what a pod is charged follows its pool's sharing.
- **The oracle.** At every moment, the cheapest packing under HAMi's per-GPU rules (`exact.exact_packing`, proven
  by CP-SAT) of the admitted pods of each pool, as if every pod ran the moment it was admitted and pods migrated for
  free; dollars are that $/h integrated over exact event times (never sampled on a step grid) up to the demand's
  horizon, and apart from them the tail after it: the jobs still running, or admitted late, serving the same
  delayed work the run bills there (`Bounds.tail_usd`). Where the solver's limit stops a proof, the best packing
  found counts and the minutes it held are reported per pool (`PoolCost.unproven_minutes`): there the oracle is an
  achievable cost, not a proven optimum.
- **The policy-aware bound.** The same packing, but a pool's capacity may fall only `consolidateAfter` after it
  was last needed, and never inside a zero-node budget window that holds consolidation: the price of the design
  (what the stack's own disruption settings cost on this day), which no run can beat.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from e2e.cluster.device_plugins import NvidiaPluginConfig
from e2e.cluster.errors import RigError
from e2e.cluster.hami_values import HamiValues
from e2e.cluster.stack import Plan
from e2e.simulator.budgets import Window, budget_windows, consolidate_after_minutes
from e2e.simulator.demand import Demand, PodRequests, quantity_mib, quantity_millis
from e2e.simulator.exact import OPTIMAL, exact_packing
from e2e.simulator.mix import node_types
from e2e.simulator.packing import NodeType, PodShape
from gpushare import names
from gpushare.catalog import Catalog


def pod_shape(group: PodRequests, sharing: str) -> PodShape:
    """One pod as the packing sees it: HAMi pods by their GPU memory and cores, others by their GPUs alone."""
    hami = sharing == names.SHARING_HAMI
    return PodShape(
        group.vgpus,
        (group.gpu_memory_mib or 0) if hami else 0,
        (group.gpu_cores or 0) if hami else 0,
        quantity_millis(group.cpu),
        quantity_mib(group.memory),
    )


class Pools:
    """What each NodePool of the plan offers the oracle (its instance types as the rig's nodes, GPUs shared its
    way), what each team's quota admits, and the pools' disruption settings."""

    def __init__(self, plan: Plan, catalog: Catalog, hami: HamiValues) -> None:
        self.catalog, self.hami = catalog, hami
        values = plan.helm_values.get(names.NVIDIA_PLUGIN_RELEASE)
        nvidia = NvidiaPluginConfig.from_values(values) if values is not None else None
        self.kinds: dict[str, list[NodeType]] = {}
        self.sharing = plan.pool_sharing()
        self.nodepools = {pool["metadata"]["name"]: pool for pool in plan.of_kind("NodePool")}
        instance_types = plan.pool_instance_types()
        for name, pool in self.nodepools.items():
            kinds = node_types(catalog, instance_types[name], hami)
            if self.sharing[name] != names.SHARING_HAMI:
                slots = 1
                if nvidia is not None and self.sharing[name] == names.SHARING_TIMESLICE:
                    labels = pool["spec"]["template"]["metadata"]["labels"]
                    slots = nvidia.register(labels, 1).get(names.GPU_SHARED, 1)
                kinds = [_whole_gpus(kind, slots) for kind in kinds]
            self.kinds[name] = kinds
        self.quotas: dict[str, dict[str, float]] = {}
        for quota in plan.of_kind("ResourceQuota"):
            hard = quota["spec"].get("hard", {})
            self.quotas.setdefault(quota["metadata"]["namespace"], {}).update(
                {key.removeprefix("requests."): _amount(value) for key, value in hard.items()}
            )

    def shape(self, group: PodRequests) -> PodShape:
        return pod_shape(group, self.sharing[group.pool])

    def charge(self, group: PodRequests) -> dict[str, float]:
        """What one pod of the group counts against its team's quota (ResourceQuota counts requests; extended
        resources are requested as their limits)."""
        sharing = self.sharing[group.pool]
        charged = {"cpu": quantity_millis(group.cpu) / 1000, "memory": quantity_mib(group.memory) * 2**20}
        if sharing == names.SHARING_TIMESLICE:
            charged[names.GPU_SHARED] = group.vgpus
        else:
            charged[names.GPU] = group.vgpus
        if sharing == names.SHARING_HAMI:
            charged[names.GPU_MEMORY] = group.vgpus * (group.gpu_memory_mib or 0)
            charged[names.GPU_CORES] = group.vgpus * (group.gpu_cores or 0)
        return charged

    def windows(self, demand: Demand) -> list[Window]:
        return [
            w
            for pool in self.nodepools.values()
            for w in budget_windows(pool, demand.weekday, demand.horizon_minutes, demand.offset_minutes)[0]
        ]


def _amount(quantity: str | int | float) -> float:
    """A quota's hard amount (plain numbers as the stack renders them; CPU and memory suffixes too)."""
    text = str(quantity)
    for suffix, factor in (("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30), ("Ti", 2**40), ("m", 1e-3)):
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def _whole_gpus(kind: NodeType, slots: int) -> NodeType:
    """A node type whose GPUs hold `slots` pods each, whatever they ask (time-slicing does not isolate memory)."""
    return NodeType(kind.name, kind.usd_per_hour, kind.cpu_millis, kind.memory_mib, kind.pods, kind.gpus, slots, 0, 0)


@dataclass
class _Pod:
    """One pod the day asks for, in the order asked."""

    order: int
    group: PodRequests
    asked: float
    batch: str = ""
    duration: float = math.inf
    admitted: float | None = None


@dataclass
class Admission:
    """The admitted demand over the day: segments of constant demand, and per group the pods asked and those the
    quota never let in."""

    segments: list[tuple[float, float, Counter[str]]] = field(default_factory=list)  # group name -> pods alive
    asked: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    late: Counter[str] = field(default_factory=Counter)


def admitted_demand(demand: Demand, pools: Pools) -> Admission:
    """Play the day's asks against the teams' quotas at exact event times: who runs when. Past the horizon the
    Deployments hold their count (as on the rig, taking quota) but count no more, as the run's bill stops at the
    horizon for nodes serving them; jobs still running, or admitted late as quota frees, run on to their ends: the
    tail the run bills too."""
    order = itertools.count()
    events: list[tuple[float, int, str, Any]] = []
    for change in demand.changes:
        heapq.heappush(events, (change.minute, next(order), "scale", change))
    for batch in demand.batches:
        heapq.heappush(events, (batch.minute, next(order), "arrive", batch))
    heapq.heappush(events, (demand.horizon_minutes, next(order), "horizon", None))
    result = Admission()
    waiting: list[_Pod] = []
    alive: list[_Pod] = []
    ending: set[int] = set()  # the orders of pods whose end is due (a gang's once all of it runs)
    by_deployment: dict[str, list[_Pod]] = {}
    gangs: dict[str, list[_Pod]] = {}
    last, horizon = 0.0, demand.horizon_minutes
    while events:
        now = events[0][0]
        counted = [pod for pod in alive if last < horizon or pod.order in ending]
        if now > last and counted:
            result.segments.append((last, now, Counter(pod.group.name for pod in counted)))
        last = now
        while events and events[0][0] == now:
            _, _, kind, payload = heapq.heappop(events)
            if kind == "horizon":
                continue
            if kind == "scale":
                pods = by_deployment.setdefault(payload.group.name, [])
                while len(pods) < payload.replicas:
                    pod = _Pod(next(order), payload.group, now)
                    pods.append(pod)
                    waiting.append(pod)
                    result.asked[pod.group.name] += 1
                while len(pods) > payload.replicas:  # a ReplicaSet removes pods not yet running first
                    gone = next((p for p in reversed(pods) if p.admitted is None), pods[-1])
                    pods.remove(gone)
                    (waiting if gone.admitted is None else alive).remove(gone)
            elif kind == "arrive":
                members = [
                    _Pod(next(order), payload.group, now, payload.name, payload.duration_minutes)
                    for _ in range(payload.count)
                ]
                waiting.extend(members)
                result.asked[payload.group.name] += payload.count
                if payload.gang:
                    gangs[payload.name] = members
            else:  # "end": a job's pod (or a whole gang) finished
                for pod in payload:
                    if pod in alive:
                        alive.remove(pod)
        for pod in _admit(waiting, alive, pools, now):
            if now > pod.asked:
                result.late[pod.group.name] += 1
            if pod.batch and pod.batch not in gangs:
                heapq.heappush(events, (now + pod.duration, next(order), "end", [pod]))
                ending.add(pod.order)
            elif pod.batch and all(member.admitted is not None for member in gangs[pod.batch]):
                members = gangs.pop(pod.batch)
                heapq.heappush(events, (now + pod.duration, next(order), "end", members))
                ending.update(member.order for member in members)
    for pod in waiting:
        result.refused[pod.group.name] += 1
    return result


def _admit(waiting: list[_Pod], alive: list[_Pod], pools: Pools, now: float) -> list[_Pod]:
    """Admit waiting pods, in the order they were asked for, while their team's quota has room (each ReplicaSet or
    Job retries on its own, so a pod that does not fit does not hold back a smaller one); returns them."""
    used: dict[str, Counter[str]] = {}
    for pod in alive:
        used.setdefault(pod.group.team, Counter()).update(pools.charge(pod.group))
    admitted = []
    for pod in sorted(waiting, key=lambda p: p.order):
        hard = pools.quotas.get(pod.group.team, {})
        charge = pools.charge(pod.group)
        team_used = used.setdefault(pod.group.team, Counter())
        if all(team_used[key] + charge.get(key, 0) <= limit for key, limit in hard.items()):
            team_used.update(charge)
            pod.admitted = now
            admitted.append(pod)
    for pod in admitted:
        waiting.remove(pod)
        alive.append(pod)
    return admitted


@dataclass
class PoolCost:
    """One pool's $/h over the day: `steps` are (from minute, $/h) in time order, each held until the next."""

    steps: list[tuple[float, float]]
    unproven_minutes: float = 0.0

    def at(self, minute: float) -> float:
        value = 0.0
        for start, usd in self.steps:
            if start > minute:
                break
            value = usd
        return value

    def usd(self, horizon: float, since: float = 0.0) -> float:
        """Dollars over [since, horizon)."""
        total = 0.0
        for (start, usd), (end, _) in zip(self.steps, [*self.steps[1:], (horizon, 0.0)], strict=True):
            total += usd * max(0.0, min(end, horizon) - max(start, since)) / 60
        return total

    def after(self, minute: float) -> PoolCost:
        """The same $/h from `minute` on, nothing before it."""
        return PoolCost(_compact([(0.0, 0.0), (minute, self.at(minute)), *(s for s in self.steps if s[0] > minute)]))


def oracle_costs(admission: Admission, pools: Pools, groups: Iterable[PodRequests]) -> dict[str, PoolCost]:
    """Pool -> the cheapest per-GPU packing's $/h of its admitted pods, at every change of demand."""
    named = {group.name: group for group in groups}
    cache: dict[tuple[str, tuple[tuple[PodShape, int], ...]], tuple[float, bool]] = {}
    steps: dict[str, list[tuple[float, float]]] = {pool: [(0.0, 0.0)] for pool in pools.kinds}
    unproven: Counter[str] = Counter()
    segments = admission.segments
    for index, (start, end, alive) in enumerate(segments):
        shapes: dict[str, Counter[PodShape]] = {}
        for name, count in alive.items():
            group = named[name]
            shapes.setdefault(group.pool, Counter())[pools.shape(group)] += count
        for pool, found in steps.items():
            held = shapes.get(pool, Counter())
            key = (pool, tuple(sorted(held.items(), key=repr)))
            if key not in cache:
                cache[key] = _packed_usd(pool, list(held.elements()), pools)
            usd, proven = cache[key]
            found.append((start, usd))
            if not proven:
                unproven[pool] += end - start
        if index + 1 == len(segments) or segments[index + 1][0] != end:  # nothing alive until the next segment
            for found in steps.values():
                found.append((end, 0.0))
    return {
        pool: PoolCost(_compact(found), unproven[pool]) for pool, found in steps.items() if any(usd for _, usd in found)
    }


# Per interval of constant demand: a day has hundreds, so each gets a fraction of make pack's limit.
ORACLE_DETERMINISTIC_LIMIT = 0.3


def _packed_usd(pool: str, pods: list[PodShape], pools: Pools) -> tuple[float, bool]:
    """The cheapest packing's $/h, and whether the solver proved it optimal within its limit."""
    if not pods:
        return 0.0, True
    found = exact_packing(pods, pools.kinds[pool], deterministic_limit=ORACLE_DETERMINISTIC_LIMIT)
    if not found.nodes:
        raise RigError(f"no instance type of pool {pool} holds every pod the day asks for ({found.status})")
    return found.usd_per_hour, found.status == OPTIMAL


def _compact(steps: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    """Steps without repeats: the last value set at each minute, kept only when it changes the $/h."""
    by_minute: dict[float, float] = {}
    for start, usd in steps:
        by_minute[start] = usd
    kept: list[tuple[float, float]] = []
    for start, usd in sorted(by_minute.items()):
        if not kept or kept[-1][1] != usd:
            kept.append((start, usd))
    return kept


def policy_bound(oracle: PoolCost, consolidate_after: float, windows: list[Window]) -> PoolCost:
    """The pool's oracle $/h, held `consolidate_after` minutes after every fall, and through every zero-node window
    that holds consolidation from its opening: at each minute the most the oracle needed over the look-back."""
    held = [w for w in windows if w.holds_consolidation()]
    times = {start for start, _ in oracle.steps}
    if math.isfinite(consolidate_after):
        times |= {start + consolidate_after for start, _ in oracle.steps}
    times |= {edge for w in held for edge in (w.start_minute, w.end_minute) if edge >= 0}
    steps = []
    for now in sorted(times):
        back = now - consolidate_after
        for window in held:
            if window.start_minute <= now < window.end_minute:
                back = min(back, window.start_minute)
        steps.append((now, _most(oracle.steps, back, now)))
    return PoolCost(_compact(steps))


def _most(steps: list[tuple[float, float]], back: float, now: float) -> float:
    """The highest value the steps hold anywhere in [back, now]."""
    most = 0.0
    for (start, usd), (end, _) in zip(steps, [*steps[1:], (math.inf, 0.0)], strict=True):
        if start <= now and end > back:
            most = max(most, usd)
    return most


@dataclass
class Bounds:
    """The day's oracle and policy-aware bound per pool, and the admitted demand they were computed on. The oracle's
    steps run past the horizon while jobs do (`admitted_demand`); the policy bound is computed twice: over the day
    (`policy`, read up to the horizon) and over the tail's work alone (`tail_policy`, read from it), so that neither
    holds the Deployments' nodes past the horizon, where the run's bill does not."""

    admission: Admission
    oracle: dict[str, PoolCost]
    policy: dict[str, PoolCost]
    horizon: float
    tail_policy: dict[str, PoolCost] = field(default_factory=dict)

    def usd(self, which: str) -> dict[str, float]:
        """Pool -> dollars within the day, [0, horizon)."""
        costs = self.oracle if which == "oracle" else self.policy
        return {pool: cost.usd(self.horizon) for pool, cost in costs.items()}

    def tail_usd(self, which: str, end: float) -> dict[str, float]:
        """Pool -> dollars after the horizon up to `end` (where the run's bill ends)."""
        costs = self.oracle if which == "oracle" else self.tail_policy
        return {pool: cost.usd(end, since=self.horizon) for pool, cost in costs.items()}

    def at(self, which: str, minute: float) -> float:
        """The $/h over every pool at `minute`: the policy bound's of the tail past the horizon."""
        costs = self.oracle if which == "oracle" else self.policy if minute < self.horizon else self.tail_policy
        return sum(cost.at(minute) for cost in costs.values())


def day_bounds(demand: Demand, pools: Pools) -> Bounds:
    """Admitted demand, oracle and policy-aware bound of the day on the plan's pools."""
    admission = admitted_demand(demand, pools)
    horizon = demand.horizon_minutes
    oracle = oracle_costs(admission, pools, demand.groups)
    windows = pools.windows(demand)

    def bound(cost: PoolCost, pool: str) -> PoolCost:
        return policy_bound(
            cost, consolidate_after_minutes(pools.nodepools[pool]), [w for w in windows if w.pool == pool]
        )

    policy = {pool: bound(cost, pool) for pool, cost in oracle.items()}
    tail_policy = {pool: bound(cost.after(horizon), pool) for pool, cost in oracle.items()}
    return Bounds(admission, oracle, policy, horizon, tail_policy)
