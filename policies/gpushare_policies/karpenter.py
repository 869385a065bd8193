"""What the stack's Karpenter release turns on: its version and its feature gates, judged for the objects of an
alpha API that need them (NodeOverlays, CapacityBuffers)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gpushare import names, pins

from .rule import Finding, finding, finding_about
from .stack import Resource, StackView, version_of

# The karpenter chart writes each settings.featureGates value into FEATURE_GATES as text (`NodeOverlay={{ value }}`),
# which Karpenter parses with Go's strconv.ParseBool: these texts turn a gate on, as YAML's true does.
GATE_ON_TEXTS = frozenset({"1", "t", "T", "true", "TRUE", "True"})


def feature_gate_on(value: Any) -> bool:
    """Whether a karpenter chart settings.featureGates value turns its gate on."""
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

    @property
    def values_key(self) -> str:
        return f"values.settings.featureGates.{self.gate}"


def api_findings(
    view: StackView, api: AlphaApi, objects: Sequence[Resource], too_old: str, gate_off: str
) -> Iterator[Finding]:
    """No Karpenter release, one older than the API, or its gate off, while the stack declares `objects` of it;
    `too_old` and `gate_off` say what each does to them."""
    karpenter = view.release(names.KARPENTER_CHART)
    if karpenter is None:
        yield finding_about(
            objects[0],
            f"the stack declares {api.count(objects)} but no `{names.KARPENTER_CHART}` Helm release to read them",
            f"deploy Karpenter {api.first} or newer with the {api.kind} gate on",
        )
        return
    version = version_of(karpenter.get("version"))
    if version is None or version < api.minimum:
        yield finding(
            karpenter,
            "version",
            karpenter.get("version"),
            f"{api.kind} exists from Karpenter {api.first}; {too_old}",
            f"pin chart {api.first} or newer (gpushare defaults to {pins.chart_version(names.KARPENTER_CHART)})",
        )
    gate = karpenter.get(*api.values_key.split("."))
    if not feature_gate_on(gate):
        yield finding(karpenter, api.values_key, gate, gate_off, f"set {api.values_key}: true")
