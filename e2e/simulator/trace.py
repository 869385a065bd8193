"""A day of GPU demand for `make simulate`: the trace file, validated, and the demand it asks for, to the minute.

A trace names a stack and a compressed day (`secondsPerHour` real seconds per simulated hour). Deployment
groups follow a replica count over the day (steps at exact minutes, or a diurnal curve sampled every
`stepMinutes`); job groups arrive with a count of pods, each of which runs for a duration from its own start
(or, with `gang`, all of a batch's pods from when all of them run). Variants are copies of the stack with pool or
team keys changed, run against the same trace for a side-by-side comparison.

Everything here is pure. `Demand` is what a day asks for, whichever file it came from (this trace, or a replayed
pod list: e2e.simulator.replay); the rig (e2e.simulator.day) plays it, e2e.simulator.oracle and
e2e.simulator.figures measure it. The validator refuses every trace the rig would silently change or could never
run: pods no node of their pool can hold (judged by the stack's own capacity model, gpushare.capacity, the one
the admission bound and the policy pack use), steps or arrivals after the day, variants that change nothing or
take a group's pool away; and it reports every problem, one line each, even when the schema has others.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from e2e.cluster.stack import Plan, variant_plan
from gpushare import names
from gpushare.capacity import pool_plans
from gpushare.catalog import Catalog, load_catalog
from gpushare.config import StackConfig
from gpushare.eks import FIXED_PLAN_DAY
from gpushare.errors import UserError, all_errors, key_path, raise_at
from gpushare.files import read_yaml
from gpushare.loader import load_stack_config
from gpushare.wording import Wording

CLOCK = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
NAME = r"^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$"
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # cron's numbering: Sunday is 0
MINUTES_PER_DAY = 24 * 60
BASELINE = "stack"
# Karpenter's kwok provider reserves this much of every node (kwok/cloudprovider/helpers.go KubeReserved): a pod
# asking a node's whole CPU or memory never fits the rig's node.
KWOK_RESERVED_CPU_MILLIS = 100
KWOK_RESERVED_MEMORY_MIB = 10


def minute_of(clock: str) -> int:
    """`HH:MM` of the simulated day as minutes since midnight."""
    match = CLOCK.match(clock)
    if match is None:
        raise ValueError(f"{clock!r} is not a time of day; write HH:MM, 00:00 to 23:59")
    return int(match.group(1)) * 60 + int(match.group(2))


def clock(minute: float) -> str:
    """Simulated minutes since midnight as `HH:MM` (24:00 and later past the day's end)."""
    return f"{int(minute // 60):02d}:{int(minute % 60):02d}"


def quantity_mib(quantity: str) -> int:
    """A memory request as the trace writes it (`512Mi`, `4Gi`) in MiB."""
    return int(quantity[:-2]) * (1024 if quantity.endswith("Gi") else 1)


def quantity_millis(quantity: str) -> int:
    """A CPU request as the trace writes it (`500m`, `4`) in millicores."""
    return int(quantity[:-1]) if quantity.endswith("m") else int(quantity) * 1000


class PodRequests(BaseModel):
    """What each pod of a group asks for. GPU memory and cores are HAMi's resources (needed on a HAMi pool);
    on a time-sliced pool each vGPU is one time-sliced replica, on an exclusive pool one whole GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=NAME, description="Names the group's workloads; unique across deployments and jobs")
    team: str = Field(description="A team of the stack: its namespace runs the pods")
    pool: str = Field(description="One of the team's pools: the pods select it")
    vgpus: int = Field(
        default=1,
        ge=1,
        le=16,
        description="GPUs per pod: HAMi vGPUs (each on its own GPU of one node), one time-sliced replica, or whole "
        "GPUs, as the pool shares them",
    )
    gpu_memory_mib: int | None = Field(
        default=None,
        alias="gpuMemoryMib",
        ge=1,
        description="GPU memory per vGPU, at most one GPU of the pool; required on a HAMi pool",
    )
    gpu_cores: int | None = Field(
        default=None,
        alias="gpuCores",
        ge=1,
        le=100,
        description="Percent of a GPU's cores per vGPU; required on a HAMi pool",
    )
    cpu: str = Field(
        default="500m", pattern=r"^[0-9]+m?$", description="CPU request per pod, within one node of the pool"
    )
    memory: str = Field(
        default="1Gi", pattern=r"^[0-9]+(Mi|Gi)$", description="Memory request per pod, within one node of the pool"
    )


class Diurnal(BaseModel):
    """A day curve: `trough` replicas twelve hours from `peakAt`, `peak` at it, a cosine in between."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    trough: int = Field(ge=0, le=1000, description="Replicas twelve hours from the peak")
    peak: int = Field(ge=1, le=1000, description="Replicas at peakAt")
    peak_at: str = Field(alias="peakAt", description="Time of day (HH:MM) of the peak")

    @field_validator("peak_at")
    @classmethod
    def _clock(cls, value: str) -> str:
        minute_of(value)
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Diurnal:
        if self.trough > self.peak:
            raise ValueError(f"trough {self.trough} is above peak {self.peak}")
        return self

    def at(self, minute: float) -> int:
        phase = 2 * math.pi * (minute - minute_of(self.peak_at)) / MINUTES_PER_DAY
        return round(self.trough + (self.peak - self.trough) * (1 + math.cos(phase)) / 2)


class DeploymentGroup(PodRequests):
    """Pods of a Deployment whose replica count follows the day: `replicas` steps `{HH:MM: count}` (0 before the
    first), or a `diurnal` curve."""

    replicas: dict[str, int] | None = Field(
        default=None,
        description="Steps {HH:MM: replicas}, each applied at its exact minute and held until the next (0 before "
        "the first); every step within the day's hours",
    )
    diurnal: Diurnal | None = Field(
        default=None, description="A cosine day curve instead of replicas steps, sampled every stepMinutes"
    )

    @field_validator("replicas")
    @classmethod
    def _steps(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("list at least one step {HH:MM: replicas}")
        problems: list[tuple[tuple[int | str, ...], str]] = []
        for at, count in value.items():
            try:
                minute_of(at)
            except ValueError as error:
                problems.append(((at,), str(error)))
            if not 0 <= count <= 1000:
                problems.append(((at,), f"replicas {count} out of range; allowed 0 to 1000"))
        raise_at(problems)
        return value

    @model_validator(mode="after")
    def _one_curve(self) -> DeploymentGroup:
        if (self.replicas is None) == (self.diurnal is None):
            raise ValueError("set exactly one of replicas (steps) and diurnal (a curve)")
        return self

    def replicas_at(self, minute: float) -> int:
        """The curve's value, or the last step at or before `minute` (0 before the first)."""
        if self.diurnal is not None:
            return self.diurnal.at(minute)
        started = [(minute_of(at), count) for at, count in (self.replicas or {}).items() if minute_of(at) <= minute]
        return max(started)[1] if started else 0


class Arrival(BaseModel):
    """`count` pods arriving at `at`, each running `durationMinutes` (simulated) from its own start; with
    `everyMinutes`, again at that interval until `until` (inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    at: str = Field(description="Time of day (HH:MM) the pods arrive, within the day's hours")
    count: int = Field(ge=1, le=100, description="Pods that arrive together")
    duration_minutes: int = Field(
        alias="durationMinutes",
        ge=1,
        le=48 * 60,
        description="Simulated minutes each pod runs from its own start (with gang: once all of the batch run); "
        "an evicted pod starts over",
    )
    every_minutes: int | None = Field(default=None, alias="everyMinutes", ge=1, description="Repeat at this interval")
    until: str | None = Field(
        default=None, description="Last repeat (HH:MM), with everyMinutes; within the day's hours"
    )

    @field_validator("at", "until")
    @classmethod
    def _clock(cls, value: str | None) -> str | None:
        if value is not None:
            minute_of(value)
        return value

    @model_validator(mode="after")
    def _repeat(self) -> Arrival:
        if (self.every_minutes is None) != (self.until is None):
            raise ValueError("everyMinutes and until go together: set both to repeat the arrival, or neither")
        if self.until is not None and minute_of(self.until) < minute_of(self.at):
            raise ValueError(f"until {self.until} is before at {self.at}")
        return self

    def minutes(self) -> list[int]:
        """The simulated minutes this arrival happens at."""
        first = minute_of(self.at)
        if self.every_minutes is None or self.until is None:
            return [first]
        return list(range(first, minute_of(self.until) + 1, self.every_minutes))


class JobGroup(PodRequests):
    """Batches of pods that arrive, run for a while and finish: each batch is one Kubernetes Job."""

    arrivals: tuple[Arrival, ...] = Field(min_length=1, description="When the group's batches arrive")
    gang: bool = Field(
        default=False,
        description="All pods of a batch start together: their durationMinutes counts from when all of them "
        "run, and one evicted pod restarts the whole batch (a distributed job)",
    )


class Variant(BaseModel):
    """The stack with keys of some pools or teams replaced (`null` removes a key), e.g.
    `pools: {g5-shared: {disruption: {consolidationPolicy: WhenEmpty}}}`; a map replaces a map key by key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME, description="Names the variant in the comparison; not `stack`")
    pools: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Pool name -> keys of gpushare:pools to change (null removes a key); only pools the day's "
        "groups run on, and only to values the stack does not already have",
    )
    teams: dict[str, dict[str, Any]] = Field(
        default_factory=dict,
        description="Team name -> keys of gpushare:teams to change (null removes a key); only teams the day's "
        "groups run in, never taking a group's pool away",
    )

    @model_validator(mode="after")
    def _changes_something(self) -> Variant:
        if not self.pools and not self.teams:
            raise ValueError("a variant changes at least one pool or team")
        return self


