"""Replay a cluster's own day: a pod list (CSV or JSON lines, one pod per line) and a mapping file become the
demand `make simulate` plays (`trace.Demand`).

Each line is one pod: its namespace and name, when it was created and deleted (RFC 3339), its CPU and memory
requests, how many GPUs it asked for, and its share of each: a fraction of a GPU (`gpuShare`) or HAMi's memory
and cores (`gpuMemoryMib`, `gpuCores`). The mapping says where the day starts (its weekday picks the budgets),
how long it is, and, by rules on namespace and name (first match wins), which team and pool each pod goes to and
how a fractional share becomes `gpuMemoryMib` and `gpuCores` (a share of the pool's GPU as HAMi registers it,
unless the rule names a whole GPU's memory). Each pod becomes a one-pod Job arriving when it was created and
running for as long as it lived; a pod alive at the day's start is part of the 00:00 state; a pod without a
deletion time lives to the day's end. Pods with the same team, pool and requests form one group of the reports.

Validated like every input: one line per problem naming the line (or key), the bad value and what is allowed,
every problem at once; the groups are judged by the trace validator (what the pool can hold, variants).
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import re
from datetime import UTC, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from e2e.simulator.demand import NAME, WEEKDAYS, Batch, Demand, PodRequests, Variant
from e2e.simulator.group_checks import group_problems, pool_rooms, stack_config, team_pool_problem
from e2e.simulator.variants import variant_problems
from gpushare import names
from gpushare.errors import UserError, all_errors, key_path, raise_at
from gpushare.files import read_yaml
from gpushare.wording import Wording

# Kubernetes quantity suffixes (k8s.io/apimachinery resource.Quantity): decimal SI and binary.
_SUFFIXES = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}
QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?(?:[eE][0-9]+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$")


def quantity(text: str) -> float:
    """A Kubernetes quantity (`500m`, `1.5`, `16Gi`, `2G`) as a plain number (cores, bytes)."""
    match = QUANTITY.match(text.strip())
    if match is None:
        raise ValueError(f"{text!r} is not a Kubernetes quantity (e.g. 500m, 4, 16Gi)")
    return float(match.group(1)) * _SUFFIXES[match.group(2) or ""]


class PodLine(BaseModel):
    """One pod of the list, as exported from a cluster."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    namespace: str = Field(min_length=1, description="The pod's namespace (rules match it)")
    name: str = Field(min_length=1, description="The pod's name (rules match it)")
    created: AwareDatetime = Field(description="When the pod was created (RFC 3339, with its zone)")
    deleted: AwareDatetime | None = Field(
        default=None, description="When it was deleted or completed; empty: alive at the export, to the day's end"
    )
    cpu: str = Field(default="500m", description="CPU request (a Kubernetes quantity: 500m, 4)")
    memory: str = Field(default="1Gi", description="Memory request (a Kubernetes quantity: 512Mi, 16Gi, 2G)")
    gpus: int = Field(ge=1, le=16, description="GPUs it asked for (nvidia.com/gpu): vGPUs on a HAMi pool")
    gpu_share: float | None = Field(
        default=None, alias="gpuShare", gt=0, le=1, description="Share of each GPU, 0 to 1 (or memory and cores)"
    )
    gpu_memory_mib: int | None = Field(
        default=None, alias="gpuMemoryMib", ge=1, description="GPU memory per GPU (HAMi's gpumem), instead of a share"
    )
    gpu_cores: int | None = Field(
        default=None, alias="gpuCores", ge=1, le=100, description="Percent of each GPU's cores, with gpuMemoryMib"
    )

    @field_validator("cpu", "memory")
    @classmethod
    def _quantity(cls, value: str) -> str:
        quantity(value)
        return value

    @model_validator(mode="after")
    def _consistent(self) -> PodLine:
        problems: list[tuple[tuple[int | str, ...], str]] = []
        if self.gpu_share is not None and (self.gpu_memory_mib is not None or self.gpu_cores is not None):
            problems.append((("gpuShare",), "give gpuShare or gpuMemoryMib/gpuCores, not both"))
        if self.deleted is not None and self.deleted < self.created:
            problems.append((("deleted",), f"{self.deleted.isoformat()} is before created {self.created.isoformat()}"))
        raise_at(problems)
        return self


