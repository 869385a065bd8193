"""IAM and SQS documents for Karpenter, scoped to one cluster (getting-started CloudFormation v1.14,
terraform-aws-eks modules/karpenter)."""

from __future__ import annotations

from typing import Any

# Managed policies: system nodes need no SSM access; Karpenter's GPU nodes get it for debugging.
# AWS managed policy for the EBS CSI driver's controller (under the service-role/ path).
EBS_CSI_DRIVER_POLICY = "service-role/AmazonEBSCSIDriverPolicy"
SYSTEM_NODE_POLICIES = ("AmazonEKSWorkerNodePolicy", "AmazonEKS_CNI_Policy", "AmazonEC2ContainerRegistryPullOnly")
NODE_ROLE_POLICIES = (
    "AmazonEKSWorkerNodePolicy",
    "AmazonEKS_CNI_Policy",
    "AmazonEC2ContainerRegistryPullOnly",
    "AmazonSSMManagedInstanceCore",
)

# EventBridge rules feeding the interruption queue: name -> event pattern.
INTERRUPTION_EVENTS: dict[str, dict[str, Any]] = {
    "health": {"source": ["aws.health"], "detail-type": ["AWS Health Event"]},
    "spot-interruption": {"source": ["aws.ec2"], "detail-type": ["EC2 Spot Instance Interruption Warning"]},
    "rebalance": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance Rebalance Recommendation"]},
    "state-change": {"source": ["aws.ec2"], "detail-type": ["EC2 Instance State-change Notification"]},
    "capacity-reservation": {
        "source": ["aws.ec2"],
        "detail-type": ["EC2 Capacity Reservation Instance Interruption Warning"],
    },
}


def managed_policy_arn(partition: str, name: str) -> str:
    """An AWS managed IAM policy in `partition` (aws, aws-cn, aws-us-gov)."""
    return f"arn:{partition}:iam::aws:policy/{name}"


# The managed EKS access policy that grants edit rights; the tenancy component scopes it to a team's namespace.
TEAM_ACCESS_POLICY = "AmazonEKSEditPolicy"


def eks_access_policy_arn(partition: str, name: str) -> str:
    """An EKS access policy (AmazonEKSClusterAdminPolicy, AmazonEKSEditPolicy, ...) in `partition`."""
    return f"arn:{partition}:eks::aws:cluster-access-policy/{name}"


def _statement(sid: str, actions: list[str], resources: list[str] | str, **condition: Any) -> dict[str, Any]:
    statement: dict[str, Any] = {"Sid": sid, "Effect": "Allow", "Action": actions, "Resource": resources}
    if condition:
        statement["Condition"] = condition
    return statement


