"""A day of GPU demand for `make simulate`: the trace file, validated, and the demand it asks for, to the minute.

A trace names a stack and a compressed day (`secondsPerHour` real seconds per simulated hour). Deployment
groups follow a replica count over the day (steps at exact minutes, or a diurnal curve sampled every
`stepMinutes`); job groups arrive with a count of pods, each of which runs for a duration from its own start
(or, with `gang`, all of a batch's pods from when all of them run). Variants (e2e.simulator.variants) are copies
of the stack with pool or team keys changed, run against the same trace for a side-by-side comparison.

Everything here is pure. A trace becomes a `Demand` (e2e.simulator.demand), what a day asks for whichever file it
came from. The validator refuses every trace the rig would silently change or could never run: pods no node of
their pool can hold (e2e.simulator.group_checks), steps or arrivals after the day, variants that change nothing
or take a group's pool away; and it reports every problem, one line each, even when the schema has others.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator, model_validator

from e2e.simulator.demand import MINUTES_PER_DAY, Batch, Change, Demand, PodRequests, Variant, clock
from e2e.simulator.group_checks import group_problems
from e2e.simulator.variants import BASELINE, variant_problems
from gpushare.errors import UserError, all_errors, key_path, raise_at
from gpushare.files import read_yaml
from gpushare.wording import Wording

CLOCK = re.compile(r"^([01][0-9]|2[0-3]):([0-5][0-9])$")


def minute_of(clock: str) -> int:
    """`HH:MM` of the simulated day as minutes since midnight."""
    match = CLOCK.match(clock)
    if match is None:
        raise ValueError(f"{clock!r} is not a time of day; write HH:MM, 00:00 to 23:59")
    return int(match.group(1)) * 60 + int(match.group(2))


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


def load_trace(path: Path, stack_config_map: dict[str, Any] | None = None) -> Trace:
    """The trace file, or a UserError with one line per problem naming the key. With the stack's `config` map,
    also each group's team, pool and what the pool can hold, and each variant against the trace's groups."""
    raw = read_yaml(path)
    problems = trace_problems(raw, stack_config_map)
    if problems:
        raise UserError("\n".join(f"{path}: {problem}" for problem in problems))
    return Trace.model_validate(raw)
