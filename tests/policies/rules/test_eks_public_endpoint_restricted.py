"""Changes that break `eks-public-endpoint-restricted`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, messages
from tests.policies.rules.breaking import (
    caught,
    cluster,
    delete_at,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "wide cidr": (
        "eks-public-endpoint-restricted",
        lambda r: set_at(cluster(r), ["publicAccessCidrs"], ["10.0.0.0/8"]),
        ['publicAccessCidrs is "10.0.0.0/8"', "a /8"],
    ),
    "no cidrs means the world": (
        "eks-public-endpoint-restricted",
        lambda r: delete_at(cluster(r), ["publicAccessCidrs"]),
        ["publicAccessCidrs not set", "a /0"],
    ),
    "not a cidr": (
        "eks-public-endpoint-restricted",
        lambda r: set_at(cluster(r), ["publicAccessCidrs"], ["banana"]),
        ['publicAccessCidrs is "banana": not a CIDR'],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_endpoint_prefix_is_tunable(plans):
    resources = broken(plans["dev"], lambda r: set_at(cluster(r), ["publicAccessCidrs"], ["10.0.0.0/8"]))
    config = {"eks-public-endpoint-restricted": {"minimumPrefixLength": 8}}
    assert messages(resources, "eks-public-endpoint-restricted", config) == []
