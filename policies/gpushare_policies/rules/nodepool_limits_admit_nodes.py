"""NodePool limits admit at least one node of every type the pool allows."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field

from gpushare import names

from ..hami import Hami
from ..kube import pools, quantity
from ..pools import per_node, pool_slicing, sharing_hami
from ..rule import Finding, Rule, RuleConfig, finding
from ..stack import StackView


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


RULE = Rule(
    name="nodepool-limits-admit-nodes",
    order=5,
    description="Every NodePool's limits admit at least one node of every instance type it allows, with "
    f"{names.GPU} counted in vGPUs on HAMi pools.",
    why="A cpu limit of 10 on a pool of 16-vCPU nodes, or a GPU limit in physical GPUs on a vGPU pool, stops "
    "Karpenter from launching the node with no error: pods just stay Pending.",
    remediation=f"Limit only {names.GPU} and count it in vGPUs (maxGpus x deviceSplitCount) on HAMi pools; "
    "otherwise raise the limit to at least one node of the largest type.",
    enforcement="mandatory",
    severity="high",
    check=check_limits,
    config=LimitsConfig,
)
