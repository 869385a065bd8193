"""Changes that break `hami-overlay-coverage`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import drop
from tests.policies.rules.breaking import (
    G5_XL,
    caught,
    delete_at,
    overlay,
    pool,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "overlay missing": (
        "hami-overlay-coverage",
        lambda r: drop(r, "NodeOverlay", G5_XL),
        ["NodePool g5-shared: instance type g5.xlarge has no NodeOverlay setting nvidia.com/gpu, nvidia.com/gpumem"],
    ),
    "overlay for another pool": (
        "hami-overlay-coverage",
        lambda r: set_at(overlay(r), ["spec", "requirements", 0, "values"], ["g4dn-shared"]),
        ["instance type g5.xlarge has no NodeOverlay", "karpenter.sh/nodepool In [g5-shared]"],
    ),
    "overlay on an unknown label": (
        "hami-overlay-coverage",
        lambda r: overlay(r)["spec"]["requirements"].append(
            {"key": "example.com/rack", "operator": "In", "values": ["r1"]}
        ),
        [
            "instance type g5.xlarge has no NodeOverlay",
            "NodeOverlay g5-shared-g5-xlarge is meant for it but its requirement example.com/rack In [r1]",
            "drop that requirement from NodeOverlay g5-shared-g5-xlarge",
        ],
    ),
    "overlay on a Karpenter label the type does not have": (
        "hami-overlay-coverage",
        lambda r: overlay(r)["spec"]["requirements"].append(
            {"key": "karpenter.k8s.aws/instance-gpu-name", "operator": "In", "values": ["t4"]}
        ),
        ["instance type g5.xlarge has no NodeOverlay"],
    ),
    "one resource missing": (
        "hami-overlay-coverage",
        lambda r: delete_at(overlay(r), ["spec", "capacity", "nvidia.com/gpumem-percentage"]),
        ["g5.xlarge has no NodeOverlay setting nvidia.com/gpumem-percentage:"],
    ),
    "pool types open": (
        "hami-overlay-coverage",
        lambda r: set_at(pool(r), ["spec", "template", "spec", "requirements", 0, "operator"], "Exists"),
        ["NodePool g5-shared: spec.template.spec.requirements has no `node.kubernetes.io/instance-type In"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
