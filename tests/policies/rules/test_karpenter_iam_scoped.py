"""Changes that break `karpenter-iam-scoped`: each is caught, and every message says the fix."""

from __future__ import annotations

import json

import pytest

from tests.policies.rules.breaking import caught

SUBJECT = "aws:iam/rolePolicy:RolePolicy gpushare-dev-karpenter-controller: policy Statement"
OWNED = "aws:ResourceTag/kubernetes.io/cluster/gpushare-dev"


def edit(sid, change):
    """Change the controller policy's statement `sid` in place (the plan holds the document as JSON text)."""

    def apply(resources):
        [policy] = [r["inputs"] for r in resources if r["type"] == "aws:iam/rolePolicy:RolePolicy"]
        document = json.loads(policy["policy"])
        change(next(s for s in document["Statement"] if s["Sid"] == sid))
        policy["policy"] = json.dumps(document)

    return apply


def drop_condition(*keys):
    def change(statement):
        for operator in statement["Condition"].values():
            for key in keys:
                operator.pop(key, None)

    return change


def set_key(key, value):
    return lambda statement: statement.__setitem__(key, value)


def foreign_cluster(statement):
    statement["Condition"]["StringEquals"] = {"aws:ResourceTag/kubernetes.io/cluster/other": "owned"}


# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "PassRole on any role": (
        "karpenter-iam-scoped",
        edit("AllowPassingInstanceRole", set_key("Resource", "*")),
        [f'{SUBJECT}[10] (AllowPassingInstanceRole) is "*"', "limit the Resource to the node role"],
    ),
    "PassRole to any service": (
        "karpenter-iam-scoped",
        edit("AllowPassingInstanceRole", set_key("Condition", {})),
        ["iam:PassRole must pass the node role to EC2 only", "iam:PassedToService"],
    ),
    "terminate without the cluster tag": (
        "karpenter-iam-scoped",
        edit("AllowScopedDeletion", drop_condition(OWNED)),
        ['(AllowScopedDeletion) is "ec2:TerminateInstances"', "owned", "add Condition StringEquals"],
    ),
    "delete launch template of another cluster": (
        "karpenter-iam-scoped",
        edit("AllowScopedDeletion", foreign_cluster),
        ['is "ec2:DeleteLaunchTemplate"', "kubernetes.io/cluster/gpushare-dev=owned"],
    ),
    "terminate without the nodepool tag": (
        "karpenter-iam-scoped",
        edit("AllowScopedDeletion", set_key("Condition", {"StringEquals": {OWNED: "owned"}})),
        ["karpenter.sh/nodepool", '"aws:ResourceTag/karpenter.sh/nodepool": "*"'],
    ),
    "instance profile deletion unscoped": (
        "karpenter-iam-scoped",
        edit("AllowScopedInstanceProfileActions", set_key("Condition", {})),
        ['is "iam:DeleteInstanceProfile"', "karpenter.k8s.aws/ec2nodeclass"],
    ),
    "instance profile creation untagged": (
        "karpenter-iam-scoped",
        edit("AllowScopedInstanceProfileCreationActions", set_key("Condition", {})),
        ['is "iam:CreateInstanceProfile"', "does not require the request tag"],
    ),
    "tags on any instance with any key": (
        "karpenter-iam-scoped",
        edit("AllowScopedResourceTagging", drop_condition("aws:TagKeys")),
        ['(AllowScopedResourceTagging) is "ec2:CreateTags"', "retag any instance"],
    ),
    "tags at creation without the create action": (
        "karpenter-iam-scoped",
        edit("AllowScopedResourceCreationTagging", drop_condition("ec2:CreateAction")),
        ['(AllowScopedResourceCreationTagging) is "ec2:CreateTags"'],
    ),
    "instances launched untagged": (
        "karpenter-iam-scoped",
        edit("AllowScopedEC2InstanceActionsWithTags", set_key("Condition", {})),
        ["ec2:RunInstances creates these without the request tag", "instance/*"],
    ),
    "launch templates of anyone": (
        "karpenter-iam-scoped",
        edit("AllowScopedEC2LaunchTemplateAccessActions", set_key("Condition", {})),
        ["may use launch templates that are not this cluster's"],
    ),
    "partial wildcard reaches a destructive action": (
        "karpenter-iam-scoped",
        edit("AllowRegionalReadActions", set_key("Action", ["ec2:Describe*", "ec2:Terminate*"])),
        ['(AllowRegionalReadActions) is "ec2:TerminateInstances"', "is not limited to resources tagged"],
    ),
    "NotAction grants the rest": (
        "karpenter-iam-scoped",
        edit("AllowPricingReadActions", lambda s: s.__setitem__("NotAction", s.pop("Action"))),
        ['(AllowPricingReadActions) is "NotAction"', "grants everything it does not list"],
    ),
    "wildcard action": (
        "karpenter-iam-scoped",
        edit("AllowRegionalReadActions", set_key("Action", "ec2:*")),
        ['(AllowRegionalReadActions) is "ec2:*"', "wildcard action"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