class Rule(BaseModel):
    """Which team and pool the pods whose namespace and name match go to."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str | None = Field(
        default=None, pattern=NAME, description="Names the rule's groups in the report (default rule<index>)"
    )
    namespace: str = Field(default="*", description="Shell pattern on the pod's namespace (`ml-*`)")
    pod: str = Field(default="*", description="Shell pattern on the pod's name")
    team: str = Field(description="A team of the stack: its namespace runs the pods")
    pool: str = Field(description="One of the team's pools: the pods select it")
    whole_gpu_memory_mib: int | None = Field(
        default=None,
        alias="wholeGpuMemoryMib",
        ge=1,
        description="A share s asks s x this much GPU memory; default: the pool's smallest GPU as HAMi registers it "
        "(cores: s x 100)",
    )

    def matches(self, pod: PodLine) -> bool:
        return fnmatch.fnmatchcase(pod.namespace, self.namespace) and fnmatch.fnmatchcase(pod.name, self.pod)


class Mapping(BaseModel):
    """How a pod list becomes a day on a stack."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    stack: Literal["dev", "prod"] = Field(description="The stack (Pulumi.<stack>.yaml) the day runs on")
    start: AwareDatetime = Field(
        description="Where the day starts (RFC 3339, with its zone); budgets open as on its weekday in UTC"
    )
    hours: int = Field(default=24, ge=1, le=24, description="Length of the replayed day from start")
    seconds_per_hour: int = Field(
        default=20, alias="secondsPerHour", ge=5, le=3600, description="Real seconds per simulated hour"
    )
    rules: tuple[Rule, ...] = Field(min_length=1, description="Which team and pool each pod goes to (first match)")
    variants: tuple[Variant, ...] = Field(
        default=(), description="Copies of the stack to replay the day against, as a trace's variants"
    )

    @property
    def weekday(self) -> str:
        """The start's weekday in UTC, as Karpenter reads budget schedules."""
        return WEEKDAYS[(self.start.astimezone(UTC).weekday() + 1) % 7]  # Python's Monday is 0, cron's Sunday is 0

    @property
    def offset_minutes(self) -> float:
        """The start's time of day in UTC: the replayed day's minute 0 is this minute of the UTC day."""
        start = self.start.astimezone(UTC)
        return start.hour * 60 + start.minute + start.second / 60


def read_pod_lines(path: Path) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    """(line number, raw fields) of every pod of a CSV (header row) or JSON-lines file, and the lines that are not
    even that."""
    try:
        text = path.read_text()
    except OSError as error:
        raise UserError(f"{path}: cannot read ({error.strerror})") from None
    rows, problems = [], []
    if path.suffix == ".csv":
        reader = csv.DictReader(text.splitlines())
        for row in reader:
            rows.append((reader.line_num, {key: value for key, value in row.items() if value not in ("", None)}))
        return rows, problems
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            problems.append(f"{path}:{number}: not a JSON object ({error.msg}); one pod per line")
            continue
        if not isinstance(value, dict):
            problems.append(f"{path}:{number}: not a JSON object; one pod per line")
            continue
        rows.append((number, {key: item for key, item in value.items() if item not in ("", None)}))
    return rows, problems


def _share_memory(rule: Rule, smallest: dict[str, int]) -> int:
    return rule.whole_gpu_memory_mib or smallest.get(rule.pool, 0)


def _requests(pod: PodLine, rule: Rule, name: str, sharing: str, whole_mib: int) -> PodRequests:
    """The pod's asks as a trace group writes them (HAMi's memory and cores only on a HAMi pool)."""
    share = pod.gpu_share
    if share is None and pod.gpu_memory_mib is not None and whole_mib:
        share = min(1.0, pod.gpu_memory_mib / whole_mib)  # cores not given: the same share as the memory
    memory = pod.gpu_memory_mib if pod.gpu_memory_mib is not None else math.ceil((share or 0) * whole_mib)
    cores = pod.gpu_cores if pod.gpu_cores is not None else max(1, round((share or 0) * 100))
    hami = sharing == names.SHARING_HAMI and memory > 0
    return PodRequests(
        name=name,
        team=rule.team,
        pool=rule.pool,
        vgpus=pod.gpus,
        gpuMemoryMib=memory if hami else None,
        gpuCores=cores if hami else None,
        cpu=f"{math.ceil(quantity(pod.cpu) * 1000)}m",
        memory=f"{math.ceil(quantity(pod.memory) / 2**20)}Mi",
    )


