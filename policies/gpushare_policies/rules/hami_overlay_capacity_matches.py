"""Overlays promise what a node registers under the HAMi release's sharing profile, within the mock's ceiling."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from gpushare import names
from gpushare.compat import MOCK_MAX_UNITS_PER_RESOURCE

from ..hami import Hami, expected_capacity, hami_pools
from ..kube import effective_capacity, overlays_for, quantity
from ..rule import Finding, Rule, RuleConfig, finding, finding_about
from ..stack import NODE_OVERLAY, StackView


class CapacityConfig(RuleConfig):
    allow_below_registered: bool = Field(
        default=False,
        alias="allowBelowRegistered",
        description="Accept overlays that promise less than a node registers (headroom); more is always refused.",
    )


def check_capacity(view: StackView, config: CapacityConfig) -> Iterator[Finding]:
    for overlay in sorted(view.of_type(NODE_OVERLAY), key=lambda r: r.object_name):
        for resource in (names.GPU_MEMORY, names.GPU_CORES):
            value = overlay.get("spec", "capacity", resource)
            amount = quantity(value) if value is not None else None
            if amount is not None and amount > MOCK_MAX_UNITS_PER_RESOURCE:
                yield finding(
                    overlay,
                    f'spec.capacity["{resource}"]',
                    value,
                    f"the mock device plugin cannot advertise more than {MOCK_MAX_UNITS_PER_RESOURCE} units of one "
                    "resource per node (the kubelet's gRPC limit; the node would register 0)",
                    "raise HAMi's memoryFactor (gpushare:hami.profile.memoryFactor) until the node's GPU memory fits "
                    "in that many units and set the overlay to what it then registers, or give the type an "
                    "exclusive pool",
                )
    hami = Hami.of(view)
    if hami is None:
        return
    if hami.profile_problems:
        # One finding per value, here only: every figure derived from the profile would be wrong too.
        for key, value, why in hami.profile_problems:
            yield finding(
                hami.resource,
                key,
                value,
                f"{why.lower()}: HAMi {hami.version} would register figures no overlay, limit or quota here can be "
                "checked against (gpushare models deviceSplitCount 1-100, scalings in (0, 1], no oversubscription, "
                "and memoryFactor 1-1024)",
                "use a value in that range",
            )
        return
    for pool in hami_pools(view):
        for instance_type in pool.instance_types or ():
            expected = expected_capacity(hami, instance_type)
            if isinstance(expected, str):
                yield finding_about(
                    pool.resource, expected, "raise memoryFactor as said, or use catalog types that fit"
                )
                continue
            capacity = effective_capacity(overlays_for(view, pool, instance_type))
            for resource, registered in expected.resources().items():
                if resource not in capacity:
                    continue  # hami-overlay-coverage reports it
                value, overlay = capacity[resource]
                amount = quantity(value)
                where = f'spec.capacity["{resource}"]'
                basis = (
                    f"a {instance_type} node in pool {pool.name} registers {registered} under HAMi {hami.version} "
                    f"(deviceSplitCount {hami.profile.device_split_count}, "
                    f"deviceMemoryScaling {hami.profile.device_memory_scaling}, "
                    f"deviceCoreScaling {hami.profile.device_core_scaling}, "
                    f"memoryFactor {hami.profile.memory_factor})"
                )
                if amount is None:
                    yield finding(overlay, where, value, "not a Kubernetes quantity", f'set it to "{registered}"')
                elif amount > registered:
                    yield finding(
                        overlay,
                        where,
                        value,
                        f"{basis}; promising more makes Karpenter launch nodes for pods that can never fit",
                        f'set it to "{registered}"',
                    )
                elif amount < registered and not config.allow_below_registered:
                    yield finding(
                        overlay,
                        where,
                        value,
                        f"{basis}; promising less makes Karpenter skip this type or pick larger nodes than needed",
                        f'set it to "{registered}" (or allow it with policy config allowBelowRegistered)',
                    )


RULE = Rule(
    name="hami-overlay-capacity-matches",
    order=3,
    description=f"Each overlay's {names.GPU}, gpumem (in units of memoryFactor MiB), gpucores and gpumem-percentage "
    "equal what the node registers under the sharing profile of the HAMi release's device config, and stay under "
    "the mock plugin's ceiling.",
    why="An overlay promising 24000 MiB on a GPU that registers 23028 launches nodes for pods that never fit; "
    f"above {MOCK_MAX_UNITS_PER_RESOURCE} units the kubelet registers 0.",
    remediation="Set the overlay capacity to what the node registers (gpushare renders it from gpushare/catalog.yaml); "
    "for types above the ceiling raise memoryFactor to the figure of docs/catalog.md's table, or use exclusive pools.",
    enforcement="mandatory",
    severity="critical",
    check=check_capacity,
    config=CapacityConfig,
)
