"""Declared NodeOverlays come with a Karpenter that reads them: new enough, with the NodeOverlay gate on."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import compat, names, pins

from ..kube import feature_gate_on
from ..rule import Finding, Rule, finding, finding_about
from ..stack import NODE_OVERLAY, StackView, version_of


def _dotted(version: tuple[int, ...]) -> str:
    return ".".join(str(part) for part in version)


MINIMUM = _dotted(compat.KARPENTER_MIN_OVERLAY_VERSION)


def check_overlay_gate(view: StackView, _config: None) -> Iterator[Finding]:
    overlays = sorted(view.of_type(NODE_OVERLAY), key=lambda r: r.object_name)
    if not overlays:
        return
    karpenter = view.release(names.KARPENTER_CHART)
    if karpenter is None:
        yield finding_about(
            overlays[0],
            f"the stack declares {len(overlays)} NodeOverlays but no `{names.KARPENTER_CHART}` Helm release to read "
            "them",
            f"deploy Karpenter {MINIMUM} or newer with the NodeOverlay gate on",
        )
        return
    version = version_of(karpenter.get("version"))
    if version is None or version < compat.KARPENTER_MIN_OVERLAY_VERSION:
        yield finding(
            karpenter,
            "version",
            karpenter.get("version"),
            f"NodeOverlay exists from Karpenter {_dotted(compat.KARPENTER_MIN_OVERLAY_VERSION)}; older controllers "
            f"ignore the {len(overlays)} overlays and cannot see HAMi's resources",
            f"pin chart {_dotted(compat.KARPENTER_MIN_OVERLAY_VERSION)} or newer "
            f"(gpushare defaults to {pins.chart_version(names.KARPENTER_CHART)})",
        )
    gate = karpenter.get("values", "settings", "featureGates", "nodeOverlay")
    if not feature_gate_on(gate):
        yield finding(
            karpenter,
            "values.settings.featureGates.nodeOverlay",
            gate,
            f"with the gate off Karpenter silently ignores all {len(overlays)} NodeOverlays, cannot see HAMi's "
            "resources and answers 'no instance type has enough resources'",
            "set values.settings.featureGates.nodeOverlay: true",
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
