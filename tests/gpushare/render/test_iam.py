"""The Karpenter controller policy against upstream's, statement by statement.

UPSTREAM is aws/karpenter-provider-aws@1d927085dd81 website/content/en/docs/getting-started/
getting-started-with-karpenter/cloudformation.yaml, written as data: Sid -> (actions, resources, condition
operators), with P/R/A/C for partition, region, account and cluster name, <node-role>/<queue> for the ARNs.
"""

from __future__ import annotations

from gpushare.render.iam import karpenter_controller_policy

EC2 = "arn:P:ec2:R"
LAUNCHED = [f"{EC2}:*:{k}/*" for k in ("fleet", "instance", "volume", "network-interface", "launch-template")] + [
    f"{EC2}:*:spot-instances-request/*"
]
PROFILE = "arn:P:iam::A:instance-profile/*"
UPSTREAM: dict[str, tuple[set[str], list[str] | str, set[str]]] = {
    "AllowScopedEC2InstanceAccessActions": (
        {"ec2:RunInstances", "ec2:CreateFleet"},
        [
            f"{EC2}::image/*",
            f"{EC2}::snapshot/*",
            f"{EC2}:*:security-group/*",
            f"{EC2}:*:subnet/*",
            f"{EC2}:*:capacity-reservation/*",
            f"{EC2}:*:placement-group/*",
        ],
        set(),
    ),
    "AllowScopedEC2LaunchTemplateAccessActions": (
        {"ec2:RunInstances", "ec2:CreateFleet"},
        f"{EC2}:*:launch-template/*",
        {"StringEquals", "StringLike"},
    ),
    "AllowScopedEC2InstanceActionsWithTags": (
        {"ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"},
        LAUNCHED,
        {"StringEquals", "StringLike"},
    ),
    "AllowScopedResourceCreationTagging": ({"ec2:CreateTags"}, LAUNCHED, {"StringEquals", "StringLike"}),
    "AllowScopedResourceTagging": (
        {"ec2:CreateTags"},
        f"{EC2}:*:instance/*",
        {"StringEquals", "StringLike", "StringEqualsIfExists", "ForAllValues:StringEquals"},
    ),
    "AllowScopedDeletion": (
        {"ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"},
        [f"{EC2}:*:instance/*", f"{EC2}:*:launch-template/*"],
        {"StringEquals", "StringLike"},
    ),
    "AllowPassingInstanceRole": ({"iam:PassRole"}, "<node-role>", {"StringEquals"}),
    "AllowScopedInstanceProfileCreationActions": (
        {"iam:CreateInstanceProfile"},
        PROFILE,
        {"StringEquals", "StringLike"},
    ),
    "AllowScopedInstanceProfileTagActions": ({"iam:TagInstanceProfile"}, PROFILE, {"StringEquals", "StringLike"}),
    "AllowScopedInstanceProfileActions": (
        {"iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"},
        PROFILE,
        {"StringEquals", "StringLike"},
    ),
    "AllowAPIServerEndpointDiscovery": ({"eks:DescribeCluster"}, "arn:P:eks:R:A:cluster/C", set()),
    "AllowInterruptionQueueActions": ({"sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"}, "<queue>", set()),
    "AllowZonalShiftStatusReadOnly": ({"arc-zonal-shift:GetManagedResource"}, "*", {"StringEquals"}),
    "AllowRegionalReadActions": (
        {
            "ec2:DescribeCapacityReservations",
            "ec2:DescribeImages",
            "ec2:DescribeInstances",
            "ec2:DescribeInstanceStatus",
            "ec2:DescribeInstanceTypeOfferings",
            "ec2:DescribeInstanceTypes",
            "ec2:DescribeLaunchTemplates",
            "ec2:DescribePlacementGroups",
            "ec2:DescribeSecurityGroups",
            "ec2:DescribeSpotPriceHistory",
            "ec2:DescribeSubnets",
        },
        "*",
        {"StringEquals"},
    ),
    "AllowSSMReadActions": ({"ssm:GetParameter"}, "arn:P:ssm:R::parameter/aws/service/*", set()),
    "AllowPricingReadActions": ({"pricing:GetProducts"}, "*", set()),
    "AllowUnscopedInstanceProfileListAction": ({"iam:ListInstanceProfiles"}, "*", set()),
    "AllowInstanceProfileReadActions": ({"iam:GetInstanceProfile"}, PROFILE, set()),
}


def _ours() -> dict[str, dict]:
    policy = karpenter_controller_policy("P", "R", "A", "C", "<node-role>", "<queue>")
    return {statement["Sid"]: statement for statement in policy["Statement"]}


def test_same_statements_as_upstream() -> None:
    assert set(_ours()) == set(UPSTREAM)


def test_each_statement_grants_what_upstream_grants_on_the_same_resources() -> None:
    for sid, statement in _ours().items():
        actions, resources, operators = UPSTREAM[sid]
        assert set(statement["Action"]) == actions, sid
        assert statement["Resource"] == resources, sid
        assert set(statement.get("Condition", {})) == operators, sid
        assert statement["Effect"] == "Allow"
