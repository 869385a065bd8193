"""A CapacityBuffer's warm pods on a HAMi pool ask what HAMi places on one GPU, state what HAMi's webhook would add,
and fit a whole number of times on every GPU, so Karpenter's summed view of a node counts no warm pod HAMi cannot
place."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from gpushare import names
from gpushare.capacity import per_gpu_limits

from ..hami import Hami, expected_capacity, is_hami_pool
from ..headroom import Buffer, buffers, landing_pools
from ..kube import Pool
from ..pools import pool_view
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView

BOUNDED = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_MEMORY_PERCENTAGE)


def _container_findings(buffer: Buffer, pool: Pool, limits: dict[str, int]) -> Iterator[Finding]:
    for index, asked in enumerate(buffer.container_requests):
        where = f"template.spec.containers[{index}].resources"
        for resource in BOUNDED:
            amount = asked.get(resource)
            if amount is not None and amount > limits[resource]:
                why = (
                    f"each vGPU of a container takes a GPU of its own and no node of pool {pool.name} has more than "
                    f"{limits[resource]}"
                    if resource == names.GPU
                    else f"one vGPU lives on one GPU and the largest GPU of pool {pool.name} holds {limits[resource]}"
                )
                yield finding(
                    buffer.template or buffer.resource,
                    f"{where} {resource}",
                    str(amount),
                    f"{why}: Karpenter launches nodes for these warm pods that HAMi could never use",
                    f"ask at most {limits[resource]}",
                )
        if not asked.get(names.GPU):
            continue
        cores = asked.get(names.GPU_CORES)
        if names.GPU_MEMORY in asked or names.GPU_MEMORY_PERCENTAGE in asked:
            continue
        if cores is None:
            yield finding_about(
                buffer.template or buffer.resource,
                f"{where} asks {names.GPU} without {names.GPU_MEMORY} or {names.GPU_CORES}: HAMi's webhook gives the "
                f"team's real pods {names.GPU_CORES}: 100 (a whole GPU each), but virtual pods skip admission, so "
                "Karpenter counts up to a GPU's vGPUs of them per GPU and the buffer looks kept with no room left",
                f"state {names.GPU_CORES}: 100 in the template, as the webhook would, or a {names.GPU_MEMORY}",
            )
        elif cores < Decimal(100):
            yield finding_about(
                buffer.template or buffer.resource,
                f"{where} asks {names.GPU_CORES} {cores} without {names.GPU_MEMORY}: HAMi gives such a vGPU a whole "
                "GPU's memory, which Karpenter cannot see, so it counts more warm pods per node than HAMi places",
                f"state {names.GPU_MEMORY} in MiB, or {names.GPU_CORES}: 100",
            )


def check_buffer_hami_fit(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    if hami is None:
        return
    for buffer in buffers(view):
        if buffer.template is None or not buffer.asks_gpus:
            continue
        for pool in landing_pools(view, buffer):
            if not is_hami_pool(view, pool):
                continue
            capacities = [c for t in pool.instance_types or () if not isinstance(c := expected_capacity(hami, t), str)]
            if not capacities:
                continue  # hami-overlay-capacity-matches names what gpushare cannot size
            yield from _container_findings(buffer, pool, per_gpu_limits(capacities))
            gpu_containers = [asked for asked in buffer.container_requests if asked.get(names.GPU)]
            sized = pool_view(view, pool)
            if sized is None or len(gpu_containers) != 1:
                continue
            fragmented = [fit for fit in sized.fits(buffer.shape) if fit.fragments]
            if fragmented:
                fit = fragmented[0]
                yield finding_about(
                    buffer.template,
                    f"its warm pods fragment the GPUs of {fit.instance_type} in pool {pool.name}: Karpenter counts "
                    f"{fit.counted} per node from the summed capacity, HAMi places {fit.placed} (each vGPU on one "
                    "GPU), so the buffer looks kept while the team's real pods of this shape wait for a node",
                    "size the pod to fit each GPU a whole number of times (gpumem and gpucores dividing one GPU's, one "
                    "vGPU per container), or keep the pool to 1-GPU types",
                )


RULE = Rule(
    name="capacity-buffer-fits-hami-gpus",
    order=52,
    description="A CapacityBuffer's template on a HAMi pool asks no more than one GPU holds per vGPU, states the "
    "gpucores HAMi's webhook would add (or gpumem), and fits each GPU a whole number of times on every instance "
    "type of the pool.",
    why="Karpenter sizes warm pods from the overlays' summed node capacity and virtual pods skip HAMi's webhook: a "
    "template HAMi would place differently makes Karpenter keep nodes HAMi cannot use, or count room that is not "
    "there, and the team's pods wait anyway.",
    remediation="Render the template from teams[].headroom (gpushare mirrors the webhook and refuses shapes that "
    "fragment), or fix its requests as the finding says.",
    enforcement="mandatory",
    severity="high",
    check=check_buffer_hami_fit,
)