class Trace(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    stack: Literal["dev", "prod"] = Field(description="The stack (Pulumi.<stack>.yaml) the day runs on")
    seconds_per_hour: int = Field(
        default=20, alias="secondsPerHour", ge=5, le=3600, description="Real seconds per simulated hour"
    )
    hours: int = Field(default=24, ge=1, le=24, description="Length of the simulated day, from 00:00")
    step_minutes: int = Field(
        default=15,
        alias="stepMinutes",
        ge=1,
        le=60,
        description="How often a diurnal curve is sampled (simulated minutes); steps, arrivals, budget windows "
        "and the oracle follow exact minutes",
    )
    weekday: Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"] = Field(
        default="wed", description="The simulated day's weekday: which scheduled disruption budgets open"
    )
    deployments: tuple[DeploymentGroup, ...] = Field(default=(), description="Groups whose replicas follow the day")
    jobs: tuple[JobGroup, ...] = Field(default=(), description="Groups of pods that arrive, run and finish")
    variants: tuple[Variant, ...] = Field(
        default=(), description="Copies of the stack to run the same day against, each compared with the stack"
    )

    @property
    def groups(self) -> tuple[PodRequests, ...]:
        return (*self.deployments, *self.jobs)

    def samples(self) -> range:
        """The minutes at which diurnal curves are sampled."""
        return range(0, self.hours * 60, self.step_minutes)

    def demand(self) -> Demand:
        return Demand(
            self.stack,
            self.seconds_per_hour,
            self.hours,
            self.weekday,
            self.groups,
            tuple(replica_schedule(self)),
            tuple(batches(self)),
            self.variants,
        )


