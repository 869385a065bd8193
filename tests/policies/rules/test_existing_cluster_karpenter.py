"""On an existing cluster the rules that read the stack's Karpenter release read the Karpenter the stack states
instead (the ExistingCluster component's inputs): the shipped example passes, and each way the statement can break
is caught, with a fix that names the cluster's Karpenter and the key that states it."""

from __future__ import annotations

import pytest

from policies.gpushare_policies.stack import Resource, chart_name
from tests.policies.helpers import broken, entry, messages
from tests.policies.rules.breaking import G5, caught, node_class, set_at

EXISTING = "gpushare:index:ExistingCluster existing-cluster"


def stated(r):
    return next(x["inputs"] for x in r if x["type"] == "gpushare:index:ExistingCluster")


def test_the_shipped_example_passes_every_rule(plans):
    assert plans["existing"]["violations"] == []


# (policy, change, every fragment one message must contain), on the existing plan
CASES = {
    "overlay gate stated off": (
        "karpenter-node-overlay-enabled",
        lambda r: set_at(stated(r), ["karpenter", "featureGates", "nodeOverlay"], False),
        [
            f"{EXISTING}: karpenter.featureGates.nodeOverlay is false",
            "silently ignores all 3",
            "state gpushare:existingCluster.karpenter.featureGates.nodeOverlay: true",
        ],
    ),
    "karpenter 1.6 stated": (
        "karpenter-node-overlay-enabled",
        lambda r: set_at(stated(r), ["karpenter", "version"], "1.6.2"),
        [f'{EXISTING}: karpenter.version is "1.6.2"', "upgrade the cluster's Karpenter to 1.7.0"],
    ),
    "buffer gate stated off": (
        "capacity-buffer-gate-enabled",
        lambda r: set_at(stated(r), ["karpenter", "featureGates", "capacityBuffer"], False),
        [f"{EXISTING}: karpenter.featureGates.capacityBuffer is false", "never reads the 1 CapacityBuffer"],
    ),
    "buffer before karpenter 1.14": (
        "capacity-buffer-gate-enabled",
        lambda r: set_at(stated(r), ["karpenter", "version"], "1.13.0"),
        [f'{EXISTING}: karpenter.version is "1.13.0"', "CapacityBuffer exists from Karpenter 1.14.0"],
    ),
    "version below the recommended one": (
        "karpenter-version-recommended",
        lambda r: set_at(stated(r), ["karpenter", "version"], "1.12.0"),
        [f'{EXISTING}: karpenter.version is "1.12.0": below 1.13.0', "gpushare:existingCluster.karpenter.version"],
    ),
    "karpenter too old for the cluster's kubernetes": (
        "features-within-held-versions",
        lambda r: set_at(stated(r), ["karpenter", "version"], "1.7.0"),
        [f'{EXISTING}: karpenter.version is "1.7.0": Karpenter\'s compatibility matrix needs', "Kubernetes 1.36"],
    ),
    "admission policies on a kubernetes without them": (
        "features-within-held-versions",
        lambda r: set_at(stated(r), ["kubernetesVersion"], "1.34"),
        ["MutatingAdmissionPolicy", f"{EXISTING}'s kubernetesVersion"],
    ),
    "v-prefixed version": (
        "karpenter-pieces-consistent",
        lambda r: set_at(stated(r), ["karpenter", "version"], "v1.15.1"),
        [f'{EXISTING}: karpenter.version is "v1.15.1"', "without a leading v"],
    ),
    "node class of another cluster": (
        "karpenter-pieces-consistent",
        lambda r: set_at(node_class(r), ["spec", "subnetSelectorTerms", 0, "tags", "karpenter.sh/discovery"], "x"),
        ["EC2NodeClass gpu: spec.subnetSelectorTerms[0].tags", "than platform-prod's"],
    ),
    "pool created before the gate check": (
        "karpenter-objects-depend-on-releases",
        lambda r: set_at(entry(r, "NodePool", G5), ["dependencies"], []),
        ["NodePool g5-shared: does not depend on the EC2NodeClass, which waits for the check", "depends_on"],
    ),
    "scrape of another karpenter release": (
        "service-monitors-find-their-targets",
        lambda r: set_at(stated(r), ["karpenter", "deployment"], "platform-karpenter"),
        ["ServiceMonitor karpenter: spec.selector", "Karpenter controller in kube-system"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["existing"], case, CASES[case])


def test_the_cluster_brings_its_volume_driver(plans):
    """The stack's Prometheus claims a volume; the EBS CSI driver is the existing cluster's, which destroy never
    removes: no add-on dependency is asked for, while the claim's retention is still judged."""
    assert messages(plans["existing"]["resources"], "monitoring-volumes-go-with-the-stack") == []
    retained = broken(
        plans["existing"],
        lambda r: set_at(
            entry(r, "Release", "kube-prometheus-stack")["inputs"]["values"]["prometheus"]["prometheusSpec"],
            ["persistentVolumeClaimRetentionPolicy", "whenDeleted"],
            "Retain",
        ),
    )
    assert messages(retained, "monitoring-volumes-go-with-the-stack")


@pytest.mark.parametrize(
    ("chart", "name"),
    [
        ("/srv/charts/kube-prometheus-stack-88.5.3.tgz", "kube-prometheus-stack"),
        ("charts/hami-2.10.0.tgz", "hami"),
        ("oci://public.ecr.aws/karpenter/karpenter-crd", "karpenter-crd"),
        ("nvidia-device-plugin", "nvidia-device-plugin"),
    ],
)
def test_a_release_from_a_chart_archive_is_found_by_its_chart(chart, name):
    """gpushare:charts.folder gives releases an archive's path: every rule still finds the release by its chart."""
    release = Resource("urn:x", "kubernetes:helm.sh/v3:Release", "x", {"chart": chart})
    assert chart_name(release) == name
