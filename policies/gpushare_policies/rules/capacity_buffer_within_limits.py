"""A CapacityBuffer's warm pods fit, in whole nodes, within its pool's NodePool limit (with every other buffer on
the pool), and the real pods they stand for fit the team's ResourceQuota."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..headroom import Buffer, KeptNodes, buffers, kept_nodes, team_namespace
from ..kube import quantity, quotas_in
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView

GPU_RESOURCES = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_SHARED)


def _quota_findings(view: StackView, namespace: str, held: list[tuple[Buffer, int]]) -> Iterator[Finding]:
    """The warm pods of a namespace's buffers, all together, within each of its ResourceQuotas."""
    for quota in quotas_in(view, namespace):
        hard = quota.get("spec", "hard") or {}
        for resource in GPU_RESOURCES:
            asking = [(buffer, replicas) for buffer, replicas in held if buffer.shape.gpu.get(resource)]
            asked = sum(replicas * buffer.shape.gpu[resource] for buffer, replicas in asking)
            admitted = quantity(hard.get(f"requests.{resource}")) if f"requests.{resource}" in hard else None
            if not asking or admitted is None or asked <= admitted:
                continue
            buffer, replicas = asking[0]
            together = f" with the other buffers of {namespace}" if len(asking) > 1 else ""
            fix = (
                f"keep at most {int(admitted // buffer.shape.gpu[resource])} warm pods"
                if len(asking) == 1
                else "keep fewer warm pods"
            )
            yield finding(
                buffer.resource,
                buffer.count_key,
                buffer.count_value,
                f"its {replicas} warm pods{together} ask {asked} {resource}, more than {quota.label} admits "
                f"({admitted}): the real pods they stand for could never all run, so the nodes kept for the rest bill "
                "for nothing",
                f"{fix}, or raise the quota",
            )


def check_buffer_limits(view: StackView, _config: None) -> Iterator[Finding]:
    by_namespace: dict[str, list[tuple[Buffer, int]]] = {}
    for buffer in buffers(view):
        replicas = buffer.replicas
        if buffer.template is not None and replicas and buffer.asks_gpus and team_namespace(view, buffer.namespace):
            by_namespace.setdefault(buffer.namespace, []).append((buffer, replicas))
    for namespace, held in by_namespace.items():
        yield from _quota_findings(view, namespace, held)
    on_pool: dict[str, list[KeptNodes]] = {}
    for kept in kept_nodes(view):
        on_pool.setdefault(kept.pool.pool.name, []).append(kept)
        if kept.units > kept.pool.limit:
            yield finding(
                kept.buffer.resource,
                kept.buffer.count_key,
                kept.buffer.count_value,
                f"the nodes that hold {kept.replicas} warm pods take {kept.units} {kept.pool.counted} of pool "
                f"{kept.pool.pool.name}'s limit, more than its {kept.pool.limit}: Karpenter stops at the limit and the "
                "buffer never fills",
                "keep fewer warm pods, or raise the pool's maxGpus",
            )
    for held in on_pool.values():
        sized, total = held[0].pool, sum(kept.units for kept in held)
        if len(held) > 1 and total > sized.limit and all(kept.units <= sized.limit for kept in held):
            shown = ", ".join(f"{k.buffer.namespace}/{k.buffer.resource.object_name} ({k.units})" for k in held)
            yield finding_about(
                sized.pool.resource,
                f"the buffers on it ({shown}) need nodes worth {total} {sized.counted} together, more than its limit "
                f"{sized.limit}: Karpenter stops at the limit and some of them never fill",
                "raise the pool's maxGpus, or keep less headroom",
            )


RULE = Rule(
    name="capacity-buffer-within-limits",
    order=53,
    description="The warm pods of the CapacityBuffers on a pool fit, in whole nodes, within its NodePool limit, and "
    "each buffer's warm pods within its team's ResourceQuota.",
    why="Karpenter keeps buffer nodes only within the NodePool limit, and the limit counts whole nodes: past it the "
    "buffer never fills. Headroom beyond the quota stands for pods the team could never run.",
    remediation="Keep fewer warm pods, or raise the pool's maxGpus or the team's quota (config refuses both before "
    "rendering).",
    enforcement="mandatory",
    severity="high",
    check=check_buffer_limits,
)