@dataclass(frozen=True)
class Batch:
    """One arrival of a job group (one Kubernetes Job): its name, when it arrives (simulated minute), how many
    pods, how long each runs once it runs, whether they run as a gang, and whether they were already running when
    the day began (a replayed pod created before it: part of the 00:00 state, its duration what was left of it)."""

    group: PodRequests
    name: str
    minute: float
    count: int
    duration_minutes: float
    gang: bool = False
    running_at_start: bool = False

    @property
    def ends(self) -> float:
        """When the batch would end had every pod run the moment it arrived."""
        return self.minute + self.duration_minutes


@dataclass(frozen=True)
class Change:
    """A Deployment group's replica count from `minute` (simulated) on."""

    minute: float
    group: PodRequests
    replicas: int


@dataclass(frozen=True)
class Demand:
    """What a day asks for, whichever file it came from: the rig plays it, the oracle and the figures measure it.
    Deployments hold their last count past the day's end while late batches finish (`horizon_minutes`)."""

    stack: str
    seconds_per_hour: int
    hours: int
    weekday: str
    groups: tuple[PodRequests, ...]
    changes: tuple[Change, ...]
    batches: tuple[Batch, ...]
    variants: tuple[Variant, ...] = ()
    offset_minutes: float = 0.0  # the UTC time of day the day's minute 0 is (budget schedules are UTC)

    @property
    def day_minutes(self) -> int:
        return self.hours * 60

    @property
    def horizon_minutes(self) -> float:
        """The day's end, or later when a batch asked for runs past it: the oracle and the bill cover both."""
        return max([float(self.day_minutes), *(batch.ends for batch in self.batches)])

    def replicas_at_start(self) -> dict[str, int]:
        """Group name -> replicas at 00:00: what runs before the day's clock starts."""
        return {change.group.name: change.replicas for change in self.changes if change.minute == 0}

    def real_seconds(self, minutes: float) -> float:
        return minutes * self.seconds_per_hour / 60

    def _rises(self) -> list[tuple[float, str, int, int]]:
        """Every rise of a Deployment group's count after 00:00: (minute, group, pods before, pods after)."""
        found: list[tuple[float, str, int, int]] = []
        last: dict[str, int] = {}
        for change in self.changes:
            before = last.get(change.group.name, 0)
            last[change.group.name] = change.replicas
            if change.minute > 0 and change.replicas > before:
                found.append((change.minute, change.group.name, before, change.replicas))
        return found

    def shortest_life(self) -> tuple[str, float, float] | None:
        """The Deployment pods the day keeps for the shortest time: (group, the minute they are added, the
        simulated minutes until a scale-down removes them). A Deployment's pod is deleted on scale-down whether it
        ran or not (a Job's pod runs its duration from its own start), so a life shorter than the rig takes to
        launch a node and bind pods removes pods that never ran: the compression's doing, not the stack's. The
        00:00 state runs before the clock starts and is left out."""
        found = []
        for minute, name, _, replicas in self._rises():
            falls = [
                c.minute for c in self.changes if c.group.name == name and c.minute > minute and c.replicas < replicas
            ]
            if falls:
                found.append((min(falls) - minute, minute, name))
        if not found:
            return None
        life, minute, name = min(found)
        return name, minute, life

    def busiest_hour(self) -> tuple[float, int] | None:
        """The simulated hour (from an addition's minute) in which the most pods are added, and how many: the rig
        places pods at a bounded rate, so more of them in less real time queue behind each other. Deployments'
        rises and the batches that arrive during the day both add pods."""
        additions = [(minute, after - before) for minute, _, before, after in self._rises()]
        additions += [(batch.minute, batch.count) for batch in self.batches if not batch.running_at_start]
        return max(
            ((start, sum(n for minute, n in additions if start <= minute < start + 60)) for start, _ in additions),
            key=lambda hour: (hour[1], -hour[0]),
            default=None,
        )


