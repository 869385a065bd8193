"""gpushare/checks/cluster.py: the cluster's cross-key problems, each refused on one line naming the key."""

from __future__ import annotations

import pytest

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
