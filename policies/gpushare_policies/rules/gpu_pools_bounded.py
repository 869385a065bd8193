"""Every GPU NodePool bounds its GPUs: `spec.limits["nvidia.com/gpu"]` (vGPUs on HAMi pools, whole GPUs on
exclusive ones), as the config's required maxGpus renders it. Time-sliced pools count replicas instead, which
timeslice-overlays-match requires.

Karpenter launches nodes for a NodePool until its limits would be exceeded (karpenter.sh docs, NodePools, "Limits");
a pool without limits, or limited only in CPU or memory, launches GPU instances for as long as GPU pods wait.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..kube import pools
from ..nvidia import is_timeslice_pool
from ..pools import is_gpu_pool
from ..rule import Finding, Rule, finding
from ..stack import StackView


def check_gpu_pools_bounded(view: StackView, _config: None) -> Iterator[Finding]:
    for pool in pools(view):
        if not is_gpu_pool(pool) or is_timeslice_pool(pool) or names.GPU in pool.limits:
            continue
        others = ", ".join(sorted(pool.limits))
        yield finding(
            pool.resource,
            f'spec.limits["{names.GPU}"]',
            None,
            "nothing bounds how many GPU nodes Karpenter launches for this pool while GPU pods wait: its spend has no "
            "limit" + (f" in GPUs (its limits on {others} count no GPU)" if others else ""),
            f"limit {names.GPU} (gpushare renders pools[].maxGpus, times deviceSplitCount on HAMi pools)",
        )


RULE = Rule(
    name="gpu-pools-bounded",
    order=76,
    description=f"Every GPU NodePool but the time-sliced ones (whose replica limit timeslice-overlays-match checks) "
    f"has a limit on {names.GPU}, as the config's required maxGpus renders it.",
    why="A GPU pool without a GPU limit (limits deleted, or only cpu or memory left) launches GPU instances for as "
    "long as pods wait: the spend has no bound in GPUs.",
    remediation=f"Keep the {names.GPU} limit gpushare renders from pools[].maxGpus.",
    enforcement="mandatory",
    severity="high",
    check=check_gpu_pools_bounded,
)
