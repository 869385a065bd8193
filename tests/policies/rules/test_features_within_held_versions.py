"""Changes that break `features-within-held-versions`: a feature newer than the Karpenter, NVIDIA plugin or
Kubernetes version the stack runs, each caught with the fix; the table the rule, config and docs read holds
what upstream says."""

from __future__ import annotations

import pytest

from gpushare import compat, versions
from tests.policies.helpers import messages
from tests.policies.rules.breaking import caught, cluster, delete_at, pool, release, set_at

POLICY = "features-within-held-versions"


def _hold(r, name, version):
    release(r, name)["version"] = version


def _both(*changes):
    def apply(r):
        for change in changes:
            change(r)

    return apply


# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "Balanced on a Karpenter held at 1.13": (
        POLICY,
        _both(
            lambda r: set_at(pool(r), ["spec", "disruption", "consolidationPolicy"], "Balanced"),
            lambda r: _hold(r, "karpenter", "1.13.0"),
        ),
        [
            'NodePool g5-shared: spec.disruption.consolidationPolicy is "Balanced"',
            "needs Karpenter 1.14.0 or newer, but Release karpenter's version is 1.13.0",
            "the API server refuses the NodePool",
            "or WhenEmpty or WhenEmptyOrUnderutilized",
        ],
    ),
    "a NodePool without consolidateAfter on Karpenter 1.14": (
        POLICY,
        _both(
            lambda r: delete_at(pool(r), ["spec", "disruption", "consolidateAfter"]),
            lambda r: _hold(r, "karpenter", "1.14.1"),
        ),
        ["NodePool g5-shared: spec.disruption.consolidateAfter not set", "needs Karpenter 1.15.0 or newer"],
    ),
    "time-slicing on an NVIDIA plugin held at 0.11": (
        POLICY,
        lambda r: _hold(r, "nvidia-device-plugin", "0.11.0"),
        [
            'Release nvidia-device-plugin: values.config.map.timeslice-4 is "timeSlicing"',
            "needs NVIDIA device plugin chart 0.12.0 or newer",
        ],
    ),
    "MutatingAdmissionPolicy on Kubernetes 1.35": (
        POLICY,
        lambda r: set_at(cluster(r), ["version"], "1.35"),
        [
            "MutatingAdmissionPolicy gpushare-inference-gpu-scheduler-policy: apiVersion is",
            "needs Kubernetes 1.36 or newer, but eks:index:Cluster gpushare-dev's version is 1.35",
        ],
    ),
    "ValidatingAdmissionPolicy on Kubernetes 1.29": (
        POLICY,
        lambda r: set_at(cluster(r), ["version"], "1.29"),
        ["ValidatingAdmissionPolicy gpushare-inference-isolation: apiVersion is", "needs Kubernetes 1.30 or newer"],
    ),
    "a Karpenter older than the cluster's minor needs": (
        POLICY,
        lambda r: _hold(r, "karpenter", "1.12.1"),
        ['Release karpenter: version is "1.12.1"', "compatibility matrix needs 1.13.0 or newer on Kubernetes 1.36"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_the_volume_retention_on_an_old_cluster_is_caught(plans):
    resources = [dict(r, inputs=dict(r["inputs"])) for r in plans["prod"]["resources"]]
    set_at(cluster(resources), ["version"], "1.26")
    assert any(
        "values.prometheus.prometheusSpec.persistentVolumeClaimRetentionPolicy" in m and "Kubernetes 1.27" in m
        for m in messages(resources, POLICY)
    )


def test_compat_reads_its_thresholds_from_the_table():
    assert compat.KARPENTER_MIN_OVERLAY_VERSION == versions.minimum("node-overlay") == (1, 7, 0)
    assert compat.MUTATING_ADMISSION_POLICY_GA == versions.minimum("mutating-admission-policy") == (1, 36)
    assert compat.hami_node_selector_key("2.7.1") == "nvidianodeSelector"
    assert compat.hami_node_selector_key(versions.feature("nvidia-node-selector-key").minimum) == "nvidiaNodeSelector"


def test_every_supported_kubernetes_minor_names_the_karpenter_it_needs():
    from gpushare import pins

    assert set(pins.kubernetes_minors()) <= set(versions.table().karpenter_for_kubernetes)
    pinned = versions.parse_version(pins.chart_version("karpenter"))
    assert all(pinned >= versions.parse_version(v) for v in versions.table().karpenter_for_kubernetes.values())