def batches(trace: Trace) -> list[Batch]:
    """Every arrival of every job group, in time order, each named by its group and time of day (a Job's name):
    arrivals of one group at the same minute (a repeat and a burst) get -2, -3... in the order the file lists them."""
    arrivals = sorted(
        (
            (minute, order, group, arrival)
            for group in trace.jobs
            for order, arrival in enumerate(group.arrivals)
            for minute in arrival.minutes()
        ),
        key=lambda found: (found[0], found[2].name, found[1]),
    )
    named: Counter[str] = Counter()
    found = []
    for minute, _, group, arrival in arrivals:
        name = f"{group.name}-{minute // 60:02d}{minute % 60:02d}"
        named[name] += 1
        found.append(
            Batch(
                group,
                name if named[name] == 1 else f"{name}-{named[name]}",
                minute,
                arrival.count,
                arrival.duration_minutes,
                group.gang,
            )
        )
    return sorted(found, key=lambda batch: (batch.minute, batch.name))


def replica_schedule(trace: Trace) -> list[Change]:
    """Every change of a Deployment group's count: steps at their exact minute, curves sampled every step."""
    changes = []
    for group in trace.deployments:
        if group.diurnal is not None:
            minutes: Iterable[int] = trace.samples()
        else:
            minutes = sorted({0, *(minute_of(at) for at in group.replicas or {})})
        last = None
        for minute in minutes:
            count = group.replicas_at(minute)
            if count != last:
                changes.append(Change(minute, group, count))
                last = count
    return sorted(changes, key=lambda change: (change.minute, change.group.name))


# --- What a pool's nodes can hold ---------------------------------------------------------------------------


@dataclass(frozen=True)
class NodeRoom:
    """One instance type of a pool as a pod sees it: GPUs (with HAMi, each GPU's registered memory and cores), and
    the CPU and memory the rig's node offers pods."""

    instance_type: str
    gpus: int
    gpu_memory_mib: int
    gpu_cores: int
    cpu_millis: int
    memory_mib: int


