"""No IAM role the stack creates holds administrator access, by a managed policy or by a statement that amounts to
it, and no role may be assumed by everyone.

Every principal the stack creates is judged: the system and GPU node roles, Karpenter's controller, the EBS CSI
driver, and any role or policy added later. Grants are read where pulumi-aws declares them: RolePolicyAttachment
and PolicyAttachment `policyArn`, a Role's `managedPolicyArns`, `inlinePolicies` and `assumeRolePolicy`, and the
documents of RolePolicy and Policy.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..aws import (
    ADMIN_MANAGED_POLICIES,
    POLICY,
    POLICY_ATTACHMENT,
    ROLE,
    ROLE_POLICY,
    ROLE_POLICY_ATTACHMENT,
    Statement,
    admin_equivalent,
    managed_policy_name,
    open_trust,
    statements,
)
from ..rule import Finding, Rule, finding
from ..stack import UNKNOWN, Resource, StackView, sorted_by_name

FIX_STATEMENT = "grant the actions the principal calls on the resources it needs (gpushare's roles list them)"


def _documents(view: StackView) -> Iterator[tuple[Resource, str, list[Statement]]]:
    """(resource, key of the document, its statements) for every permissions document the stack declares."""
    for resource in sorted_by_name([*view.of_type(ROLE_POLICY), *view.of_type(POLICY)]):
        yield resource, "policy", statements(resource)
    for role in sorted_by_name(view.of_type(ROLE)):
        inline = role.get("inlinePolicies")
        for index, policy in enumerate(inline if isinstance(inline, list) else []):
            if isinstance(policy, dict):
                holder = Resource(role.urn, role.type, role.name, policy)
                yield role, f"inlinePolicies[{index}].policy", statements(holder)


def _managed(view: StackView) -> Iterator[tuple[Resource, str, object]]:
    """(resource, key, policy ARN) of every managed policy attached to a principal of the stack."""
    for attachment in sorted_by_name([*view.of_type(ROLE_POLICY_ATTACHMENT), *view.of_type(POLICY_ATTACHMENT)]):
        yield attachment, "policyArn", attachment.get("policyArn")
    for role in sorted_by_name(view.of_type(ROLE)):
        arns = role.get("managedPolicyArns")
        for index, arn in enumerate(arns if isinstance(arns, list) else []):
            yield role, f"managedPolicyArns[{index}]", arn


def check_iam(view: StackView, _config: None) -> Iterator[Finding]:
    for resource, key, arn in _managed(view):
        if arn is UNKNOWN:
            continue
        name = managed_policy_name(arn)
        if name in ADMIN_MANAGED_POLICIES:
            yield finding(
                resource,
                key,
                arn,
                f"{name} makes the role an administrator of the account (or able to make itself one): whoever gets "
                "the role's credentials (a pod on a node, the controller's service account) owns the account",
                "attach only the policies the principal needs (gpushare/render/iam.py lists each role's)",
            )
    for resource, key, found in _documents(view):
        for statement in found:
            reason = admin_equivalent(statement)
            if reason is not None:
                yield finding(
                    resource,
                    f"{key} {statement.shown}",
                    ", ".join(statement.actions) or ", ".join(statement.inverted),
                    f"{reason}: the statement amounts to administrator access",
                    FIX_STATEMENT,
                )
    for role in sorted_by_name(view.of_type(ROLE)):
        for statement in statements(role, "assumeRolePolicy"):
            if open_trust(statement):
                yield finding(
                    role,
                    f"assumeRolePolicy {statement.shown}.Principal",
                    statement.principal,
                    "every AWS principal of every account may assume the role: its permissions are everyone's",
                    "trust only the service that uses the role (ec2.amazonaws.com for nodes, pods.eks.amazonaws.com "
                    "for Pod Identity)",
                )


RULE = Rule(
    name="iam-least-privilege",
    order=73,
    description="No IAM role or policy of the stack (node roles, Karpenter, the EBS CSI driver, any other) holds "
    "AdministratorAccess, PowerUserAccess or IAMFullAccess, or a statement amounting to them (Action *, NotAction, "
    "iam:*/iam:PassRole/sts:AssumeRole or policy-writing actions on Resource *), and no trust policy admits every "
    "principal.",
    why="Nodes run every team's pods and controllers run third-party code: an administrator grant on any of their "
    "roles hands the whole AWS account to whoever reaches those credentials.",
    remediation="Keep the roles gpushare renders: each lists the managed policies and statements its principal "
    "uses (gpushare/render/iam.py).",
    enforcement="mandatory",
    severity="critical",
    check=check_iam,
)
