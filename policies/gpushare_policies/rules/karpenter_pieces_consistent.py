"""Karpenter's pieces agree with each other: CRDs and controller at one version (valid OCI tags), every
NodePool's node class exists, and the node class discovers this cluster's subnets and security groups
without the cluster-ownership tag Karpenter refuses."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import karpenter_api, names, pins

from ..karpenter import RunningKarpenter
from ..rule import Finding, Rule, finding
from ..stack import EC2_NODE_CLASS, NODE_POOL, Resource, StackView, sorted_by_name

DISCOVERY_TAG = "karpenter.sh/discovery"
SELECTORS = ("subnetSelectorTerms", "securityGroupSelectorTerms")


def _number(release: Resource) -> str:
    return str(release.get("version")).removeprefix("v")


def check(view: StackView, _config: None) -> Iterator[Finding]:
    controller, crds = view.release(names.KARPENTER_CHART), view.release(names.KARPENTER_CRD_CHART)
    existing = view.existing_cluster()
    stated = [RunningKarpenter(existing, stated=True)] if existing is not None and controller is None else []
    pieces = [RunningKarpenter(r, stated=False) for r in (controller, crds) if r is not None] + stated
    for piece in pieces:
        problem = karpenter_api.chart_tag_problem(str(piece.version))
        if problem is not None:
            yield finding(
                piece.resource,
                piece.version_key,
                piece.version,
                problem,
                f"write it as {pins.chart_version(names.KARPENTER_CHART)}",
            )
    # A `v` prefix is reported above, on the release that has it; the pieces differ only when the numbers do.
    if controller is not None and crds is not None and _number(controller) != _number(crds):
        yield finding(
            crds,
            "version",
            crds.get("version"),
            f"the CRDs differ from the controller's {controller.get('version')}: fields one knows the other refuses",
            f"install karpenter-crd at {_number(controller)}",
        )
    classes = {node_class.object_name: node_class for node_class in view.of_type(EC2_NODE_CLASS)}
    for pool in sorted_by_name(view.of_type(NODE_POOL)):
        ref = pool.get("spec", "template", "spec", "nodeClassRef") or {}
        ec2 = ref.get("group") == names.EC2_NODE_CLASS_GROUP and ref.get("kind") == "EC2NodeClass"
        if ec2 and ref.get("name") not in classes:
            yield finding(
                pool,
                "spec.template.spec.nodeClassRef.name",
                ref.get("name"),
                "no EC2NodeClass of that name is in the stack, so Karpenter never launches for this pool",
                f"name one of: {', '.join(sorted(classes)) or 'none (add the gpu EC2NodeClass)'}",
            )
    cluster = controller.get("values", "settings", "clusterName") if controller is not None else None
    if controller is None and existing is not None:
        cluster = existing.get("clusterName")
    for node_class in sorted_by_name(classes.values()):
        tags = node_class.get("spec", "tags") or {}
        for key in sorted(k for k in tags if str(k).startswith(f"{karpenter_api.CLUSTER_OWNERSHIP_TAG_PREFIX}/")):
            yield finding(
                node_class,
                f'spec.tags["{key}"]',
                tags[key],
                "Karpenter refuses EC2NodeClasses that set the cluster-ownership tag (it sets it itself)",
                "drop the tag",
            )
        for selector in SELECTORS:
            for index, term in enumerate(node_class.get("spec", selector) or []):
                discovered = (term.get("tags") or {}).get(DISCOVERY_TAG) if isinstance(term, dict) else None
                if cluster is not None and discovered is not None and discovered != cluster:
                    yield finding(
                        node_class,
                        f'spec.{selector}[{index}].tags["{DISCOVERY_TAG}"]',
                        discovered,
                        f"it selects another cluster's subnets or security groups than {cluster}'s",
                        f"use {DISCOVERY_TAG}: {cluster}",
                    )


RULE = Rule(
    name="karpenter-pieces-consistent",
    order=19,
    description="Karpenter CRDs and controller share one OCI version, every NodePool's EC2NodeClass exists, "
    "and the node class discovers this cluster without the cluster-ownership tag.",
    why="Mismatched CRDs refuse fields, a missing node class launches nothing, another cluster's discovery "
    "tag puts nodes in its subnets, and Karpenter rejects the ownership tag.",
    remediation=f"Keep the values gpushare renders: one chart version, nodeClassRef {names.GPU_NODE_CLASS}, discovery "
    "by cluster name.",
    enforcement="mandatory",
    severity="high",
    check=check,
)
