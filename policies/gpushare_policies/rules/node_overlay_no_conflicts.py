"""No two overlays of equal weight set one resource for the same pool and instance type."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from ..kube import overlay_weight, overlays_for, pools
from ..rule import Finding, Rule, finding_about
from ..stack import Resource, StackView


def check_conflicts(view: StackView, _config: None) -> Iterator[Finding]:
    conflicts: dict[tuple[tuple[str, ...], str, int, str], list[str]] = defaultdict(list)
    by_name: dict[str, Resource] = {}
    for pool in pools(view):
        for instance_type in pool.instance_types or ():
            setters: dict[tuple[int, str], list[Resource]] = defaultdict(list)
            for overlay in overlays_for(view, pool, instance_type):
                for resource in overlay.get("spec", "capacity") or {}:
                    setters[(overlay_weight(overlay), resource)].append(overlay)
            for (weight, resource), overlays in setters.items():
                if len(overlays) > 1:
                    names_ = tuple(sorted(o.object_name for o in overlays))
                    by_name.update((o.object_name, o) for o in overlays)
                    conflicts[(names_, resource, weight, pool.name)].append(instance_type)
    for (overlay_names, resource, weight, pool_name), types in sorted(conflicts.items()):
        first = by_name[overlay_names[0]]
        others = ", ".join(overlay_names[1:])
        yield finding_about(
            first,
            f'spec.capacity["{resource}"] at spec.weight {weight} is also set by NodeOverlay {others} '
            f"for pool {pool_name}, instance types {', '.join(types)}: Karpenter applies neither "
            "(ValidationSucceeded=False, reason Conflict)",
            "give one overlay a different spec.weight or narrow its requirements so only one applies",
        )


RULE = Rule(
    name="node-overlay-no-conflicts",
    order=4,
    description="No two NodeOverlays of equal weight set the same resource for the same pool and instance type.",
    why="Karpenter applies neither of two conflicting overlays (reason Conflict), so capacity silently falls "
    "back to the instance type's own.",
    remediation="Give one overlay a different weight or narrow its requirements.",
    enforcement="mandatory",
    severity="high",
    check=check_conflicts,
)
