"""What a day of `make simulate` asks for, whichever file it came from (a trace: e2e.simulator.trace, or a replayed
pod list: e2e.simulator.replay; a fixed mix, e2e.simulator.mix, asks with the same pods): each group's pod
requests, the pods' batches and the Deployments' replica changes to the minute, and the variants of the stack to
run it against. The rig (e2e.simulator.day) plays a `Demand`; e2e.simulator.oracle and e2e.simulator.figures
measure it. Everything here is pure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

NAME = r"^[a-z]([-a-z0-9]{0,30}[a-z0-9])?$"
WEEKDAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")  # cron's numbering: Sunday is 0
MINUTES_PER_DAY = 24 * 60


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
