"""Every instance type a HAMi pool can launch has overlays saying what its nodes register."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..hami import HAMI_RESOURCES, hami_pools
from ..kube import describe_requirement, effective_capacity, near_misses, overlay_for, overlays_for
from ..rule import Finding, Rule, finding_about
from ..stack import StackView

NODE_RESOURCES = (names.GPU, *HAMI_RESOURCES)


def check_coverage(view: StackView, _config: None) -> Iterator[Finding]:
    for pool in hami_pools(view):
        if pool.instance_types is None:
            yield finding_about(
                pool.resource,
                f"spec.template.spec.requirements has no `{names.INSTANCE_TYPE_LABEL} In [...]`: "
                "the pool can launch types no overlay describes",
                "list the pool's instance types with an In requirement (gpushare does this from pools[].instanceTypes)",
            )
            continue
        for instance_type in pool.instance_types:
            capacity = effective_capacity(overlays_for(view, pool, instance_type))
            missing = [resource for resource in NODE_RESOURCES if resource not in capacity]
            misses = near_misses(view, pool, instance_type) if missing else []
            if misses:
                overlay, requirement = misses[0]
                yield finding_about(
                    pool.resource,
                    f"instance type {instance_type} has no NodeOverlay setting {', '.join(missing)}: {overlay.label} "
                    f"is meant for it but its requirement {describe_requirement(requirement)} does not hold for "
                    "this pool's nodes (neither Karpenter nor the pool template sets that), so Karpenter cannot see "
                    "what HAMi registers and answers 'no instance type has enough resources'",
                    f"drop that requirement from {overlay.label}, or set the label in the pool's template labels",
                )
            elif missing:
                yield finding_about(
                    pool.resource,
                    f"instance type {instance_type} has no NodeOverlay setting {', '.join(missing)}: Karpenter "
                    "cannot see what HAMi registers and answers 'no instance type has enough resources' for pods "
                    "that ask for it",
                    f"add {overlay_for(pool, instance_type)} setting those resources (gpushare renders one per pool "
                    "and type)",
                )


RULE = Rule(
    name="hami-overlay-coverage",
    order=2,
    description="Every instance type a HAMi NodePool can launch has NodeOverlays for that pool setting "
    f"{names.GPU}, gpumem, gpucores and gpumem-percentage.",
    why="Karpenter only knows an instance type's physical GPUs; without an overlay it answers 'no instance "
    "type has enough resources' for pods asking for vGPUs or GPU memory.",
    remediation=f"List the pool's types with {names.INSTANCE_TYPE_LABEL} In [...] and add one NodeOverlay "
    f"per pool and type ({names.NODEPOOL_LABEL} In [pool], instance-type In [type]).",
    enforcement="mandatory",
    severity="critical",
    check=check_coverage,
)
