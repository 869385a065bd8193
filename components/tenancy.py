"""Tenancy: the priority tiers, per team a namespace with GPU quota, defaults and admission policies, and optional
namespace-scoped API access."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_aws as aws

from components.kube import declare_all


@dataclass(frozen=True)
class TeamObjects:
    """One team as rendered: its namespace first, then what lives in it; `access_role_arn` (optional) gets
    `access_policy_arn` scoped to that namespace."""

    name: str
    objects: Sequence[dict[str, Any]]
    access_role_arn: str | None


@dataclass(frozen=True)
class TeamAccessArgs:
    """Access entries wait for `eks_cluster`; `access_policy_arn` is the EKS access policy (in the partition the
    program looked up) each team's role gets on its namespace."""

    eks_cluster: pulumi.Resource
    cluster_name: str
    tags: Mapping[str, str]
    access_policy_arn: pulumi.Output[str]


@dataclass(frozen=True)
class TenancyArgs:
    """The rendered PriorityClasses and teams; `access` for the cluster the stack creates (an existing cluster's
    access entries are its owner's: the config refuses team roles then)."""

    priority_classes: Sequence[dict[str, Any]]
    teams: Sequence[TeamObjects]
    provider: pulumi.ProviderResource
    access: TeamAccessArgs | None


class Tenancy(pulumi.ComponentResource):
    """Exposes each team's Namespace by team name, for what else lives in it."""

    namespaces: dict[str, pulumi.CustomResource]

    def __init__(self, name: str, args: TenancyArgs, opts: pulumi.ResourceOptions | None = None) -> None:
        super().__init__("gpushare:index:Tenancy", name, None, opts)
        provider, access = args.provider, args.access
        classes = declare_all(args.priority_classes, self, provider)
        self.namespaces = {}
        for team in args.teams:
            namespace, *owned = team.objects
            [self.namespaces[team.name]] = declare_all([namespace], self, provider)
            # The team's priority policy names a class: create the classes before anything can use them.
            declare_all(owned, self, provider, [self.namespaces[team.name], *classes])
            if team.access_role_arn is None or access is None:
                continue
            after_cluster = pulumi.ResourceOptions(parent=self, depends_on=[access.eks_cluster])
            entry = aws.eks.AccessEntry(
                f"{name}-team-{team.name}",
                cluster_name=access.cluster_name,
                principal_arn=team.access_role_arn,
                type="STANDARD",
                tags=access.tags,
                opts=after_cluster,
            )
            aws.eks.AccessPolicyAssociation(
                f"{name}-team-{team.name}",
                cluster_name=access.cluster_name,
                principal_arn=entry.principal_arn,
                policy_arn=access.access_policy_arn,
                access_scope=aws.eks.AccessPolicyAssociationAccessScopeArgs(type="namespace", namespaces=[team.name]),
                opts=after_cluster,
            )
        self.register_outputs({"teams": [team.name for team in args.teams]})
