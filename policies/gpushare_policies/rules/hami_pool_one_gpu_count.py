"""A HAMi pool's instance types share one GPU count, so Karpenter packs nodes as HAMi can place pods."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare.catalog import load_catalog

from ..hami import hami_pools
from ..rule import Finding, Rule, finding
from ..stack import StackView


def check_one_gpu_count(view: StackView, _config: None) -> Iterator[Finding]:
    catalog = load_catalog()
    for pool in hami_pools(view):
        known = [t for t in pool.instance_types or () if t in catalog.instance_type_names]
        counts = {t: catalog.instance_type(t).gpu_count for t in known}
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"{t} ({n} GPU{'s' if n > 1 else ''})" for t, n in counts.items())
            yield finding(
                pool.resource,
                "spec.template.spec.requirements instance types",
                listed,
                "overlays advertise a node's GPU memory summed over its GPUs but HAMi places each vGPU on one GPU, so "
                "a multi-GPU node holds fewer pods than Karpenter planned and the rest launch another node",
                "split the pool by GPU count (e.g. 1-GPU sizes in one pool, 4-GPU sizes in another)",
            )


RULE = Rule(
    name="hami-pool-one-gpu-count",
    order=32,
    description="Every HAMi NodePool's instance types have the same GPU count.",
    why="Mixing 1-GPU and 4-GPU types lets Karpenter count a node's summed GPU memory that HAMi cannot hand to one "
    "pod: Karpenter buys the 4-GPU node first, fits fewer pods than planned, and launches more.",
    remediation="One HAMi pool per GPU count (see docs/sharing.md, Where Karpenter and HAMi can disagree).",
    enforcement="advisory",
    severity="low",
    check=check_one_gpu_count,
)