@dataclass(frozen=True)
class PoolRoom:
    """A pool as the trace validator judges it: how it shares GPUs and what each of its instance types holds."""

    name: str
    sharing: str
    rooms: tuple[NodeRoom, ...]

    def holds(self, group: PodRequests) -> list[tuple[str, str]]:
        """(key, problem) for each request no node of the pool can ever hold; empty when some type holds the pod."""
        problems: list[tuple[str, str]] = []
        hami = self.sharing == names.SHARING_HAMI
        timeslice = self.sharing == names.SHARING_TIMESLICE
        if hami:
            for key, value in (("gpuMemoryMib", group.gpu_memory_mib), ("gpuCores", group.gpu_cores)):
                if value is None:
                    problems.append((key, f"required on pool {self.name} (HAMi-shared): the rig would ask 0"))
        if timeslice and group.vgpus > 1:
            problems.append(
                (
                    "vgpus",
                    f"{group.vgpus} on pool {self.name} (time-sliced): a container gets one replica (the team's "
                    "per-GPU policy refuses more); allowed: 1",
                )
            )
        asks = self._asks(group)
        for key, (asked, offered) in asks.items():
            best = max(self.rooms, key=offered)
            if asked > offered(best):
                problems.append((key, f"{_shown(key, asked)} is more than {_offer(key, best, offered(best))}"))
        if not problems and not any(all(a <= offered(room) for a, offered in asks.values()) for room in self.rooms):
            wanted = ", ".join(f"{key} {_shown(key, asked)}" for key, (asked, _) in asks.items())
            problems.append(("(group)", f"no instance type of pool {self.name} holds {wanted} on one node"))
        return problems

    def _asks(self, group: PodRequests) -> dict[str, tuple[int, Callable[[NodeRoom], int]]]:
        """Key -> (what one pod asks, what one node of a type offers it)."""
        asks: dict[str, tuple[int, Callable[[NodeRoom], int]]] = {
            "cpu": (quantity_millis(group.cpu), lambda room: room.cpu_millis),
            "memory": (quantity_mib(group.memory), lambda room: room.memory_mib),
        }
        if self.sharing != names.SHARING_TIMESLICE:  # one replica per container, checked above
            asks["vgpus"] = (group.vgpus, lambda room: room.gpus)
        if self.sharing == names.SHARING_HAMI:
            asks["gpuMemoryMib"] = (group.gpu_memory_mib or 0, lambda room: room.gpu_memory_mib)
            asks["gpuCores"] = (group.gpu_cores or 0, lambda room: room.gpu_cores)
        return asks


def _shown(key: str, amount: int) -> str:
    return {"cpu": f"{amount}m", "memory": f"{amount}Mi"}.get(key, str(amount))


def _offer(key: str, room: NodeRoom, amount: int) -> str:
    what = {
        "vgpus": f"{amount} GPU(s) per node",
        "cpu": f"{amount}m CPU for pods",
        "memory": f"{amount}Mi memory for pods",
        "gpuMemoryMib": f"{amount} MiB per GPU as HAMi registers it",
        "gpuCores": f"{amount} cores per GPU",
    }[key]
    return f"any node of the pool offers (at most {what}, on {room.instance_type})"


def pool_rooms(config: StackConfig, catalog: Catalog | None = None) -> dict[str, PoolRoom]:
    """Pool name -> what its nodes can hold, from the stack's own capacity model (gpushare.capacity: what each
    HAMi node registers per GPU, as the admission bound and the pack compute it) and the catalog."""
    catalog = catalog or load_catalog()
    plans = pool_plans(config)
    rooms = {}
    for pool in config.pools:
        per_type = {c.instance_type: c for c in plans[pool.name].capacities}
        found = []
        for name in pool.instance_types:
            itype = catalog.instance_type(name)
            hami = per_type.get(name)
            found.append(
                NodeRoom(
                    name,
                    itype.gpu_count,
                    hami.vgpu_max_memory_mib if hami else 0,
                    hami.gpu_cores // hami.gpus if hami else 0,
                    itype.vcpu * 1000 - KWOK_RESERVED_CPU_MILLIS,
                    itype.memory_mib - KWOK_RESERVED_MEMORY_MIB,
                )
            )
        rooms[pool.name] = PoolRoom(pool.name, pool.sharing, tuple(found))
    return rooms


def stack_config(raw: dict[str, Any]) -> StackConfig | None:
    """The stack config as the program reads it (judged for the rig's plan day), or None when it does not load:
    the program's own check of that config names its problems."""
    try:
        return load_stack_config(raw, today=FIXED_PLAN_DAY)
    except UserError:
        return None


# --- Validation ---------------------------------------------------------------------------------------------

