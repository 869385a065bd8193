"""Rule 7: NodePool limits admit at least one node of every type the pool allows."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal

from pydantic import Field

from gpushare import names
from gpushare.catalog import CatalogError, load_catalog

from .hami import Hami, expected_capacity, is_hami_pool
from .kube import Pool, pools, quantity
from .nvidia import NvidiaPlugin
from .rule import Finding, Rule, RuleConfig, finding
from .stack import StackView

MIB = 2**20


def sharing_hami(view: StackView, hami: Hami | None, pool: Pool) -> Hami | None:
    """The HAMi release when it slices this pool's GPUs, else None (the pool counts whole GPUs)."""
    return hami if hami is not None and is_hami_pool(view, pool) else None


def pool_slicing(view: StackView, pool: Pool) -> tuple[str, int] | None:
    """(resource, replicas per GPU) when the NVIDIA plugin time-slices this pool's GPUs."""
    nvidia = NvidiaPlugin.of(view)
    return nvidia.pool_slicing(pool) if nvidia is not None else None


def per_node(
    hami: Hami | None, instance_type: str, sliced: tuple[str, int] | None = None
) -> dict[str, tuple[Decimal, str]]:
    """Limit key -> (what one node of the type counts against it, unit) for the keys gpushare can know;
    `hami` is the release slicing the pool's GPUs, None when the pool takes whole GPUs; `sliced` is the
    time-sliced resource and its replicas per GPU."""
    try:
        itype = load_catalog().instance_type(instance_type)
    except CatalogError:
        return {}
    amounts = {
        "cpu": (Decimal(itype.vcpu), "vCPU"),
        "memory": (Decimal(itype.memory_mib * MIB), f"bytes ({itype.memory_mib} MiB)"),
        names.GPU: (Decimal(itype.gpu_count), "GPUs"),
    }
    if sliced is not None:
        resource, replicas = sliced
        amounts[resource] = (Decimal(itype.gpu_count * replicas), f"replicas ({replicas} per GPU)")
    if hami is not None:
        capacity = expected_capacity(hami, instance_type)
        if not isinstance(capacity, str):
            amounts.update(
                {
                    names.GPU: (Decimal(capacity.vgpus), "vGPUs"),
                    names.GPU_MEMORY: (Decimal(capacity.gpu_memory), "MiB"),
                    names.GPU_CORES: (Decimal(capacity.gpu_cores), "gpucores"),
                }
            )
    return amounts


class LimitsConfig(RuleConfig):
    min_nodes: int = Field(
        default=1, ge=1, alias="minNodes", description="How many nodes of every allowed type the limits must admit."
    )


def check_limits(view: StackView, config: LimitsConfig) -> Iterator[Finding]:
    hami = Hami.of(view)
    for pool in pools(view):
        pool_hami = sharing_hami(view, hami, pool)
        sliced = pool_slicing(view, pool)
        for instance_type in pool.instance_types or ():
            node = per_node(pool_hami, instance_type, sliced)
            for key, value in sorted(pool.limits.items()):
                if key not in node:
                    continue
                limit = quantity(value)
                amount, unit = node[key]
                if limit is None:
                    yield finding(pool.resource, f'spec.limits["{key}"]', value, "not a Kubernetes quantity", "fix it")
                elif amount and limit < amount * config.min_nodes:
                    yield finding(
                        pool.resource,
                        f'spec.limits["{key}"]',
                        value,
                        f"one {instance_type} node counts {amount} {unit} against it, so the limit admits "
                        f"{int(limit // amount)} such nodes ({config.min_nodes} needed) and Karpenter never launches "
                        "the type, without an error",
                        f"raise it to at least {amount * config.min_nodes} or drop it (gpushare limits only "
                        f"{names.GPU}, counted in vGPUs on shared pools)",
                    )


RULES = (
    Rule(
        name="nodepool-limits-admit-nodes",
        description="Every NodePool's limits admit at least one node of every instance type it allows, with "
        "nvidia.com/gpu counted in vGPUs on HAMi pools.",
        why="A cpu limit of 10 on a pool of 16-vCPU nodes, or a GPU limit in physical GPUs on a vGPU pool, stops "
        "Karpenter from launching the node with no error: pods just stay Pending.",
        remediation="Limit only nvidia.com/gpu and count it in vGPUs (maxGpus x deviceSplitCount) on HAMi pools; "
        "otherwise raise the limit to at least one node of the largest type.",
        enforcement="mandatory",
        severity="high",
        check=check_limits,
        config=LimitsConfig,
    ),
)
