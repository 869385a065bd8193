"""Declared CapacityBuffers come with a Karpenter that reads them: 1.14 or newer, with the CapacityBuffer gate on."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat, names, pins

from ..headroom import buffers
from ..kube import feature_gate_on
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView, version_of

MINIMUM = ".".join(str(part) for part in compat.KARPENTER_MIN_CAPACITY_BUFFER_VERSION)
GATE_KEY = "values.settings.featureGates.capacityBuffer"


def check_buffer_gate(view: StackView, _config: None) -> Iterator[Finding]:
    found = buffers(view)
    if not found:
        return
    count = f"{len(found)} CapacityBuffer{'s' if len(found) > 1 else ''}"
    karpenter = view.release(names.KARPENTER_CHART)
    if karpenter is None:
        yield finding_about(
            found[0].resource,
            f"the stack declares {count} but no `{names.KARPENTER_CHART}` Helm release to keep them",
            f"deploy Karpenter {MINIMUM} or newer with {GATE_KEY.removeprefix('values.')}: true",
        )
        return
    version = version_of(karpenter.get("version"))
    if version is None or version < compat.KARPENTER_MIN_CAPACITY_BUFFER_VERSION:
        yield finding(
            karpenter,
            "version",
            karpenter.get("version"),
            f"CapacityBuffer exists from Karpenter {MINIMUM}; older controllers keep no warm nodes for the {count}",
            f"pin chart {MINIMUM} or newer (gpushare defaults to {pins.chart_version(names.KARPENTER_CHART)})",
        )
    gate = karpenter.get(*GATE_KEY.split("."))
    if not feature_gate_on(gate):
        yield finding(
            karpenter,
            GATE_KEY,
            gate,
            f"with the alpha gate off (its default) Karpenter never reads the {count}: no node is kept warm and the "
            "teams' pods wait for a launch as before",
            f"set {GATE_KEY}: true",
        )


RULE = Rule(
    name="capacity-buffer-gate-enabled",
    order=50,
    description=f"When the stack declares CapacityBuffers, Karpenter is {MINIMUM} or newer with "
    "settings.featureGates.capacityBuffer on.",
    why="CapacityBuffer is alpha and off by default: with the gate off or an older controller the buffers are "
    "accepted by the API server and ignored, and the warm headroom the teams count on never exists.",
    remediation=f"Pin the {names.KARPENTER_CHART} chart to {MINIMUM} or newer and set "
    "settings.featureGates.capacityBuffer: true (gpushare sets it whenever a team has headroom).",
    enforcement="mandatory",
    severity="high",
    check=check_buffer_gate,
)
