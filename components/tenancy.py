"""Tenancy: the priority tiers, per team a namespace with GPU quota, defaults and admission policies, and optional
namespace-scoped API access."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_aws as aws

from components.kube import declare_all
from gpushare.config import StackConfig
from gpushare.render import iam
from gpushare.render.tenancy import priority_classes, team_objects

# The managed EKS access policy that grants edit rights, scoped below to the team's namespace only.
TEAM_ACCESS_POLICY = "AmazonEKSEditPolicy"


@dataclass(frozen=True)
class TenancyArgs:
    """The whole config: team objects are rendered from teams, pools and the catalog together. Access entries
    wait for `eks_cluster`; `partition` is the one the program looked up."""

    config: StackConfig
    provider: pulumi.ProviderResource
    eks_cluster: pulumi.Resource
    partition: pulumi.Output[str]


class Tenancy(pulumi.ComponentResource):
    def __init__(self, name: str, args: TenancyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:Tenancy", name, None, opts)
        config, provider = args.config, args.provider
        cluster = config.cluster
        after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[args.eks_cluster])
        classes = declare_all(priority_classes(), self, provider)
        for team in config.teams:
            namespace, *owned = team_objects(config, team)
            # The team's priority policy names a class: create the classes before anything can use them.
            declare_all(owned, self, provider, [*declare_all([namespace], self, provider), *classes])
            if team.namespace_access_role_arn is None:
                continue
            entry = aws.eks.AccessEntry(
                f"{name}-team-{team.name}",
                cluster_name=cluster.name,
                principal_arn=team.namespace_access_role_arn,
                type="STANDARD",
                tags=cluster.tags,
                opts=after_cluster,
            )
            aws.eks.AccessPolicyAssociation(
                f"{name}-team-{team.name}",
                cluster_name=cluster.name,
                principal_arn=entry.principal_arn,
                policy_arn=args.partition.apply(lambda p: iam.eks_access_policy_arn(p, TEAM_ACCESS_POLICY)),
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="namespace", namespaces=[team.name]),
                opts=after_cluster,
            )
        self.register_outputs({"teams": [team.name for team in config.teams]})
