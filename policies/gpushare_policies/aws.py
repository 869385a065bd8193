"""The AWS identities a stack creates, read from the plan: IAM policy statements and EKS access entries.

Policy documents arrive as JSON text (the Pulumi inputs) or as objects (a preview of hand-written resources);
both read to the same statements. Action and resource lists may be a single string, as IAM allows.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from .stack import UNKNOWN, Resource, StackView

ROLE_POLICY = "aws:iam/rolePolicy:RolePolicy"
QUEUE_POLICY = "aws:sqs/queuePolicy:QueuePolicy"
ACCESS_ENTRY = "aws:eks/accessEntry:AccessEntry"
ACCESS_POLICY_ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
# Access entry types EKS gives to node roles (the roles Karpenter passes to the instances it launches).
NODE_ENTRY_TYPES = ("EC2_LINUX", "EC2_WINDOWS", "EC2")
# EKS access policies (arn:<partition>:eks::aws:cluster-access-policy/<name>) by what they grant.
CLUSTER_ADMIN_POLICY = "AmazonEKSClusterAdminPolicy"
ADMIN_POLICY = "AmazonEKSAdminPolicy"
EDIT_POLICY = "AmazonEKSEditPolicy"


@dataclass(frozen=True)
class Statement:
    """One statement of a policy document; `index` is its place in the document, for messages."""

    index: int
    sid: str
    effect: str
    actions: tuple[str, ...]
    resources: tuple[str, ...]
    condition: dict[str, Any]
    principal: Any
    inverted: tuple[str, ...]  # NotAction, NotResource, NotPrincipal: present keys grant all but what they list

    @property
    def shown(self) -> str:
        return f"Statement[{self.index}]" + (f" ({self.sid})" if self.sid else "")

    def grants(self, action: str) -> bool:
        """An Allow whose actions cover `action`: IAM matches actions case-insensitively, `*` and `?` as globs."""
        return self.effect == "Allow" and any(fnmatchcase(action.lower(), a.lower()) for a in self.actions)

    def condition_value(self, key: str) -> list[str]:
        """Every value any operator of the condition block tests `key` against."""
        found: list[str] = []
        for operator in self.condition.values():
            if isinstance(operator, dict) and key in operator:
                value = operator[key]
                found += [str(v) for v in value] if isinstance(value, list) else [str(value)]
        return found


def _listed(value: Any) -> tuple[str, ...]:
    if isinstance(value, list):
        return tuple(str(v) for v in value)
    return () if value is None else (str(value),)


def document(resource: Resource, key: str = "policy") -> dict[str, Any] | None:
    """The policy document at `key`, None when it is unknown during preview or not a document."""
    value = resource.get(key)
    if value is UNKNOWN:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def statements(resource: Resource, key: str = "policy") -> list[Statement]:
    found = (document(resource, key) or {}).get("Statement")
    listed = found if isinstance(found, list) else [found] if isinstance(found, dict) else []
    return [
        Statement(
            index=index,
            sid=str(s.get("Sid") or ""),
            effect=str(s.get("Effect")),
            actions=_listed(s.get("Action")),
            resources=_listed(s.get("Resource")),
            condition=s.get("Condition") if isinstance(s.get("Condition"), dict) else {},
            principal=s.get("Principal"),
            inverted=tuple(key for key in ("NotAction", "NotResource", "NotPrincipal") if key in s),
        )
        for index, s in enumerate(listed)
        if isinstance(s, dict)
    ]


def policy_name(arn: Any) -> str:
    """`AmazonEKSEditPolicy` from an EKS access policy ARN."""
    return str(arn).rsplit("/", 1)[-1]


@dataclass(frozen=True)
class AccessEntry:
    """One principal's access entry: a resource of its own, or one of pulumi-eks's `accessEntries` inputs."""

    resource: Resource
    key: str  # where it is declared, for messages: `principalArn` or `accessEntries.admin-0.principalArn`
    cluster: str
    principal: str
    type: str


def access_entries(view: StackView) -> Iterator[AccessEntry]:
    for entry in view.of_type(ACCESS_ENTRY):
        principal = entry.get("principalArn")
        if isinstance(principal, str):
            cluster = str(entry.get("clusterName"))
            yield AccessEntry(entry, "principalArn", cluster, principal, str(entry.get("type") or "STANDARD"))
    for cluster in view.eks_clusters():
        declared = cluster.get("accessEntries")
        if not isinstance(declared, dict):
            continue
        for name, entry in sorted(declared.items()):
            principal = entry.get("principalArn") if isinstance(entry, dict) else None
            if isinstance(principal, str):
                cluster_name = str(cluster.get("name") or cluster.name)
                kind = str(entry.get("type") or "STANDARD")
                yield AccessEntry(cluster, f"accessEntries.{name}.principalArn", cluster_name, principal, kind)


def node_role_arns(view: StackView) -> set[str]:
    """Roles with a node access entry: the only roles a node launcher has reason to pass to EC2."""
    return {entry.principal for entry in access_entries(view) if entry.type in NODE_ENTRY_TYPES}


def cluster_names(view: StackView) -> set[str]:
    return {str(c.get("name") or c.name) for c in view.eks_clusters()}


ROLE = "aws:iam/role:Role"
POLICY = "aws:iam/policy:Policy"
ROLE_POLICY_ATTACHMENT = "aws:iam/rolePolicyAttachment:RolePolicyAttachment"
POLICY_ATTACHMENT = "aws:iam/policyAttachment:PolicyAttachment"
# AWS managed policies that are an administrator or can make themselves one (IAM User Guide, "AWS managed policies
# for job functions": AdministratorAccess and PowerUserAccess; IAMFullAccess grants iam:* on *, so its holder can
# attach AdministratorAccess to itself).
ADMIN_MANAGED_POLICIES = ("AdministratorAccess", "PowerUserAccess", "IAMFullAccess")
# Actions that hand their holder any permission when granted on every resource: writing or attaching policies,
# changing trust, passing or assuming any role (IAM User Guide, privilege escalation via iam:PassRole).
ESCALATING_ACTIONS = (
    "iam:AttachRolePolicy",
    "iam:AttachUserPolicy",
    "iam:PutRolePolicy",
    "iam:PutUserPolicy",
    "iam:CreatePolicyVersion",
    "iam:UpdateAssumeRolePolicy",
    "iam:CreateAccessKey",
    "iam:PassRole",
    "sts:AssumeRole",
)


def managed_policy_name(arn: Any) -> str | None:
    """`AdministratorAccess` for arn:<partition>:iam::aws:policy/[path/]AdministratorAccess; None for other ARNs."""
    text = str(arn)
    return text.rsplit("/", 1)[-1] if ":iam::aws:policy/" in text else None


def admin_equivalent(statement: Statement) -> str | None:
    """Why an Allow statement amounts to administrator access, or None."""
    if statement.effect != "Allow":
        return None
    if "NotAction" in statement.inverted:
        return "an Allow with NotAction grants every action it does not list"
    if any(action.strip() in ("*", "*:*") for action in statement.actions):
        return "Action * grants every action of every service"
    everywhere = "*" in statement.resources or "NotResource" in statement.inverted
    granted = [action for action in ESCALATING_ACTIONS if statement.grants(action)]
    if everywhere and granted:
        return (
            f"{', '.join(granted)} on every resource lets the holder give itself any permission (attach a policy, "
            "pass or assume an administrator role)"
        )
    return None


def open_trust(statement: Statement) -> bool:
    """An Allow of a trust policy whose principal is everyone, without a condition narrowing it."""
    principal = statement.principal
    everyone = principal == "*" or (isinstance(principal, dict) and "*" in _listed(principal.get("AWS")))
    return statement.effect == "Allow" and everyone and not statement.condition
