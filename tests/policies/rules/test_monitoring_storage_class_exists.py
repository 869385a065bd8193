"""Changes that break `monitoring-storage-class-exists`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import caught, release, set_at

RULE = "monitoring-storage-class-exists"
KPS = "kube-prometheus-stack"
PROMETHEUS = [
    "values",
    "prometheus",
    "prometheusSpec",
    "storageSpec",
    "volumeClaimTemplate",
    "spec",
    "storageClassName",
]

# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "Prometheus on gp3 nobody creates": (
        RULE,
        lambda r: set_at(release(r, KPS), PROMETHEUS, "gp3"),
        [
            f"Release {KPS}: values.prometheus.prometheusSpec.storageSpec.volumeClaimTemplate.spec.storageClassName "
            'is "gp3"',
            "EKS creates only gp2 and the stack creates none",
            "Prometheus's volume claim stays Pending",
        ],
    ),
    # kube-prometheus-stack's Alertmanager takes its claim from alertmanagerSpec.storage (not storageSpec).
    "Alertmanager on a class nobody creates": (
        RULE,
        lambda r: set_at(
            release(r, KPS)["values"]["alertmanager"]["alertmanagerSpec"],
            ["storage"],
            {"volumeClaimTemplate": {"spec": {"storageClassName": "io2"}}},
        ),
        ['values.alertmanager.alertmanagerSpec.storage.volumeClaimTemplate.spec.storageClassName is "io2"'],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_a_class_the_stack_creates_passes(plans):
    resources = resources_of(plans["prod"])
    set_at(release(resources, KPS), PROMETHEUS, "gp3")
    resources.append(
        {
            "urn": "urn:pulumi:prod::gpushare::kubernetes:storage.k8s.io/v1:StorageClass::gp3",
            "type": "kubernetes:storage.k8s.io/v1:StorageClass",
            "name": "gp3",
            "inputs": {"metadata": {"name": "gp3"}, "provisioner": "ebs.csi.aws.com", "parameters": {"type": "gp3"}},
        }
    )
    assert messages(resources, RULE) == []
