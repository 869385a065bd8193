"""Changes that break `iam-least-privilege`: each is caught on every kind of role the stack creates, and every
message says the fix."""

from __future__ import annotations

import json

import pytest

from tests.policies.helpers import messages
from tests.policies.rules.breaking import caught, set_at

POLICY = "iam-least-privilege"
MANAGED = "arn:aws:iam::aws:policy/"


def _of(r, kind, name):
    return next(x["inputs"] for x in r if x["type"] == kind and x["name"] == name)


def attachment(r, name):
    return _of(r, "aws:iam/rolePolicyAttachment:RolePolicyAttachment", name)


def role(r, name):
    return _of(r, "aws:iam/role:Role", name)


def controller_policy(r):
    return _of(r, "aws:iam/rolePolicy:RolePolicy", "gpushare-prod-karpenter-controller")


def _add_statement(r, statement):
    inputs = controller_policy(r)
    document = json.loads(inputs["policy"])
    document["Statement"].append(statement)
    inputs["policy"] = json.dumps(document)


def _allow(action, resource="*"):
    return {"Sid": "Added", "Effect": "Allow", "Action": action, "Resource": resource}


def _trust_everyone(r, name):
    inputs = role(r, name)
    document = json.loads(inputs["assumeRolePolicy"])
    document["Statement"][0]["Principal"] = {"AWS": "*"}
    inputs["assumeRolePolicy"] = json.dumps(document)


# (policy, change, every fragment one message must contain), on the prod plan
CASES = {
    "AdministratorAccess on the GPU node role": (
        POLICY,
        lambda r: set_at(
            attachment(r, "gpushare-prod-karpenter-node-AmazonSSMManagedInstanceCore"),
            ["policyArn"],
            MANAGED + "AdministratorAccess",
        ),
        [
            "RolePolicyAttachment gpushare-prod-karpenter-node-AmazonSSMManagedInstanceCore: policyArn is "
            '"arn:aws:iam::aws:policy/AdministratorAccess"',
            "administrator of the account",
            "attach only the policies the principal needs",
        ],
    ),
    "PowerUserAccess on the system node role": (
        POLICY,
        lambda r: set_at(
            attachment(r, "gpushare-prod-system-node-AmazonEKS_CNI_Policy"), ["policyArn"], MANAGED + "PowerUserAccess"
        ),
        ["gpushare-prod-system-node-AmazonEKS_CNI_Policy: policyArn", "PowerUserAccess makes the role"],
    ),
    "IAMFullAccess on the EBS CSI driver's role": (
        POLICY,
        lambda r: set_at(attachment(r, "gpushare-prod-ebs-csi"), ["policyArn"], MANAGED + "IAMFullAccess"),
        ["RolePolicyAttachment gpushare-prod-ebs-csi", "IAMFullAccess"],
    ),
    "an administrator managed policy listed on the controller role itself": (
        POLICY,
        lambda r: set_at(
            role(r, "gpushare-prod-karpenter-controller"), ["managedPolicyArns"], [MANAGED + "AdministratorAccess"]
        ),
        ["Role gpushare-prod-karpenter-controller: managedPolicyArns[0]"],
    ),
    "Action * in the controller's policy": (
        POLICY,
        lambda r: _add_statement(r, _allow("*")),
        ['RolePolicy gpushare-prod-karpenter-controller: policy Statement[18] (Added) is "*"', "every action"],
    ),
    "iam:* on every resource": (
        POLICY,
        lambda r: _add_statement(r, _allow(["iam:*"])),
        ["policy Statement[18] (Added)", "give itself any permission", "grant the actions the principal calls"],
    ),
    "iam:PassRole on every role": (
        POLICY,
        lambda r: _add_statement(r, _allow("iam:PassRole")),
        ["iam:PassRole on every resource"],
    ),
    "an Allow with NotAction": (
        POLICY,
        lambda r: _add_statement(r, {"Effect": "Allow", "NotAction": "iam:*", "Resource": "*"}),
        ["NotAction grants every action it does not list"],
    ),
    "an inline policy of a role": (
        POLICY,
        lambda r: set_at(
            role(r, "gpushare-prod-ebs-csi"),
            ["inlinePolicies"],
            [{"name": "extra", "policy": json.dumps({"Statement": [_allow("sts:AssumeRole")]})}],
        ),
        ["Role gpushare-prod-ebs-csi: inlinePolicies[0].policy Statement[0]", "sts:AssumeRole"],
    ),
    "a node role anyone may assume": (
        POLICY,
        lambda r: _trust_everyone(r, "gpushare-prod-karpenter-node"),
        ["Role gpushare-prod-karpenter-node: assumeRolePolicy Statement[0].Principal", "every AWS principal"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, CASES[case])


def test_scoped_grants_pass(plans):
    """PassRole on one role and iam reads on every resource are not administrator access."""
    resources = [dict(r, inputs=dict(r["inputs"])) for r in plans["prod"]["resources"]]
    _add_statement(resources, _allow("iam:PassRole", "arn:aws:iam::123456789012:role/gpushare-prod-karpenter-node"))
    _add_statement(resources, _allow(["iam:GetRole", "iam:ListRoles"]))
    assert messages(resources, POLICY) == []