# Keys of the fixed-mix format (e2e.simulator.mix) that a trace does not have: named as such, with what to write.
MIX_KEYS = {
    (): {"pods": "a fixed-mix key (make simulate with a mix); a trace lists `deployments` and `jobs` instead"},
    ("deployments",): {
        "count": "a fixed-mix key; a deployment group's replicas follow `replicas` steps or a `diurnal` curve"
    },
    ("jobs",): {"count": "a fixed-mix key; a job group's pods come in `arrivals`, each with its own count"},
}


def _schema_problems(error: ValidationError) -> dict[str, str]:
    """Key -> problem for every schema error, a fixed-mix key named as one."""
    found = all_errors(error, lambda loc: key_path("", loc) or "(top level)", Wording(Trace)).errors
    lines = {problem.key: str(problem).removeprefix(f"{problem.key}: ") for problem in found}
    for detail in error.errors(include_url=False):
        loc = tuple(detail["loc"])
        if detail["type"] != "extra_forbidden" or not loc:
            continue
        parent = tuple(part for part in loc[:-1] if isinstance(part, str))
        hint = MIX_KEYS.get(parent, {}).get(str(loc[-1]))
        if hint is not None:
            lines[key_path("", loc)] = hint
    return lines


def _valid(model: type[BaseModel], raw: Any) -> Any:
    """`raw` as `model`, or without the keys that are wrong on their own (so its other keys can still be judged
    across the trace), or None."""
    try:
        return model.model_validate(raw)
    except ValidationError as error:
        wrong = {detail["loc"][0] for detail in error.errors() if detail["loc"]}
        if not isinstance(raw, dict) or not wrong:
            return None
    try:
        return model.model_validate({key: value for key, value in raw.items() if key not in wrong})
    except ValidationError:
        return None


def _field(name: str, raw: dict[str, Any]) -> Any:
    """A top-level field of the trace on its own (its default when absent), or None when it is invalid."""
    field = Trace.model_fields[name]
    key = field.alias or name
    if key not in raw:
        return field.get_default(call_default_factory=True)
    try:
        return TypeAdapter(Annotated[field.annotation, field]).validate_python(raw[key])
    except ValidationError:
        return None


def _groups(raw: dict[str, Any], key: str, model: type[PodRequests]) -> list[tuple[int, Any]]:
    items = raw.get(key)
    if not isinstance(items, list):
        return []
    return [(index, group) for index, item in enumerate(items) if (group := _valid(model, item)) is not None]


def trace_problems(raw: Any, config: dict[str, Any] | None) -> list[str]:
    """Every problem of a trace, one line each as `key: problem`: the schema's, and every check across keys over
    the parts that are valid on their own (a bad key never hides another), and with the stack's `config` map each
    group's team, pool and what its pool can hold, and each variant judged against the trace's own groups."""
    if not isinstance(raw, dict):
        return [f"(top level): a trace is a map of keys (see e2e/README.md: A day of GPU demand), got {_kind(raw)}"]
    lines: dict[str, str] = {}
    try:
        Trace.model_validate(raw)
    except ValidationError as error:
        lines.update(_schema_problems(error))
    hours = _field("hours", raw)
    deployments = _groups(raw, "deployments", DeploymentGroup)
    jobs = _groups(raw, "jobs", JobGroup)
    variants = [(index, v) for index, item in enumerate(_list(raw, "variants")) if (v := _valid(Variant, item))]
    problems = _cross_problems(raw, hours, deployments, jobs, variants)
    if config is not None and _field("stack", raw) is not None:
        problems += _stack_problems(str(raw["stack"]), config, deployments, jobs, variants)
    for key, problem in problems:
        lines[key] = f"{lines[key]}; {problem}" if key in lines and problem not in lines[key] else problem
    return [f"{key}: {problem}" for key, problem in lines.items()]


def _kind(value: Any) -> str:
    return "nothing" if value is None else f"a {type(value).__name__}"


def _list(raw: dict[str, Any], key: str) -> list[Any]:
    value = raw.get(key)
    return value if isinstance(value, list) else []


