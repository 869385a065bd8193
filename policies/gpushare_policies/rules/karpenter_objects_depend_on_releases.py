"""Karpenter objects (CapacityBuffers too) depend on the Karpenter releases, so destroy removes them before their
controller."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..karpenter import running_karpenter
from ..rule import Finding, Rule, finding_about
from ..stack import CAPACITY_BUFFER, EC2_NODE_CLASS, NODE_OVERLAY, NODE_POOL, Resource, StackView, sorted_by_name


def _after_the_node_class(view: StackView, objects: list[Resource]) -> Iterator[Finding]:
    """An existing cluster's Karpenter and CRDs are not the stack's, so destroy cannot remove them first; what must
    hold instead is that nothing is created for that Karpenter before the node class, which waits for the check of
    its gates (components/existing.py)."""
    classes = view.of_type(EC2_NODE_CLASS)
    for obj in sorted_by_name(objects):
        if obj.type != EC2_NODE_CLASS and not any(view.depends_on(obj, node_class) for node_class in classes):
            yield finding_about(
                obj,
                "does not depend on the EC2NodeClass, which waits for the check of the existing Karpenter's feature "
                "gates: `pulumi up` may create it for a Karpenter that ignores it",
                "create it with depends_on on the node class (gpushare's GpuCapacity does)",
            )


def check_destroy_order(view: StackView, _config: None) -> Iterator[Finding]:
    objects = [r for token in (NODE_POOL, NODE_OVERLAY, EC2_NODE_CLASS, CAPACITY_BUFFER) for r in view.of_type(token)]
    if not objects:
        return
    if running_karpenter(view) is not None and view.release(names.KARPENTER_CHART) is None:
        yield from _after_the_node_class(view, objects)
        return
    for chart in (names.KARPENTER_CRD_CHART, names.KARPENTER_CHART):
        releases = view.releases(chart)
        if not releases:
            yield finding_about(
                None,
                f"the stack declares {len(objects)} Karpenter objects but no `{chart}` Helm release: their CRDs or "
                "controller come from outside the stack, so destroy order cannot be guaranteed",
                f"deploy the {names.KARPENTER_CRD_CHART} and {names.KARPENTER_CHART} charts in this stack",
            )
            continue
        for obj in sorted_by_name(objects):
            for release in releases:
                if not view.depends_on(obj, release):
                    yield finding_about(
                        obj,
                        f"does not depend on {release.label}: `pulumi destroy` may delete the controller or its CRDs "
                        "first and leave GPU instances running with nothing to drain them",
                        "create it with depends_on on the Karpenter releases (gpushare's GpuCapacity and WarmHeadroom "
                        "do)",
                    )


RULE = Rule(
    name="karpenter-objects-depend-on-releases",
    order=11,
    description=f"Every NodePool, NodeOverlay, EC2NodeClass and CapacityBuffer depends on the "
    f"{names.KARPENTER_CRD_CHART} and {names.KARPENTER_CHART} Helm releases; on an existing cluster's Karpenter, "
    "on the EC2NodeClass that waits for the check of its gates.",
    why="Destroy runs in reverse dependency order: without the dependency the controller and its IAM can go "
    "first and GPU instances keep running (and billing) with nothing to remove them.",
    remediation="Create Karpenter objects with depends_on on both Karpenter releases.",
    enforcement="mandatory",
    severity="medium",
    check=check_destroy_order,
)
