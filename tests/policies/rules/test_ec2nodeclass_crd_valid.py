"""Changes that break `ec2nodeclass-crd-valid`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    node_class,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "EC2NodeClass the CRD refuses": (
        "ec2nodeclass-crd-valid",
        lambda r: set_at(node_class(r), ["spec", "instanceProfile"], "gpu-nodes"),
        ["EC2NodeClass gpu: spec.role", "exactly one of role and instanceProfile"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
