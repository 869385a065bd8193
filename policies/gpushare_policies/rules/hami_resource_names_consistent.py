"""Everyone names HAMi's resources as HAMi's values do (resourceName, resourceMem, resourceCores,
resourceMemPercentage; chart defaults where unset): overlays, quotas and LimitRanges that use other names
advertise or cap resources no node registers."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..hami import Hami
from ..nvidia import NvidiaPlugin
from ..rule import Finding, Rule, finding
from ..stack import LIMIT_RANGE, NODE_OVERLAY, RESOURCE_QUOTA, Resource, StackView, sorted_by_name

# Chart defaults (charts/hami/values.yaml, 2.7.0-2.10.0) of the four keys.
CHART_DEFAULTS = {
    "resourceName": names.GPU,
    "resourceMem": names.GPU_MEMORY,
    "resourceCores": names.GPU_CORES,
    "resourceMemPercentage": names.GPU_MEMORY_PERCENTAGE,
}
VENDOR_PREFIX = "nvidia.com/"


def hami_resource_names(hami: Hami) -> dict[str, str]:
    """Value key -> the resource name the release registers."""
    return {key: str(hami.values.get(key) or default) for key, default in CHART_DEFAULTS.items()}


def _unknown(resource: str, known: set[str]) -> bool:
    """An NVIDIA-vendor resource neither HAMi nor the NVIDIA plugin (whole or time-sliced GPUs) registers."""
    return resource.startswith(VENDOR_PREFIX) and resource not in known


def _limit_range_resources(limit_range: Resource) -> Iterator[tuple[str, str, object]]:
    """(where, resource name, value) of every resource a LimitRange's limits name."""
    for index, limit in enumerate(limit_range.get("spec", "limits") or []):
        for field in ("default", "defaultRequest", "max", "min"):
            for resource, value in (limit.get(field) or {}).items() if isinstance(limit, dict) else ():
                yield f"spec.limits[{index}].{field}", str(resource), value


def check(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    if hami is None:
        return
    registered = hami_resource_names(hami)
    nvidia = NvidiaPlugin.of(view)
    known = {*registered.values(), names.GPU, *(nvidia.resource_names() if nvidia else ())}
    listed = ", ".join(f"{key}={value}" for key, value in registered.items())
    fix = f"use the HAMi values' names ({listed})"
    for overlay in sorted_by_name(view.of_type(NODE_OVERLAY)):
        for resource in sorted(str(r) for r in overlay.get("spec", "capacity") or {}):
            if _unknown(resource, known):
                yield finding(
                    overlay,
                    f'spec.capacity["{resource}"]',
                    overlay.get("spec", "capacity", resource),
                    "HAMi registers no resource of that name, so Karpenter plans for capacity no node has",
                    fix,
                )
    for quota in sorted_by_name(view.of_type(RESOURCE_QUOTA)):
        for key in sorted(str(k) for k in quota.get("spec", "hard") or {}):
            if _unknown(key.removeprefix("requests."), known):
                yield finding(
                    quota,
                    f'spec.hard["{key}"]',
                    quota.get("spec", "hard", key),
                    "no pod asks a resource of that name, so the quota caps nothing",
                    fix,
                )
    for limit_range in sorted_by_name(view.of_type(LIMIT_RANGE)):
        for where, resource, value in _limit_range_resources(limit_range):
            if _unknown(resource, known):
                yield finding(
                    limit_range,
                    f'{where}["{resource}"]',
                    value,
                    "HAMi registers no resource of that name, so this default or bound applies to nothing",
                    fix,
                )


RULE = Rule(
    name="hami-resource-names-consistent",
    order=17,
    description="NodeOverlays, ResourceQuotas and LimitRanges name HAMi's resources as the HAMi release's values do.",
    why="A renamed resource on one side only makes Karpenter plan for capacity no node registers, or a "
    "quota cap nothing.",
    remediation="Take resource names from the HAMi values (gpushare renders all of them from one module).",
    enforcement="mandatory",
    severity="high",
    check=check,
)
