"""HAMi pools boot AL2023 NVIDIA images, whose only device plugin is HAMi's."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..hami import hami_pools
from ..rule import Finding, Rule, finding
from ..stack import EC2_NODE_CLASS, StackView, sorted_by_name


def check_al2023(view: StackView, _config: None) -> Iterator[Finding]:
    shared = hami_pools(view)
    classes = {pool.node_class for pool in shared}
    for pool in shared:
        if not view.objects(EC2_NODE_CLASS, str(pool.node_class)):
            yield finding(
                pool.resource,
                "spec.template.spec.nodeClassRef.name",
                pool.node_class,
                "no EC2NodeClass of that name in the stack, so its AMI cannot be checked",
                "declare the EC2NodeClass in the same stack",
            )
    for node_class in sorted_by_name(r for name in classes for r in view.objects(EC2_NODE_CLASS, str(name))):
        terms = node_class.get("spec", "amiSelectorTerms") or []
        aliases = [(i, str(t["alias"])) for i, t in enumerate(terms) if isinstance(t, dict) and t.get("alias")]
        for index, alias in aliases:
            if not alias.lower().startswith("al2023@"):
                yield finding(
                    node_class,
                    f"spec.amiSelectorTerms[{index}].alias",
                    alias,
                    "HAMi pools need AL2023 NVIDIA images; Bottlerocket's NVIDIA variant runs its own NVIDIA device "
                    "plugin, which would register nvidia.com/gpu next to HAMi's on the same node",
                    "use alias al2023@<version> (Karpenter picks the NVIDIA variant for GPU types)",
                )
        family = node_class.get("spec", "amiFamily")
        if not aliases and family != "AL2023":
            yield finding(
                node_class,
                "spec.amiFamily",
                family,
                "AMIs chosen by id, name or tags must be AL2023 NVIDIA images on HAMi pools",
                "use amiSelectorTerms [{alias: al2023@<version>}] or amiFamily AL2023 with its NVIDIA AMIs",
            )


RULE = Rule(
    name="hami-pools-use-al2023",
    order=10,
    description="The EC2NodeClass of every HAMi pool selects AL2023 (NVIDIA) images, not Bottlerocket.",
    why="Bottlerocket NVIDIA ships its own NVIDIA device plugin; two device plugins on one node fight over "
    f"{names.GPU}.",
    remediation="Use amiSelectorTerms [{alias: al2023@VERSION}] on the node class of HAMi pools.",
    enforcement="mandatory",
    severity="high",
    check=check_al2023,
)