def karpenter_controller_policy(
    partition: str, region: str, account_id: str, cluster_name: str, node_role_arn: str, queue_arn: str
) -> dict[str, Any]:
    """The controller policy of Karpenter's getting-started CloudFormation, statement by statement.

    Source: aws/karpenter-provider-aws@1d927085dd81 website/content/en/docs/getting-started/
    getting-started-with-karpenter/cloudformation.yaml (its docs pin KARPENTER_VERSION 1.14.1; no 1.15
    docs were readable here). tests/gpushare/render/test_iam.py holds that statement list as data and compares.
    """
    ec2 = f"arn:{partition}:ec2:{region}"
    owned = {f"aws:ResourceTag/kubernetes.io/cluster/{cluster_name}": "owned"}
    request_owned = {
        f"aws:RequestTag/kubernetes.io/cluster/{cluster_name}": "owned",
        "aws:RequestTag/eks:eks-cluster-name": cluster_name,
    }
    launched = [
        f"{ec2}:*:{kind}/*"
        for kind in ("fleet", "instance", "volume", "network-interface", "launch-template", "spot-instances-request")
    ]
    profile = f"arn:{partition}:iam::{account_id}:instance-profile/*"
    cluster_arn = f"arn:{partition}:eks:{region}:{account_id}:cluster/{cluster_name}"
    return {
        "Version": "2012-10-17",
        "Statement": [
            _statement(
                "AllowScopedEC2InstanceAccessActions",
                ["ec2:RunInstances", "ec2:CreateFleet"],
                [
                    f"{ec2}::image/*",
                    f"{ec2}::snapshot/*",
                    f"{ec2}:*:security-group/*",
                    f"{ec2}:*:subnet/*",
                    f"{ec2}:*:capacity-reservation/*",
                    f"{ec2}:*:placement-group/*",
                ],
            ),
            _statement(
                "AllowScopedEC2LaunchTemplateAccessActions",
                ["ec2:RunInstances", "ec2:CreateFleet"],
                f"{ec2}:*:launch-template/*",
                StringEquals=owned,
                StringLike={"aws:ResourceTag/karpenter.sh/nodepool": "*"},
            ),
            _statement(
                "AllowScopedEC2InstanceActionsWithTags",
                ["ec2:RunInstances", "ec2:CreateFleet", "ec2:CreateLaunchTemplate"],
                launched,
                StringEquals=request_owned,
                StringLike={"aws:RequestTag/karpenter.sh/nodepool": "*"},
            ),
            _statement(
                "AllowScopedResourceCreationTagging",
                ["ec2:CreateTags"],
                launched,
                StringEquals={
                    **request_owned,
                    "ec2:CreateAction": ["RunInstances", "CreateFleet", "CreateLaunchTemplate"],
                },
                StringLike={"aws:RequestTag/karpenter.sh/nodepool": "*"},
            ),
            _statement(
                "AllowScopedResourceTagging",
                ["ec2:CreateTags"],
                f"{ec2}:*:instance/*",
                StringEquals=owned,
                StringLike={"aws:ResourceTag/karpenter.sh/nodepool": "*"},
                **{
                    "StringEqualsIfExists": {"aws:RequestTag/eks:eks-cluster-name": cluster_name},
                    "ForAllValues:StringEquals": {
                        "aws:TagKeys": ["eks:eks-cluster-name", "karpenter.sh/nodeclaim", "Name"]
                    },
                },
            ),
            _statement(
                "AllowScopedDeletion",
                ["ec2:TerminateInstances", "ec2:DeleteLaunchTemplate"],
                [f"{ec2}:*:instance/*", f"{ec2}:*:launch-template/*"],
                StringEquals=owned,
                StringLike={"aws:ResourceTag/karpenter.sh/nodepool": "*"},
            ),
            _statement(
                "AllowRegionalReadActions",
                [
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
                ],
                "*",
                StringEquals={"aws:RequestedRegion": region},
            ),
            _statement(
                "AllowSSMReadActions", ["ssm:GetParameter"], f"arn:{partition}:ssm:{region}::parameter/aws/service/*"
            ),
            _statement("AllowPricingReadActions", ["pricing:GetProducts"], "*"),
            _statement(
                "AllowInterruptionQueueActions",
                ["sqs:DeleteMessage", "sqs:GetQueueUrl", "sqs:ReceiveMessage"],
                queue_arn,
            ),
            _statement(
                "AllowPassingInstanceRole",
                ["iam:PassRole"],
                node_role_arn,
                StringEquals={"iam:PassedToService": ["ec2.amazonaws.com"]},
            ),
            _statement(
                "AllowScopedInstanceProfileCreationActions",
                ["iam:CreateInstanceProfile"],
                profile,
                StringEquals={**request_owned, "aws:RequestTag/topology.kubernetes.io/region": region},
                StringLike={"aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            ),
            _statement(
                "AllowScopedInstanceProfileTagActions",
                ["iam:TagInstanceProfile"],
                profile,
                StringEquals={
                    **owned,
                    "aws:ResourceTag/topology.kubernetes.io/region": region,
                    **request_owned,
                    "aws:RequestTag/topology.kubernetes.io/region": region,
                },
                StringLike={
                    "aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*",
                    "aws:RequestTag/karpenter.k8s.aws/ec2nodeclass": "*",
                },
            ),
            _statement(
                "AllowScopedInstanceProfileActions",
                ["iam:AddRoleToInstanceProfile", "iam:RemoveRoleFromInstanceProfile", "iam:DeleteInstanceProfile"],
                profile,
                StringEquals={**owned, "aws:ResourceTag/topology.kubernetes.io/region": region},
                StringLike={"aws:ResourceTag/karpenter.k8s.aws/ec2nodeclass": "*"},
            ),
            # The EC2NodeClass finalizer lists instance profiles; scoped to a path it fails and destroy hangs.
            _statement("AllowUnscopedInstanceProfileListAction", ["iam:ListInstanceProfiles"], "*"),
            _statement("AllowInstanceProfileReadActions", ["iam:GetInstanceProfile"], profile),
            _statement(
                "AllowAPIServerEndpointDiscovery",
                ["eks:DescribeCluster"],
                cluster_arn,
            ),
            _statement(
                "AllowZonalShiftStatusReadOnly",
                ["arc-zonal-shift:GetManagedResource"],
                "*",
                StringEquals={"arc-zonal-shift:ResourceIdentifier": cluster_arn},
            ),
        ],
    }


def interruption_queue_policy(queue_arn: str) -> dict[str, Any]:
    """EventBridge and SQS may send; nobody may use the queue without TLS."""
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "EventBridgeWrite",
                "Effect": "Allow",
                "Principal": {"Service": ["events.amazonaws.com", "sqs.amazonaws.com"]},
                "Action": "sqs:SendMessage",
                "Resource": queue_arn,
            },
            {
                "Sid": "DenyHTTP",
                "Effect": "Deny",
                "Principal": "*",
                "Action": "sqs:*",
                "Resource": queue_arn,
                "Condition": {"Bool": {"aws:SecureTransport": "false"}},
            },
        ],
    }


def service_trust_policy(service: str, actions: tuple[str, ...] = ("sts:AssumeRole",)) -> dict[str, Any]:
    """A role only `service` may assume: ec2.amazonaws.com for nodes, pods.eks.amazonaws.com for Pod Identity
    (which also needs sts:TagSession)."""
    return {
        "Version": "2012-10-17",
        "Statement": [{"Effect": "Allow", "Principal": {"Service": service}, "Action": list(actions)}],
    }


# What EKS Pod Identity assumes for a pod's service account (it also tags the session).
POD_IDENTITY_TRUST_POLICY: dict[str, Any] = service_trust_policy(
    "pods.eks.amazonaws.com", ("sts:AssumeRole", "sts:TagSession")
)
