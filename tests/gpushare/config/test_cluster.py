"""gpushare/config/cluster.py: bad gpushare:cluster values, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from tests.gpushare.mutations import assert_one_line_names_the_key, both, drop_key, set_key

BAD_CLUSTER = [
    (
        "public endpoint without cidrs",
        drop_key("gpushare:cluster.endpoint.publicAccessCidrs"),
        "gpushare:cluster.endpoint.publicAccessCidrs: is required when publicAccess is true",
    ),
    (
        "bad cidr",
        set_key("gpushare:cluster.endpoint.publicAccessCidrs", ["10.0.0.1/8"]),
        "gpushare:cluster.endpoint.publicAccessCidrs[0]: '10.0.0.1/8' is not a CIDR",
    ),
    (
        "bare address where a CIDR goes",  # a name is refused, so an address without its prefix length is too
        set_key("gpushare:cluster.endpoint.publicAccessCidrs", ["203.0.113.7"]),
        "gpushare:cluster.endpoint.publicAccessCidrs[0]: '203.0.113.7' is an address, not a CIDR: write 203.0.113.7/32",
    ),
    (
        "bare IPv6 address where a CIDR goes",
        set_key("gpushare:cluster.endpoint.privateAccessCidrs", ["2001:db8::7"]),
        "gpushare:cluster.endpoint.privateAccessCidrs[0]: '2001:db8::7' is an address, not a CIDR: write "
        "2001:db8::7/128",
    ),
    (
        "bad kubernetes version",
        set_key("gpushare:cluster.kubernetesVersion", "1.34.2"),
        "gpushare:cluster.kubernetesVersion: '1.34.2' is not a Kubernetes minor version written as a string",
    ),
    (
        "subnets without vpc",
        set_key("gpushare:cluster.network.privateSubnetIds", ["subnet-0123456789abcdef0"]),
        "gpushare:cluster.network.privateSubnetIds: ['subnet-0123456789abcdef0'] needs vpcId",
    ),
    (
        "system group sizes",
        set_key("gpushare:cluster.systemNodeGroup.desiredSize", 9),
        "gpushare:cluster.systemNodeGroup.desiredSize: 9: need minSize <= desiredSize <= maxSize, got 2/9/3",
    ),
    (
        "private endpoint nobody can reach",
        both(
            set_key("gpushare:cluster.endpoint.publicAccess", False),
            drop_key("gpushare:cluster.endpoint.publicAccessCidrs"),
        ),
        "gpushare:cluster.endpoint.privateAccessCidrs: publicAccess is false and nobody may reach the private endpoint",
    ),
    (
        "private ranges without a private endpoint",
        both(
            set_key("gpushare:cluster.endpoint.privateAccess", False),
            set_key("gpushare:cluster.endpoint.privateAccessCidrs", ["10.0.0.0/8"]),
        ),
        "gpushare:cluster.endpoint.privateAccessCidrs: ['10.0.0.0/8'] is set but privateAccess is false",
    ),
    (
        "bad security group",
        set_key("gpushare:cluster.endpoint.privateAccessSecurityGroupIds", ["default"]),
        "gpushare:cluster.endpoint.privateAccessSecurityGroupIds[0]: 'default' is not a security group id",
    ),
    (
        "admin that is not an IAM principal",
        set_key("gpushare:cluster.adminPrincipalArns", ["arn:aws:s3:::bucket"]),
        "gpushare:cluster.adminPrincipalArns[0]: 'arn:aws:s3:::bucket' is not an IAM role or user ARN",
    ),
    (
        "log retention CloudWatch refuses",
        set_key("gpushare:cluster.logRetentionDays", 45),
        "gpushare:cluster.logRetentionDays: 45 is not a CloudWatch Logs retention; allowed: 1, 3, 5",
    ),
    (
        "tag with the reserved aws: prefix",
        set_key("gpushare:cluster.tags", {"aws:owner": "ml"}),
        "gpushare:cluster.tags.aws:owner: the aws: prefix is reserved for AWS; allowed: any other key",
    ),
    (
        "tag Karpenter sets itself",
        set_key("gpushare:cluster.tags", {"karpenter.sh/nodepool": "x"}),
        "gpushare:cluster.tags.karpenter.sh/nodepool: 'x': Karpenter sets karpenter.sh/nodepool itself",
    ),
    (
        "cluster-ownership tag",
        set_key("gpushare:cluster.tags", {"kubernetes.io/cluster/gpushare-dev": "owned"}),
        "gpushare:cluster.tags.kubernetes.io/cluster/gpushare-dev: 'owned': Karpenter sets the cluster-ownership tag",
    ),
    (
        "empty tag value",
        set_key("gpushare:cluster.tags", {"team": ""}),
        "gpushare:cluster.tags.team: '': the EC2NodeClass CRD refuses empty tag keys and values",
    ),
    (
        "tag with a character AWS refuses",
        set_key("gpushare:cluster.tags", {"cost#center": "42"}),
        "gpushare:cluster.tags.cost#center: '42': allowed in keys and values: letters, digits, spaces",
    ),
    (
        "tag key too long",
        set_key("gpushare:cluster.tags", {"k" * 129: "v"}),
        "gpushare:cluster.tags." + "k" * 129 + ": 'v': AWS allows keys of 1 to 128 characters",
    ),
    (
        "VPC range that is not a CIDR",
        set_key("gpushare:cluster.network.vpcCidr", "10.20.0.0/33"),
        "gpushare:cluster.network.vpcCidr: '10.20.0.0/33' is not a CIDR; allowed: an IPv4 CIDR from /16 to /20",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_CLUSTER], ids=[c[0] for c in BAD_CLUSTER])
def test_bad_cluster_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)
