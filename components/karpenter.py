"""Karpenter: node and controller IAM, the interruption queue and its rules, both Helm releases and the
GPU EC2NodeClass."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.cluster import Cluster
from components.kube import declare_all, helm_release
from gpushare import names
from gpushare.aws_names import (
    controller_role_name,
    interruption_queue_name,
    interruption_rule_name,
    node_role_name,
)
from gpushare.render import iam
from gpushare.render.releases import HelmRelease


@dataclass(frozen=True)
class KarpenterArgs:
    """`cluster_name` and `region` scope the IAM policy and name the AWS resources; `node_class` is the
    rendered EC2NodeClass; `partition` and `account_id` are the ones the program looked up."""

    cluster: Cluster
    cluster_name: str
    region: str
    tags: dict[str, str]
    crd_release: HelmRelease
    controller_release: HelmRelease
    node_class: dict[str, Any]
    partition: pulumi.Output[str]
    account_id: pulumi.Output[str]


class Karpenter(pulumi.ComponentResource):
    """Exposes the releases and node class every NodePool and NodeOverlay must depend on."""

    releases: list[k8s.helm.v3.Release]
    node_class: pulumi.CustomResource
    node_role: aws.iam.Role
    controller_role: aws.iam.Role
    queue: aws.sqs.Queue

    def __init__(self, name: str, args: KarpenterArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:Karpenter", name, None, opts)
        cluster, cluster_name, tags, partition = args.cluster, args.cluster_name, args.tags, args.partition
        child = pulumi.ResourceOptions(parent=self)
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[cluster.eks_cluster])

        self.node_role = aws.iam.Role(
            f"{name}-node",
            name=node_role_name(cluster_name),
            assume_role_policy=json.dumps(iam.service_trust_policy("ec2.amazonaws.com")),
            tags=tags,
            opts=child,
        )
        node_policies = [
            aws.iam.RolePolicyAttachment(
                f"{name}-node-{policy}",
                role=self.node_role.name,
                policy_arn=partition.apply(lambda p, policy=policy: iam.managed_policy_arn(p, policy)),
                opts=child,
            )
            for policy in iam.NODE_ROLE_POLICIES
        ]
        node_access = aws.eks.AccessEntry(
            f"{name}-node",
            cluster_name=cluster_name,
            principal_arn=self.node_role.arn,
            type="EC2_LINUX",
            tags=tags,
            opts=after_cluster,
        )

        self.queue = aws.sqs.Queue(
            name,
            name=interruption_queue_name(cluster_name),
            message_retention_seconds=300,
            sqs_managed_sse_enabled=True,
            tags=tags,
            opts=child,
        )
        queue_policy = aws.sqs.QueuePolicy(
            name,
            queue_url=self.queue.url,
            policy=self.queue.arn.apply(lambda arn: json.dumps(iam.interruption_queue_policy(arn))),
            opts=child,
        )
        rules = []
        for event, pattern in iam.INTERRUPTION_EVENTS.items():
            rule = aws.cloudwatch.EventRule(
                f"{name}-{event}",
                name=interruption_rule_name(cluster_name, event),
                event_pattern=json.dumps(pattern),
                tags=tags,
                opts=child,
            )
            rules.append(
                aws.cloudwatch.EventTarget(
                    f"{name}-{event}",
                    rule=rule.name,
                    arn=self.queue.arn,
                    opts=pulumi.ResourceOptions(parent=self, depends_on=[queue_policy]),
                )
            )

        policy_document = pulumi.Output.all(partition, args.account_id, self.node_role.arn, self.queue.arn).apply(
            lambda parts: json.dumps(
                iam.karpenter_controller_policy(parts[0], args.region, parts[1], cluster_name, parts[2], parts[3])
            )
        )
        self.controller_role = aws.iam.Role(
            f"{name}-controller",
            name=controller_role_name(cluster_name),
            assume_role_policy=json.dumps(iam.POD_IDENTITY_TRUST_POLICY),
            tags=tags,
            opts=child,
        )
        controller_policy = aws.iam.RolePolicy(
            f"{name}-controller", role=self.controller_role.id, policy=policy_document, opts=child
        )
        pod_identity = aws.eks.PodIdentityAssociation(
            name,
            cluster_name=cluster_name,
            namespace=names.KARPENTER_NAMESPACE,
            service_account=names.KARPENTER_SERVICE_ACCOUNT,
            role_arn=self.controller_role.arn,
            tags=tags,
            opts=pulumi.ResourceOptions(parent=self, depends_on=[cluster.pod_identity_agent]),
        )

        crd = helm_release(args.crd_release, self, cluster.provider, [cluster.system_nodes])
        controller = helm_release(
            args.controller_release,
            self,
            cluster.provider,
            [crd, cluster.system_nodes, controller_policy, pod_identity, node_access, *node_policies, *rules],
        )
        self.releases = [crd, controller]
        [self.node_class] = declare_all([args.node_class], self, cluster.provider, [*self.releases, node_access])
        self.register_outputs(
            {
                "queueName": self.queue.name,
                "nodeRoleArn": self.node_role.arn,
                "controllerRoleArn": self.controller_role.arn,
            }
        )
