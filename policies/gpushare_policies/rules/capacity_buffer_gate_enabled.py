"""Declared CapacityBuffers come with a Karpenter that reads them: 1.14 or newer, with the CapacityBuffer gate on."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat, names

from ..headroom import buffers
from ..karpenter import AlphaApi, api_findings
from ..rule import Finding, Rule
from ..stack import StackView

BUFFERS = AlphaApi("CapacityBuffer", "capacityBuffer", compat.KARPENTER_MIN_CAPACITY_BUFFER_VERSION)
MINIMUM = BUFFERS.first


def check_buffer_gate(view: StackView, _config: None) -> Iterator[Finding]:
    found = [buffer.resource for buffer in buffers(view)]
    if not found:
        return
    yield from api_findings(
        view,
        BUFFERS,
        found,
        f"older controllers keep no warm nodes for the {BUFFERS.count(found)}",
        f"with the alpha gate off (its default) Karpenter never reads the {BUFFERS.count(found)}: no node is kept "
        "warm and the teams' pods wait for a launch as before",
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
