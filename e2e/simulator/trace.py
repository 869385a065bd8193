"""A day of GPU demand for `make simulate`: the trace file, validated, and what it asks for at each minute.

A trace names a stack and a compressed day (`secondsPerHour` real seconds per simulated hour). Deployment
groups follow a replica count over the day (steps, or a diurnal curve between a trough and a peak); job groups
arrive with a count of pods that run for a duration. Variants are copies of the stack with pool or team keys
changed, run against the same trace for a side-by-side comparison. Everything here is pure: the rig
(e2e.simulator.day) follows the schedule, e2e.simulator.figures measures it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from e2e.cluster.stack import Plan, variant_plan
from gpushare.errors import UserError, all_errors, key_path, raise_at
from gpushare.files import read_yaml

CLOCK = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")
NAME = r"^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$"
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # cron's numbering: Sunday is 0


def minute_of(clock: str) -> int:
    """`HH:MM` of the simulated day as minutes since midnight."""
    match = CLOCK.match(clock)
    if match is None:
        raise ValueError(f"{clock!r} is not a time of day; write HH:MM, 00:00 to 23:59")
    return int(match.group(1)) * 60 + int(match.group(2))


class PodRequests(BaseModel):
    """What each pod of a group asks for. GPU memory and cores are HAMi's resources (needed on a HAMi pool);
    on a time-sliced pool each vGPU is one time-sliced replica, on an exclusive pool one whole GPU."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str = Field(pattern=NAME, description="Names the group's Deployments; unique across deployments and jobs")
    team: str = Field(description="A team of the stack: its namespace runs the pods")
    pool: str = Field(description="One of the team's pools: the pods select it")
    vgpus: int = Field(
        default=1,
        ge=1,
        le=16,
        description="GPUs per pod: HAMi vGPUs, time-sliced replicas or whole GPUs, as the pool shares them",
    )
    gpu_memory_mib: int | None = Field(
        default=None, alias="gpuMemoryMib", ge=1, description="GPU memory per vGPU; required on a HAMi pool"
    )
    gpu_cores: int | None = Field(
        default=None,
        alias="gpuCores",
        ge=1,
        le=100,
        description="Percent of a GPU's cores per vGPU; required on a HAMi pool",
    )
    cpu: str = Field(default="500m", pattern=r"^[0-9]+m?$", description="CPU request per pod")
    memory: str = Field(default="1Gi", pattern=r"^[0-9]+(Mi|Gi)$", description="Memory request per pod")


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
        phase = 2 * math.pi * (minute - minute_of(self.peak_at)) / (24 * 60)
        return round(self.trough + (self.peak - self.trough) * (1 + math.cos(phase)) / 2)


class DeploymentGroup(PodRequests):
    """Pods of a Deployment whose replica count follows the day: `replicas` steps `{HH:MM: count}` (0 before the
    first), or a `diurnal` curve."""

    replicas: dict[str, int] | None = Field(
        default=None, description="Steps {HH:MM: replicas}, each held until the next (0 before the first)"
    )
    diurnal: Diurnal | None = Field(default=None, description="A cosine day curve instead of replicas steps")

    @field_validator("replicas")
    @classmethod
    def _steps(cls, value: dict[str, int] | None) -> dict[str, int] | None:
        if value is None:
            return value
        if not value:
            raise ValueError("list at least one step {HH:MM: replicas}")
        problems: list[tuple[tuple[int | str, ...], str]] = []
        for clock, count in value.items():
            try:
                minute_of(clock)
            except ValueError as error:
                problems.append(((clock,), str(error)))
            if not 0 <= count <= 1000:
                problems.append(((clock,), f"replicas {count} out of range; allowed 0 to 1000"))
        raise_at(problems)
        return value

    @model_validator(mode="after")
    def _one_curve(self) -> DeploymentGroup:
        if (self.replicas is None) == (self.diurnal is None):
            raise ValueError("set exactly one of replicas (steps) and diurnal (a curve)")
        return self

    def replicas_at(self, minute: float) -> int:
        if self.diurnal is not None:
            return self.diurnal.at(minute)
        steps = self.replicas or {}
        started = [(minute_of(clock), count) for clock, count in steps.items() if minute_of(clock) <= minute]
        return max(started)[1] if started else 0


