"""EKS access entries give each principal one entry, cluster-wide rights only to the stack's admins, and teams
edit rights inside their own namespaces only.

EKS access policies (docs.aws.amazon.com/eks/latest/userguide/access-policy-permissions.html):
AmazonEKSClusterAdminPolicy is cluster-admin (inside a namespace: every verb there, the namespace's
ResourceQuota and LimitRange included); AmazonEKSAdminPolicy is Kubernetes' `admin` role (writes Roles and
RoleBindings); AmazonEKSEditPolicy is `edit`. CreateAccessEntry refuses a principal that already has an entry
in the cluster (ResourceInUseException), so a second entry is a failed `pulumi up`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from gpushare import names

from ..aws import (
    ACCESS_ENTRY,
    ACCESS_POLICY_ASSOCIATION,
    ADMIN_POLICY,
    CLUSTER_ADMIN_POLICY,
    EDIT_POLICY,
    AccessEntry,
    access_entries,
    policy_name,
)
from ..rule import Finding, Rule, finding
from ..stack import NAMESPACE, UNKNOWN, Resource, StackView, sorted_by_name

WRITERS = (CLUSTER_ADMIN_POLICY, ADMIN_POLICY, EDIT_POLICY)
# Kubernetes' superuser group: kube-apiserver authorizes its members before any authorizer runs (kubernetes
# pkg/kubeapiserver/authorizer/config.go, authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)).
SYSTEM_MASTERS = "system:masters"


def _team_namespaces(view: StackView) -> set[str]:
    return {
        ns.object_name for ns in view.of_type(NAMESPACE) if names.TEAM_LABEL in (ns.get("metadata", "labels") or {})
    }


def _association_problems(
    resource: Resource, key: str, policy_arn: Any, scope: Any, teams: set[str], admin_grant: bool
) -> Iterator[Finding]:
    """Findings for one association at `key` (`accessScope`, or under the cluster's accessEntries)."""
    if policy_arn is UNKNOWN or not isinstance(scope, dict):
        return
    policy = policy_name(policy_arn)
    if scope.get("type") == "cluster":
        if policy in WRITERS and not (admin_grant and policy == CLUSTER_ADMIN_POLICY):
            yield finding(
                resource,
                f"{key}.type",
                "cluster",
                f"{policy} at cluster scope writes in kube-system and in every team's namespace",
                "scope a team's association to its own namespace (type namespace, namespaces [<team>]); list "
                "cluster admins in cluster.adminPrincipalArns instead",
            )
        return
    if policy in (CLUSTER_ADMIN_POLICY, ADMIN_POLICY):
        what = (
            "every verb in the namespace: the team can delete its own ResourceQuota and LimitRange"
            if policy == CLUSTER_ADMIN_POLICY
            else "Kubernetes' admin role: the team can write Roles and RoleBindings and hand its rights to anyone"
        )
        yield finding(
            resource,
            "policyArn",
            policy_arn,
            f"{policy} inside a namespace grants {what}",
            f"associate {EDIT_POLICY} for a team (gpushare's team access)",
        )
    for index, namespace in enumerate(scope.get("namespaces") or []):
        if namespace is not UNKNOWN and namespace not in teams and policy in WRITERS:
            yield finding(
                resource,
                f"{key}.namespaces[{index}]",
                namespace,
                f"{policy} there reaches a namespace that is not a gpushare team namespace "
                f"({', '.join(sorted(teams)) or 'none in this stack'})",
                "list only the team's own namespace",
            )


def _duplicates(entries: list[AccessEntry]) -> Iterator[Finding]:
    by_principal: dict[tuple[str, str], list[AccessEntry]] = defaultdict(list)
    for entry in entries:
        by_principal[(entry.cluster, entry.principal)].append(entry)
    for (cluster, principal), found in sorted(by_principal.items()):
        for extra in found[1:]:
            first = found[0]
            yield finding(
                extra.resource,
                extra.key,
                principal,
                f"cluster {cluster} already has an access entry for this principal ({first.resource.label}, "
                f"{first.key}): EKS refuses a second entry, so `pulumi up` fails",
                "give the principal one access entry: drop it from teams[].namespaceAccessRoleArn or from "
                "cluster.adminPrincipalArns",
            )


def _groups(view: StackView) -> Iterator[tuple[Resource, str, Any]]:
    """(resource, key, kubernetesGroups) of every access entry: its own resource, or pulumi-eks's inputs."""
    for entry in sorted_by_name(view.of_type(ACCESS_ENTRY)):
        yield entry, "kubernetesGroups", entry.get("kubernetesGroups")
    for cluster in sorted_by_name(view.eks_clusters()):
        declared = cluster.get("accessEntries")
        for name, entry in sorted(declared.items()) if isinstance(declared, dict) else ():
            if isinstance(entry, dict):
                yield cluster, f"accessEntries.{name}.kubernetesGroups", entry.get("kubernetesGroups")


def _masters(view: StackView) -> Iterator[Finding]:
    for resource, key, groups in _groups(view):
        for index, group in enumerate(groups if isinstance(groups, list) else []):
            if group == SYSTEM_MASTERS:
                yield finding(
                    resource,
                    f"{key}[{index}]",
                    group,
                    "system:masters is cluster-admin hard-coded in the API server: no RBAC binding grants it and none "
                    "can take it away",
                    "map the principal to an access policy (AmazonEKSEditPolicy scoped to a namespace for a team, "
                    "cluster.adminPrincipalArns for an admin) or to a group bound by a Role",
                )


def check_access(view: StackView, _config: None) -> Iterator[Finding]:
    yield from _masters(view)
    teams = _team_namespaces(view)
    for association in sorted_by_name(view.of_type(ACCESS_POLICY_ASSOCIATION)):
        # pulumi-eks's own children (a real preview) carry cluster.adminPrincipalArns' grants.
        admin_grant = "eks:index:Cluster$" in association.urn
        yield from _association_problems(
            association,
            "accessScope",
            association.get("policyArn"),
            association.get("accessScope"),
            teams,
            admin_grant,
        )
    for cluster in sorted_by_name(view.eks_clusters()):
        declared = cluster.get("accessEntries")
        for entry_name, entry in sorted(declared.items()) if isinstance(declared, dict) else ():
            policies = entry.get("accessPolicies") if isinstance(entry, dict) else None
            for policy_key, association in sorted(policies.items()) if isinstance(policies, dict) else ():
                if isinstance(association, dict):
                    yield from _association_problems(
                        cluster,
                        f"accessEntries.{entry_name}.accessPolicies.{policy_key}.accessScope",
                        association.get("policyArn"),
                        association.get("accessScope"),
                        teams,
                        admin_grant=True,
                    )
    yield from _duplicates(list(access_entries(view)))


RULE = Rule(
    name="eks-access-least-privilege",
    order=34,
    description=f"Each principal has one access entry per cluster; {EDIT_POLICY}, {ADMIN_POLICY} or "
    f"{CLUSTER_ADMIN_POLICY} at cluster scope only as the admins' {CLUSTER_ADMIN_POLICY}; inside a namespace "
    f"neither {CLUSTER_ADMIN_POLICY} nor {ADMIN_POLICY}, and write policies only on team namespaces; no access entry "
    f"maps its principal to {SYSTEM_MASTERS}.",
    why="A team with cluster scope or admin rights in its namespace can delete its own quota or reach other teams; "
    "system:masters is an irrevocable cluster-admin; a second access entry for one principal makes `pulumi up` fail.",
    remediation=f"Give teams {EDIT_POLICY} scoped to their own namespace (teams[].namespaceAccessRoleArn) and "
    "admins cluster.adminPrincipalArns, one entry per principal.",
    enforcement="mandatory",
    severity="high",
    check=check_access,
)