def _cross_problems(
    raw: dict[str, Any],
    hours: int | None,
    deployments: list[tuple[int, DeploymentGroup]],
    jobs: list[tuple[int, JobGroup]],
    variants: list[tuple[int, Variant]],
) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if not _list(raw, "deployments") and not _list(raw, "jobs"):
        problems.append(("deployments", "list at least one deployment or job group"))
    seen: dict[str, str] = {}
    for kind in ("deployments", "jobs"):
        for index, item in enumerate(_list(raw, kind)):
            name = item.get("name") if isinstance(item, dict) else None
            if not isinstance(name, str):
                continue
            if name in seen:
                problems.append((f"{kind}[{index}].name", f"{name!r} is used by {seen[name]} too"))
            seen.setdefault(name, f"{kind}[{index}]")
    if hours is not None:
        ends = clock(hours * 60)
        for index, group in deployments:
            for at in group.replicas or {}:
                if minute_of(at) >= hours * 60:
                    problems.append(
                        (
                            f"deployments[{index}].replicas.{at}",
                            f"step at {at} never applies: the day's {hours} hours end at {ends}; allowed: "
                            f"00:00 to before {ends}",
                        )
                    )
        for index, group in jobs:
            for at_index, arrival in enumerate(group.arrivals):
                where = f"jobs[{index}].arrivals[{at_index}]"
                if minute_of(arrival.at) >= hours * 60:
                    problems.append((f"{where}.at", f"{arrival.at} is after the day's {hours} hours end at {ends}"))
                elif arrival.until is not None and minute_of(arrival.until) >= hours * 60:
                    problems.append(
                        (f"{where}.until", f"{arrival.until} is after the day's {hours} hours end at {ends}")
                    )
    names_seen = [variant.name for _, variant in variants]
    for position, (index, variant) in enumerate(variants):
        if variant.name in names_seen[:position] or variant.name == BASELINE:
            problems.append(
                (f"variants[{index}].name", f"{variant.name!r} is taken; names are unique, not {BASELINE!r}")
            )
    return problems


def _named(config: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in config.get(key, []) if isinstance(entry, dict) and "name" in entry}


def _stack_problems(
    stack: str,
    config: dict[str, Any],
    deployments: list[tuple[int, DeploymentGroup]],
    jobs: list[tuple[int, JobGroup]],
    variants: list[tuple[int, Variant]],
) -> list[tuple[str, str]]:
    """Each group's team and pool and what the pool holds; each variant against the trace's groups."""
    groups = [(f"deployments[{i}]", g) for i, g in deployments] + [(f"jobs[{i}]", g) for i, g in jobs]
    problems = group_problems(stack, config, groups)
    for index, variant in variants:
        problems += variant_problems(stack, config, f"variants[{index}]", variant, groups)
    return problems


def team_pool_problem(stack: str, config: dict[str, Any], team: str, pool: str) -> tuple[str, str] | None:
    """("team" or "pool", problem) when the stack has no such team, or the team no such pool; None when it has."""
    teams = _named(config, "gpushare:teams")
    if team not in teams:
        return "team", f"{team!r} is not a team of {stack}; allowed: " + ", ".join(sorted(teams))
    pools = teams[team].get("pools", [])
    if pool not in pools:
        return "pool", f"{pool!r} is not a pool of team {team}; allowed: " + ", ".join(pools)
    return None


def group_problems(stack: str, config: dict[str, Any], groups: list[tuple[str, PodRequests]]) -> list[tuple[str, str]]:
    """(key, problem) for each group whose team or pool the stack lacks, or whose pool can never hold its pods."""
    parsed = stack_config(config)
    rooms = pool_rooms(parsed) if parsed is not None else {}
    problems = []
    for where, group in groups:
        wrong = team_pool_problem(stack, config, group.team, group.pool)
        if wrong is not None:
            problems.append((f"{where}.{wrong[0]}", wrong[1]))
        elif group.pool in rooms:
            for key, problem in rooms[group.pool].holds(group):
                problems.append((f"{where}.{key}" if key != "(group)" else where, problem))
    return problems


