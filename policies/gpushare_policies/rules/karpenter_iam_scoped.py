"""The Karpenter controller's IAM policy is scoped as upstream's reference scopes it: it passes only the node role,
and touches only instances, launch templates and instance profiles tagged for this cluster.

Reference: aws/karpenter-provider-aws website/content/en/v1.14/getting-started/getting-started-with-karpenter/
cloudformation.yaml (identical in `preview`, the docs 1.15 is cut from): AllowPassingInstanceRole (iam:PassRole
on the node role only, iam:PassedToService ec2.amazonaws.com), AllowScopedDeletion (TerminateInstances,
DeleteLaunchTemplate only where aws:ResourceTag/kubernetes.io/cluster/<cluster> is owned and
karpenter.sh/nodepool is set), AllowScopedResourceCreationTagging / AllowScopedResourceTagging (CreateTags only
while creating, with the cluster's request tags, or on the cluster's instances for a fixed list of tag keys),
the instance-profile statements (the cluster's tags and karpenter.k8s.aws/ec2nodeclass).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..aws import ROLE_POLICY, Statement, cluster_names, node_role_arns, statements
from ..rule import Finding, Rule, finding
from ..stack import Resource, StackView, sorted_by_name

# Actions only a node launcher needs: a policy granting one of them is judged as Karpenter's.
LAUNCHER_ACTIONS = ("ec2:RunInstances", "ec2:CreateFleet", "ec2:TerminateInstances", "iam:PassRole")
# Destructive or identity-changing actions -> the resource tag that must name what Karpenter created them for.
SCOPED_BY_RESOURCE_TAG = {
    "ec2:TerminateInstances": "karpenter.sh/nodepool",
    "ec2:DeleteLaunchTemplate": "karpenter.sh/nodepool",
    "iam:AddRoleToInstanceProfile": "karpenter.k8s.aws/ec2nodeclass",
    "iam:RemoveRoleFromInstanceProfile": "karpenter.k8s.aws/ec2nodeclass",
    "iam:DeleteInstanceProfile": "karpenter.k8s.aws/ec2nodeclass",
    "iam:TagInstanceProfile": "karpenter.k8s.aws/ec2nodeclass",
}
# Actions that create resources: they must carry the cluster's tag in the request.
SCOPED_BY_REQUEST_TAG = ("ec2:CreateLaunchTemplate", "iam:CreateInstanceProfile")
# RunInstances/CreateFleet resources that are created by the call (the rest: images, subnets... are only used).
CREATED = ("fleet/", "instance/", "volume/", "network-interface/", "spot-instances-request/")


def _cluster_tag(side: str, cluster: str) -> str:
    return f"aws:{side}Tag/kubernetes.io/cluster/{cluster}"


def _owned(statement: Statement, side: str, cluster: str) -> bool:
    return statement.condition_value(_cluster_tag(side, cluster)) == ["owned"]


def _statement_problems(statement: Statement, cluster: str, node_roles: set[str]) -> Iterator[tuple[str, str, str]]:
    """(value shown, problem, fix) for one Allow statement."""
    if statement.inverted:
        yield (
            ", ".join(statement.inverted),
            "an Allow with NotAction or NotResource grants everything it does not list",
            "list the actions and resources granted (Action, Resource)",
        )
    wild = [a for a in statement.actions if "*" in a or "?" in a]
    if wild:
        yield (
            ", ".join(wild),
            "a wildcard action grants every action it matches, also those AWS adds later, beyond what Karpenter calls",
            "list the actions of upstream's controller policy",
        )
    if statement.grants("iam:PassRole"):
        others = [r for r in statement.resources if r not in node_roles or "*" in r]
        if others:
            yield (
                ", ".join(others),
                "iam:PassRole on more than the node role lets Karpenter (or whoever takes its credentials) launch "
                "instances with any role it can name",
                f"limit the Resource to the node role ({', '.join(sorted(node_roles)) or 'its ARN'})",
            )
        if statement.condition_value("iam:PassedToService") != ["ec2.amazonaws.com"]:
            yield (
                str(statement.condition_value("iam:PassedToService") or "no condition"),
                "iam:PassRole must pass the node role to EC2 only",
                'add Condition StringEquals {"iam:PassedToService": "ec2.amazonaws.com"}',
            )
    for action, karpenter_tag in SCOPED_BY_RESOURCE_TAG.items():
        if statement.grants(action) and not (
            _owned(statement, "Resource", cluster) and statement.condition_value(f"aws:ResourceTag/{karpenter_tag}")
        ):
            yield (
                action,
                f"{action} is not limited to resources tagged kubernetes.io/cluster/{cluster}=owned and "
                f"{karpenter_tag}: Karpenter could delete or change what other clusters and people own",
                f'add Condition StringEquals {{"{_cluster_tag("Resource", cluster)}": "owned"}} and StringLike '
                f'{{"aws:ResourceTag/{karpenter_tag}": "*"}}',
            )
    for action in SCOPED_BY_REQUEST_TAG:
        if statement.grants(action) and not _owned(statement, "Request", cluster):
            yield (
                action,
                f"{action} does not require the request tag kubernetes.io/cluster/{cluster}=owned, so what it "
                "creates is not marked as this cluster's (and the scoped deletions cannot clean it up)",
                f'add Condition StringEquals {{"{_cluster_tag("Request", cluster)}": "owned"}}',
            )
    if statement.grants("ec2:CreateTags"):
        at_creation = bool(statement.condition_value("ec2:CreateAction")) and _owned(statement, "Request", cluster)
        fixed_keys = _owned(statement, "Resource", cluster) and bool(statement.condition_value("aws:TagKeys"))
        if not (at_creation or fixed_keys):
            yield (
                "ec2:CreateTags",
                "tagging is allowed on resources that are not this cluster's or with any tag key: Karpenter could "
                "retag any instance into its cluster and then terminate it",
                "allow CreateTags only with ec2:CreateAction and the cluster's request tags, or on instances tagged "
                f"kubernetes.io/cluster/{cluster}=owned with ForAllValues:StringEquals aws:TagKeys",
            )
    for action in ("ec2:RunInstances", "ec2:CreateFleet"):
        if not statement.grants(action):
            continue
        created = [r for r in statement.resources if r == "*" or any(kind in r for kind in CREATED)]
        if created and not _owned(statement, "Request", cluster):
            yield (
                ", ".join(created),
                f"{action} creates these without the request tag kubernetes.io/cluster/{cluster}=owned",
                f'add Condition StringEquals {{"{_cluster_tag("Request", cluster)}": "owned"}}',
            )
        templates = [r for r in statement.resources if "launch-template/" in r]
        if templates and not created and not _owned(statement, "Resource", cluster):
            yield (
                ", ".join(templates),
                f"{action} may use launch templates that are not this cluster's",
                f'add Condition StringEquals {{"{_cluster_tag("Resource", cluster)}": "owned"}}',
            )


def _is_launcher(policy: Resource) -> bool:
    return any(s.grants(a) for s in statements(policy) for a in LAUNCHER_ACTIONS)


def check_iam(view: StackView, _config: None) -> Iterator[Finding]:
    clusters = cluster_names(view)
    if len(clusters) != 1:
        return
    [cluster] = clusters
    node_roles = node_role_arns(view)
    for policy in sorted_by_name(p for p in view.of_type(ROLE_POLICY) if _is_launcher(p)):
        for statement in statements(policy):
            if statement.effect != "Allow":
                continue
            for value, problem, fix in _statement_problems(statement, cluster, node_roles):
                yield finding(policy, f"policy {statement.shown}", value, problem, fix)


RULE = Rule(
    name="karpenter-iam-scoped",
    order=35,
    description="The Karpenter controller's IAM policy passes only the node role, to EC2; deletes and changes only "
    "instances, launch templates and instance profiles tagged owned by this cluster; tags only while creating or "
    "for fixed keys; grants no wildcard action (upstream's CloudFormation reference).",
    why="Karpenter's credentials can launch and terminate instances: unscoped, they reach every instance and role "
    "in the account.",
    remediation="Keep gpushare's controller policy (gpushare/render/iam.py), which follows upstream's statements.",
    enforcement="mandatory",
    severity="critical",
    check=check_iam,
)