class Arrival(BaseModel):
    """`count` pods arriving at `at` that run `durationMinutes` (simulated) once all of them run; with
    `everyMinutes`, again at that interval until `until` (inclusive)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    at: str = Field(description="Time of day (HH:MM) the pods arrive")
    count: int = Field(ge=1, le=100, description="Pods that arrive together")
    duration_minutes: int = Field(
        alias="durationMinutes", ge=1, le=48 * 60, description="Simulated minutes they run once all of them run"
    )
    every_minutes: int | None = Field(default=None, alias="everyMinutes", ge=1, description="Repeat at this interval")
    until: str | None = Field(default=None, description="Last repeat (HH:MM), with everyMinutes")

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
    """Batches of pods that arrive, run for a while and finish."""

    arrivals: tuple[Arrival, ...] = Field(min_length=1, description="When the group's batches arrive")


class Variant(BaseModel):
    """The stack with keys of some pools or teams replaced (`null` removes a key), e.g.
    `pools: {g5-shared: {disruption: {consolidationPolicy: WhenEmpty}}}`; a map replaces a map key by key."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=NAME, description="Names the variant in the comparison; not `stack`")
    pools: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Pool name -> keys of gpushare:pools to change (null removes a key)"
    )
    teams: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="Team name -> keys of gpushare:teams to change (null removes a key)"
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
        description="How often replica curves are sampled and the oracle is computed (simulated minutes)",
    )
    weekday: Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"] = Field(
        default="wed", description="The simulated day's weekday: which scheduled disruption budgets open"
    )
    deployments: tuple[DeploymentGroup, ...] = Field(default=(), description="Groups whose replicas follow the day")
    jobs: tuple[JobGroup, ...] = Field(default=(), description="Groups of pods that arrive, run and finish")
    variants: tuple[Variant, ...] = Field(
        default=(), description="Copies of the stack to run the same day against, each compared with the stack"
    )

    @model_validator(mode="after")
    def _consistent(self) -> Trace:
        problems: list[tuple[tuple[int | str, ...], str]] = []
        if not self.deployments and not self.jobs:
            problems.append((("deployments",), "list at least one deployment or job group"))
        seen: dict[str, str] = {}
        for kind, groups in (("deployments", self.deployments), ("jobs", self.jobs)):
            for index, group in enumerate(groups):
                where = f"{kind}[{index}]"
                if group.name in seen:
                    problems.append(((kind, index, "name"), f"{group.name!r} is used by {seen[group.name]} too"))
                seen.setdefault(group.name, where)
        for index, group in enumerate(self.jobs):
            for at_index, arrival in enumerate(group.arrivals):
                late = [m for m in arrival.minutes() if m >= self.hours * 60]
                if late:
                    problems.append(
                        (("jobs", index, "arrivals", at_index), f"arrives after the day's {self.hours} hours")
                    )
        names = [variant.name for variant in self.variants]
        for index, name in enumerate(names):
            if name in names[:index] or name == BASELINE:
                problems.append((("variants", index, "name"), f"{name!r} is taken; names are unique, not {BASELINE!r}"))
        raise_at(problems)
        return self

    @property
    def groups(self) -> tuple[PodRequests, ...]:
        return (*self.deployments, *self.jobs)

    def steps(self) -> Iterator[int]:
        """The minutes at which the oracle is computed and replica curves are sampled."""
        return iter(range(0, self.hours * 60, self.step_minutes))


BASELINE = "stack"


@dataclass(frozen=True)
class Batch:
    """One arrival of a job group: its Deployment's name, when it arrives, how many pods, for how long."""

    group: JobGroup
    name: str
    minute: int
    count: int
    duration_minutes: int


def batches(trace: Trace) -> list[Batch]:
    """Every arrival of every job group, in time order."""
    found = [
        Batch(
            group, f"{group.name}-{minute // 60:02d}{minute % 60:02d}", minute, arrival.count, arrival.duration_minutes
        )
        for group in trace.jobs
        for arrival in group.arrivals
        for minute in arrival.minutes()
    ]
    return sorted(found, key=lambda batch: (batch.minute, batch.name))


def replica_schedule(trace: Trace) -> list[tuple[int, DeploymentGroup, int]]:
    """(minute, group, replicas) whenever a Deployment group's count changes, sampled every step."""
    changes = []
    for group in trace.deployments:
        last = None
        for minute in trace.steps():
            count = group.replicas_at(minute)
            if count != last:
                changes.append((minute, group, count))
                last = count
    return sorted(changes, key=lambda change: (change[0], change[1].name))


def demand_at(trace: Trace, minute: int) -> list[tuple[PodRequests, int]]:
    """The pods the trace wants alive at `minute` if every pod ran the moment it was asked for: the oracle's
    input."""
    wanted: list[tuple[PodRequests, int]] = [(group, group.replicas_at(minute)) for group in trace.deployments]
    wanted += [
        (batch.group, batch.count)
        for batch in batches(trace)
        if batch.minute <= minute < batch.minute + batch.duration_minutes
    ]
    return [(group, count) for group, count in wanted if count]


def load_trace(path: Path, stack_config: dict[str, Any] | None = None) -> Trace:
    """The trace file, or a UserError with one line per problem naming the key. With the stack's `config` map,
    also each group's team and pool and each variant's pools and teams are checked against it."""
    try:
        trace = Trace.model_validate(read_yaml(path))
    except ValidationError as error:
        raise UserError(str(all_errors(error, lambda loc: f"{path}: {key_path('', loc) or '(top level)'}"))) from None
    if stack_config is not None:
        problems = stack_problems(trace, stack_config)
        if problems:
            raise UserError("\n".join(f"{path}: {problem}" for problem in problems))
    return trace


def _named(config: dict[str, Any], key: str) -> dict[str, dict[str, Any]]:
    return {entry["name"]: entry for entry in config.get(key, []) if isinstance(entry, dict) and "name" in entry}


def stack_problems(trace: Trace, config: dict[str, Any]) -> list[str]:
    """Keys of the trace that name a team, pool or variant target the stack does not have, one line each."""
    pools, teams = _named(config, "gpushare:pools"), _named(config, "gpushare:teams")
    problems = []
    for kind, groups in (("deployments", trace.deployments), ("jobs", trace.jobs)):
        for index, group in enumerate(groups):
            if group.team not in teams:
                problems.append(
                    f"{kind}[{index}].team: {group.team!r} is not a team of {trace.stack}; allowed: "
                    + ", ".join(sorted(teams))
                )
            elif group.pool not in teams[group.team].get("pools", []):
                problems.append(
                    f"{kind}[{index}].pool: {group.pool!r} is not a pool of team {group.team}; allowed: "
                    + ", ".join(teams[group.team].get("pools", []))
                )
    for index, variant in enumerate(trace.variants):
        for key, known in (("pools", pools), ("teams", teams)):
            for name in getattr(variant, key):
                if name not in known:
                    problems.append(
                        f"variants[{index}].{key}.{name}: not a {key[:-1]} of {trace.stack}; allowed: "
                        + ", ".join(sorted(known))
                    )
    return problems


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
