"""Every GPU NodePool taints its nodes, so only pods that ask for GPUs (and tolerate it) land there."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..kube import Pool, pools
from ..pools import is_gpu_pool
from ..rule import Finding, Rule, finding
from ..stack import StackView

TAINT = f"{names.GPU_TAINT['key']}={names.GPU_TAINT['value']}:{names.GPU_TAINT['effect']}"


def _tainted(pool: Pool) -> bool:
    return any(
        all(taint.get(field) == names.GPU_TAINT[field] for field in ("key", "value", "effect"))
        for taint in pool.taints
        if isinstance(taint, dict)
    )


def check_gpu_pools_tainted(view: StackView, _config: None) -> Iterator[Finding]:
    for pool in pools(view):
        if is_gpu_pool(pool) and not _tainted(pool):
            yield finding(
                pool.resource,
                "spec.template.spec.taints",
                list(pool.taints),
                f"without {TAINT} every pending pod may land on (or make Karpenter launch) these GPU nodes: CPU pods "
                "take the room GPU pods were launched for and keep the nodes from consolidating",
                f"add the taint {TAINT} (gpushare renders it on every GPU pool; GPU pods tolerate it)",
            )


RULE = Rule(
    name="gpu-pools-tainted",
    order=63,
    description=f"Every GPU NodePool (a gpushare sharing label or a GPU instance type) taints its nodes {TAINT}.",
    why="An untainted GPU pool takes any pod: Karpenter may launch a GPU instance for a CPU pod, and CPU pods "
    "hold GPU nodes that should consolidate.",
    remediation=f"Keep the {TAINT} taint gpushare renders on every GPU pool.",
    enforcement="mandatory",
    severity="high",
    check=check_gpu_pools_tainted,
)