def load_replay(pods: Path, mapping_path: Path, stack_configs: dict[str, dict[str, Any]]) -> Demand:
    """The replayed day, or a UserError with one line per problem of the mapping and of the pod list."""
    raw = read_yaml(mapping_path)
    problems: list[str] = []
    try:
        mapping = Mapping.model_validate(raw)
    except ValidationError as error:
        found = all_errors(error, lambda loc: key_path("", loc) or "(top level)", Wording(Mapping)).errors
        problems += [f"{mapping_path}: {problem}" for problem in found]
        mapping = None
    rows, unreadable = read_pod_lines(pods)
    problems += unreadable
    parsed: list[tuple[int, PodLine]] = []
    for number, row in rows:
        try:
            parsed.append((number, PodLine.model_validate(row)))
        except ValidationError as error:
            found = all_errors(error, lambda loc: key_path("", loc) or "(line)", Wording(PodLine)).errors
            problems += [f"{pods}:{number}: {problem}" for problem in found]
    if mapping is None:
        raise UserError("\n".join(problems))
    config = stack_configs[mapping.stack]
    for index, rule in enumerate(mapping.rules):
        wrong = team_pool_problem(mapping.stack, config, rule.team, rule.pool)
        if wrong is not None:
            problems.append(f"{mapping_path}: rules[{index}].{wrong[0]}: {wrong[1]}")
    if problems:
        raise UserError("\n".join(problems))
    demand, day_problems = _demand(mapping, parsed, pods, mapping_path, config)
    if day_problems:
        raise UserError("\n".join(day_problems))
    return demand


def _demand(
    mapping: Mapping, pods: list[tuple[int, PodLine]], pods_path: Path, mapping_path: Path, config: dict[str, Any]
) -> tuple[Demand, list[str]]:
    parsed = stack_config(config)
    rooms = pool_rooms(parsed) if parsed is not None else {}
    smallest = {name: min(room.gpu_memory_mib for room in pool.rooms) for name, pool in rooms.items()}
    sharing = {name: pool.sharing for name, pool in rooms.items()}
    start, end = mapping.start, mapping.start + timedelta(hours=mapping.hours)
    problems: list[str] = []
    groups: dict[PodRequests, str] = {}
    lines_of: dict[str, list[int]] = {}
    batches, outside = [], 0
    for number, pod in pods:
        index, rule = next(((i, r) for i, r in enumerate(mapping.rules) if r.matches(pod)), (None, None))
        if rule is None:
            problems.append(
                f"{pods_path}:{number}: {pod.namespace}/{pod.name}: no rule of {mapping_path} matches it; add one "
                "(a rule without namespace and pod matches every pod)"
            )
            continue
        ends = pod.deleted or end
        if pod.created >= end or ends <= start:
            outside += 1
            continue
        label = rule.name or f"rule{index}"
        shape = _requests(pod, rule, label, sharing.get(rule.pool, ""), _share_memory(rule, smallest))
        if shape not in groups:
            groups[shape] = f"{label}-{sum(name.startswith(label + '-') for name in groups.values()) + 1}"
        name = groups[shape]
        lines_of.setdefault(name, []).append(number)
        began = max(pod.created, start)
        batches.append(
            Batch(
                shape.model_copy(update={"name": name}),
                f"r{number:05d}",
                (began - start).total_seconds() / 60,
                1,
                (min(ends, end) - began).total_seconds() / 60,
                running_at_start=pod.created < start,
            )
        )
    named = [(name, shape.model_copy(update={"name": name})) for shape, name in groups.items()]
    for key, problem in group_problems(mapping.stack, config, named):
        group, _, field = key.partition(".")
        lines = lines_of[group]
        shown = ", ".join(map(str, lines[:3])) + (f" and {len(lines) - 3} more" if len(lines) > 3 else "")
        problems.append(f"{pods_path}: line(s) {shown}: {field or 'pod'}: {problem}")
    for index, variant in enumerate(mapping.variants):
        for key, problem in variant_problems(mapping.stack, config, f"variants[{index}]", variant, named):
            problems.append(f"{mapping_path}: {key}: {problem}")
    if not batches and not problems:
        problems.append(
            f"{pods_path}: no pod lives between {start.isoformat()} and {end.isoformat()} ({outside} outside); "
            f"set {mapping_path}'s start to the day the list covers"
        )
    demand = Demand(
        mapping.stack,
        mapping.seconds_per_hour,
        mapping.hours,
        mapping.weekday,
        tuple(shape for _, shape in named),
        (),
        tuple(sorted(batches, key=lambda batch: (batch.minute, batch.name))),
        mapping.variants,
        mapping.offset_minutes,
    )
    return demand, problems
