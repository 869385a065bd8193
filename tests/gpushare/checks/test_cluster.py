"""gpushare/checks/cluster.py: the cluster's cross-key problems, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack
from tests.gpushare.mutations import assert_one_line_names_the_key, set_key

BAD_CLUSTER = [
    (
        "GPU type as a system node",
        set_key("gpushare:cluster.systemNodeGroup.instanceTypes", ["m7i.large", "g5.xlarge"]),
        "gpushare:cluster.systemNodeGroup.instanceTypes[1]: 'g5.xlarge' is a GPU type",
    ),
    (
        "team role that is the system node role the stack creates",
        set_key("gpushare:teams.0.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/gpushare-dev-system-node"),
        "gpushare:teams[0].namespaceAccessRoleArn: 'arn:aws:iam::123456789012:role/gpushare-dev-system-node': the "
        "stack creates role gpushare-dev-system-node",
    ),
    (
        "admin listed twice",
        set_key("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/a"] * 2),
        "gpushare:cluster.adminPrincipalArns[1]: principal 'arn:aws:iam::123456789012:role/a' is listed twice "
        "(first at [0])",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_CLUSTER], ids=[c[0] for c in BAD_CLUSTER])
def test_bad_cluster_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)


@pytest.mark.parametrize(
    "endpoint",
    [
        {"publicAccess": False, "privateAccess": True, "privateAccessCidrs": ["10.0.0.0/8"]},
        {"publicAccess": True, "privateAccess": True, "publicAccessCidrs": ["203.0.113.0/24"]},
        {"publicAccess": True, "privateAccess": False, "publicAccessCidrs": ["0.0.0.0/0"]},
    ],
)
def test_endpoints_nodes_can_reach_are_accepted(endpoint):
    raw = raw_stack("dev")
    raw["gpushare:cluster"]["endpoint"] = endpoint
    assert load_stack_config(raw, today=PLAN_DATE).cluster.endpoint.public_access == endpoint["publicAccess"]


def test_an_existing_vpc_may_list_its_own_nat_addresses():
    raw = raw_stack("dev")
    raw["gpushare:cluster"]["network"] = {
        "vpcId": "vpc-0123456789abcdef0",
        "privateSubnetIds": ["subnet-0123456789abcdef0", "subnet-0123456789abcdef1"],
    }
    raw["gpushare:cluster"]["endpoint"] = {
        "publicAccess": True,
        "privateAccess": False,
        "publicAccessCidrs": ["198.51.100.7/32"],
    }
    assert not load_stack_config(raw, today=PLAN_DATE).cluster.endpoint.private_access
