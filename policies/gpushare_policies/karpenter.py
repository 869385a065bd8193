"""What the stack's Karpenter release turns on: its version and its feature gates, judged for the objects of an
alpha API that need them (NodeOverlays, CapacityBuffers)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gpushare import names, pins
from gpushare.karpenter_api import GATE_ON_TEXTS

from .rule import Finding, finding, finding_about
from .stack import Resource, StackView, version_of


def feature_gate_on(value: Any) -> bool:
    """Whether a karpenter chart settings.featureGates value turns its gate on: YAML's true, or a text the chart
    writes into FEATURE_GATES that Karpenter parses as true."""
    return value is True or (isinstance(value, str) and value in GATE_ON_TEXTS)


@dataclass(frozen=True)
class AlphaApi:
    """An API Karpenter serves from `minimum` on, behind the gate `settings.featureGates.<gate>` (off by default)."""

    kind: str
    gate: str
    minimum: tuple[int, int, int]

    @property
    def first(self) -> str:
        return ".".join(str(part) for part in self.minimum)

    def count(self, objects: Sequence[Resource]) -> str:
        """`7 NodeOverlays`, `1 CapacityBuffer`."""
        return f"{len(objects)} {self.kind}{'' if len(objects) == 1 else 's'}"


@dataclass(frozen=True)
class RunningKarpenter:
    """The Karpenter that reads the stack's objects: the `karpenter` Helm release the stack installs, or the one an
    existing cluster runs, as the stack states it (its ExistingCluster component's `karpenter` inputs)."""

    resource: Resource
    stated: bool

    @property
    def version_key(self) -> str:
        return "karpenter.version" if self.stated else "version"

    @property
    def version(self) -> Any:
        return self.resource.get(*self.version_key.split("."))

    @property
    def version_holder(self) -> str:
        """How a message names what holds the version."""
        return f"{self.resource.label}'s {self.version_key}"

    def gate_key(self, gate: str) -> str:
        return f"karpenter.featureGates.{gate}" if self.stated else f"values.settings.featureGates.{gate}"

    def gate(self, gate: str) -> Any:
        return self.resource.get(*self.gate_key(gate).split("."))

    def upgrade(self, version: str) -> str:
        """The fix that brings it to `version`: the stack's charts, or the cluster's Karpenter and its statement."""
        if self.stated:
            return (
                f"upgrade the cluster's Karpenter to {version} or newer and state it in "
                "gpushare:existingCluster.karpenter.version"
            )
        return f"upgrade the {names.KARPENTER_CHART} and {names.KARPENTER_CRD_CHART} charts to {version} or newer"

    def turn_on(self, gate: str) -> str:
        if self.stated:
            return (
                f"turn the gate on in the cluster's Karpenter (its chart's settings.featureGates.{gate}: true) and "
                f"state gpushare:existingCluster.karpenter.featureGates.{gate}: true"
            )
        return f"set {self.gate_key(gate)}: true"


def running_karpenter(view: StackView) -> RunningKarpenter | None:
    """The stack's own Karpenter release, else the existing cluster's stated one, else None."""
    release = view.release(names.KARPENTER_CHART)
    if release is not None:
        return RunningKarpenter(release, stated=False)
    existing = view.existing_cluster()
    return RunningKarpenter(existing, stated=True) if existing is not None else None


def api_findings(
    view: StackView, api: AlphaApi, objects: Sequence[Resource], too_old: str, gate_off: str
) -> Iterator[Finding]:
    """No Karpenter (neither a release nor an existing cluster's stated one), one older than the API, or its gate
    off, while the stack declares `objects` of it; `too_old` and `gate_off` say what each does to them."""
    karpenter = running_karpenter(view)
    if karpenter is None:
        yield finding_about(
            objects[0],
            f"the stack declares {api.count(objects)} but no `{names.KARPENTER_CHART}` Helm release (nor an existing "
            "cluster's Karpenter) to read them",
            f"deploy Karpenter {api.first} or newer with the {api.kind} gate on",
        )
        return
    version = version_of(karpenter.version)
    if version is None or version < api.minimum:
        fix = f"pin chart {api.first} or newer (gpushare defaults to {pins.chart_version(names.KARPENTER_CHART)})"
        yield finding(
            karpenter.resource,
            karpenter.version_key,
            karpenter.version,
            f"{api.kind} exists from Karpenter {api.first}; {too_old}",
            karpenter.upgrade(api.first) if karpenter.stated else fix,
        )
    gate = karpenter.gate(api.gate)
    if not feature_gate_on(gate):
        yield finding(karpenter.resource, karpenter.gate_key(api.gate), gate, gate_off, karpenter.turn_on(api.gate))
