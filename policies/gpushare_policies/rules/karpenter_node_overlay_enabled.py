"""Declared NodeOverlays come with a Karpenter that reads them: new enough, with the NodeOverlay gate on."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat, names

from ..karpenter import AlphaApi, api_findings
from ..rule import Finding, Rule
from ..stack import NODE_OVERLAY, StackView

NODE_OVERLAYS = AlphaApi("NodeOverlay", "nodeOverlay", compat.KARPENTER_MIN_OVERLAY_VERSION)
MINIMUM = NODE_OVERLAYS.first


def check_overlay_gate(view: StackView, _config: None) -> Iterator[Finding]:
    overlays = sorted(view.of_type(NODE_OVERLAY), key=lambda r: r.object_name)
    if not overlays:
        return
    yield from api_findings(
        view,
        NODE_OVERLAYS,
        overlays,
        f"older controllers ignore the {len(overlays)} overlays and cannot see HAMi's resources",
        f"with the gate off Karpenter silently ignores all {len(overlays)} NodeOverlays, cannot see HAMi's resources "
        "and answers 'no instance type has enough resources'",
    )


RULE = Rule(
    name="karpenter-node-overlay-enabled",
    order=6,
    description=f"When the stack declares NodeOverlays, Karpenter is {MINIMUM} or newer with "
    "settings.featureGates.nodeOverlay on.",
    why="With the gate off (the default) or an older controller, overlays are ignored silently and Karpenter "
    "cannot see HAMi's resources.",
    remediation=f"Pin the {names.KARPENTER_CHART} chart to {MINIMUM} or newer and set "
    "settings.featureGates.nodeOverlay: true.",
    enforcement="mandatory",
    severity="critical",
    check=check_overlay_gate,
)