def _leaves(change: dict[str, Any], path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """Each key a change sets (a map merges key by key, so its leaves are what it sets)."""
    found = []
    for key, value in change.items():
        if isinstance(value, dict) and value:
            found += _leaves(value, (*path, key))
        else:
            found.append(((*path, key), value))
    return found


def _effective(model: BaseModel | None, path: tuple[str, ...]) -> Any:
    """The value a config key has once the program read it (defaults filled in), or None."""
    value: Any = model.model_dump(by_alias=True, mode="json") if model is not None else None
    for key in path:
        value = value.get(key) if isinstance(value, dict) else None
    return value


def variant_problems(
    stack: str,
    config: dict[str, Any],
    where: str,
    variant: Variant,
    groups: list[tuple[str, PodRequests]],
) -> list[tuple[str, str]]:
    """A variant that cannot show anything on this day (it changes pools or teams no group uses, or sets values
    the stack already has), or that the trace's own groups could not run in."""
    problems: list[tuple[str, str]] = []
    used_pools = sorted({group.pool for _, group in groups})
    used_teams = sorted({group.team for _, group in groups})
    before = stack_config(config)
    changed_raw = variant_config(config, variant)
    after = stack_config(changed_raw)
    for kind, used, named_before, named_after in (
        ("pools", used_pools, _by_name(before, "pools"), _by_name(after, "pools")),
        ("teams", used_teams, _by_name(before, "teams"), _by_name(after, "teams")),
    ):
        known = _named(config, f"gpushare:{kind}")
        for name, change in getattr(variant, kind).items():
            key = f"{where}.{kind}.{name}"
            if name not in known:
                problems.append((key, f"not a {kind[:-1]} of {stack}; allowed: " + ", ".join(sorted(known))))
                continue
            if name not in used:
                problems.append(
                    (
                        key,
                        f"no group of this trace runs {'on pool' if kind == 'pools' else 'in team'} {name}, so the "
                        f"change cannot show; the groups use: {', '.join(used)}",
                    )
                )
                continue
            if before is None or after is None:
                continue  # the program's own check of the variant's config names what is wrong
            for path, value in _leaves(change):
                was = _effective(named_before.get(name), path)
                now = _effective(named_after.get(name), path)
                if was == now:
                    shown = (
                        "removes a key the stack does not set" if value is None else f"{value!r} is what the stack has"
                    )
                    problems.append(
                        (f"{key}.{'.'.join(path)}", f"{shown} already: the variant would run the stack again there")
                    )
    team_pools = {name: entry.get("pools", []) for name, entry in _named(changed_raw, "gpushare:teams").items()}
    taken: dict[tuple[str, str], list[str]] = {}
    for group_where, group in groups:
        if group.team in variant.teams and group.pool not in team_pools.get(group.team, [group.pool]):
            taken.setdefault((group.team, group.pool), []).append(f"{group_where} ({group.name})")
    for (team_name, pool), users in taken.items():
        problems.append(
            (
                f"{where}.teams.{team_name}.pools",
                f"takes pool {pool} away from team {team_name}, which {', '.join(users)} runs on: the team's "
                "isolation policy would refuse every pod of it; keep the pool in the list",
            )
        )
    if after is None:
        return problems
    label = f"in variant {variant.name}: "
    teams = {team.name: team for team in after.teams}
    still = [(w, g) for w, g in groups if g.team in teams and g.pool in teams[g.team].pools]
    on_stack = set(group_problems(stack, config, still))
    problems += [
        (key, label + problem)
        for key, problem in group_problems(stack, changed_raw, still)
        if (key, problem) not in on_stack
    ]
    return problems


def _by_name(config: StackConfig | None, kind: str) -> dict[str, BaseModel]:
    return {entry.name: entry for entry in getattr(config, kind)} if config is not None else {}


def load_trace(path: Path, stack_config_map: dict[str, Any] | None = None) -> Trace:
    """The trace file, or a UserError with one line per problem naming the key. With the stack's `config` map,
    also each group's team, pool and what the pool can hold, and each variant against the trace's groups."""
    raw = read_yaml(path)
    problems = trace_problems(raw, stack_config_map)
    if problems:
        raise UserError("\n".join(f"{path}: {problem}" for problem in problems))
    return Trace.model_validate(raw)


def merged(base: dict[str, Any], change: dict[str, Any]) -> dict[str, Any]:
    """`base` with `change` applied: maps merge key by key, `None` removes a key, anything else replaces."""
    result = dict(base)
    for key, value in change.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merged(result[key], value)
        else:
            result[key] = value
    return result


def variant_config(config: dict[str, Any], variant: Variant) -> dict[str, Any]:
    """The stack's `config` map with the variant's pool and team changes applied."""
    changed = dict(config)
    for key, changes in (("gpushare:pools", variant.pools), ("gpushare:teams", variant.teams)):
        changed[key] = [merged(entry, changes.get(entry["name"], {})) for entry in config.get(key, [])]
    return changed


def trace_variant_plan(stack: str, variant: Variant, work: Path) -> Plan:
    """The offline plan of a trace's variant: Pulumi.<stack>.yaml with the variant's pool and team keys changed."""
    return variant_plan(stack, variant.name, work, lambda config: config.update(variant_config(config, variant)))
