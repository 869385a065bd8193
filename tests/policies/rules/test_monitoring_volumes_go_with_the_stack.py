"""Changes that break `monitoring-volumes-go-with-the-stack`: each is caught, and every message says why the setting
exists and the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import entry, messages, resources_of
from tests.policies.rules.breaking import caught, delete_at, release, set_at

POLICY = "monitoring-volumes-go-with-the-stack"
KPS = "kube-prometheus-stack"
RETENTION = ["values", "prometheus", "prometheusSpec", "persistentVolumeClaimRetentionPolicy"]
ALERTMANAGER = ["values", "alertmanager", "alertmanagerSpec"]


def _without_driver_dependency(r):
    kps = entry(r, "Release", KPS)
    kps["dependencies"] = [d for d in kps["dependencies"] if "ebs-csi-driver" not in d]


def _without_driver(r):
    r[:] = [x for x in r if not (x["type"] == "aws:eks/addon:Addon" and "ebs-csi-driver" in x["urn"])]


# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "Prometheus's claim retained": (
        POLICY,
        lambda r: set_at(release(r, KPS), [*RETENTION, "whenDeleted"], "Retain"),
        [
            f"Release {KPS}: values.prometheus.prometheusSpec.persistentVolumeClaimRetentionPolicy.whenDeleted "
            'is "Retain"',
            "EBS volume stays and bills",
            'set it to "Delete"',
        ],
    ),
    "the retention policy dropped (the StatefulSet default retains)": (
        POLICY,
        lambda r: delete_at(release(r, KPS), RETENTION),
        ["persistentVolumeClaimRetentionPolicy.whenDeleted not set", "Retain is the default"],
    ),
    "an Alertmanager volume without the policy": (
        POLICY,
        lambda r: set_at(release(r, KPS), [*ALERTMANAGER, "storage"], {"volumeClaimTemplate": {"spec": {}}}),
        ["values.alertmanager.alertmanagerSpec.persistentVolumeClaimRetentionPolicy.whenDeleted not set"],
    ),
    "the release no longer depends on the EBS CSI add-on": (
        POLICY,
        _without_driver_dependency,
        [f"Release {KPS}: does not depend on the aws-ebs-csi-driver EKS add-on", "may remove the driver first"],
    ),
    "no EBS CSI add-on at all": (
        POLICY,
        _without_driver,
        ["(the stack has none)", "claims stay Pending"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_a_release_without_volumes_needs_neither(plans):
    resources = resources_of(plans["prod"])
    delete_at(release(resources, KPS), ["values", "prometheus", "prometheusSpec", "storageSpec"])
    delete_at(release(resources, KPS), RETENTION)
    _without_driver(resources)
    assert messages(resources, POLICY) == []
