"""Changes that break `eks-access-least-privilege`: each is caught, and every message says the fix."""

from __future__ import annotations

import copy

import pytest

from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import caught, cluster, set_at

ASSOCIATION = "aws:eks/accessPolicyAssociation:AccessPolicyAssociation"
POLICY = "arn:aws:eks::aws:cluster-access-policy/"
ADMIN = "arn:aws:iam::111122223333:role/platform-admins"


def association(r, team="inference"):
    return next(x["inputs"] for x in r if x["type"] == ASSOCIATION and x["name"].endswith(f"-team-{team}"))


def access_entry(r, team="inference"):
    return next(x for x in r if x["type"] == "aws:eks/accessEntry:AccessEntry" and x["name"].endswith(f"-{team}"))


def second_entry(r):
    clone = copy.deepcopy(access_entry(r))
    clone["urn"] += "-again"
    clone["name"] += "-again"
    r.append(clone)


def admins(r, scope, policy="AmazonEKSClusterAdminPolicy", principal=ADMIN):
    """cluster.adminPrincipalArns as pulumi-eks's accessEntries input records it."""
    grant = {"accessScope": scope, "policyArn": POLICY + policy}
    cluster(r)["accessEntries"] = {"admin-0": {"accessPolicies": {"cluster-admin": grant}, "principalArn": principal}}


# (policy, change, every fragment one message must contain), on the prod plan (teams have access roles)
PROD_CASES = {
    "team edit at cluster scope": (
        "eks-access-least-privilege",
        lambda r: set_at(association(r), ["accessScope"], {"type": "cluster"}),
        [
            'AccessPolicyAssociation gpushare-prod-team-inference: accessScope.type is "cluster"',
            "writes in kube-system",
            "scope a team's association to its own namespace",
        ],
    ),
    "cluster admin inside the team namespace": (
        "eks-access-least-privilege",
        lambda r: set_at(association(r), ["policyArn"], POLICY + "AmazonEKSClusterAdminPolicy"),
        ["policyArn is", "delete its own ResourceQuota", "associate AmazonEKSEditPolicy"],
    ),
    "admin inside the team namespace": (
        "eks-access-least-privilege",
        lambda r: set_at(association(r), ["policyArn"], POLICY + "AmazonEKSAdminPolicy"),
        ["AmazonEKSAdminPolicy inside a namespace", "RoleBindings"],
    ),
    "team edit in kube-system": (
        "eks-access-least-privilege",
        lambda r: set_at(association(r), ["accessScope", "namespaces"], ["inference", "kube-system"]),
        ['accessScope.namespaces[1] is "kube-system"', "not a gpushare team namespace"],
    ),
    "admin grant of edit at cluster scope is no admin": (
        "eks-access-least-privilege",
        lambda r: admins(r, {"type": "cluster"}, "AmazonEKSEditPolicy"),
        ["eks:index:Cluster gpushare-prod: accessEntries.admin-0.accessPolicies.cluster-admin.accessScope.type"],
    ),
    "two access entries for one principal": (
        "eks-access-least-privilege",
        second_entry,
        ["already has an access entry for this principal", "pulumi up` fails", "one access entry"],
    ),
    "a team's entry mapped to system:masters": (
        "eks-access-least-privilege",
        lambda r: set_at(access_entry(r)["inputs"], ["kubernetesGroups"], ["inference-devs", "system:masters"]),
        [
            'AccessEntry gpushare-prod-team-inference: kubernetesGroups[1] is "system:masters"',
            "hard-coded in the API server",
            "map the principal to an access policy",
        ],
    ),
    "the node role's entry mapped to system:masters": (
        "eks-access-least-privilege",
        lambda r: set_at(
            next(x for x in r if x["name"].endswith("karpenter-node") and "accessEntry" in x["type"])["inputs"],
            ["kubernetesGroups"],
            ["system:masters"],
        ),
        ['AccessEntry gpushare-prod-karpenter-node: kubernetesGroups[0] is "system:masters"'],
    ),
    "an admin entry mapped to system:masters": (
        "eks-access-least-privilege",
        lambda r: set_at(
            cluster(r), ["accessEntries"], {"ci": {"principalArn": ADMIN, "kubernetesGroups": ["system:masters"]}}
        ),
        ['eks:index:Cluster gpushare-prod: accessEntries.ci.kubernetesGroups[0] is "system:masters"'],
    ),
    "admin who is also a team's role": (
        "eks-access-least-privilege",
        lambda r: admins(r, {"type": "cluster"}, principal=access_entry(r)["inputs"]["principalArn"]),
        ["eks:index:Cluster gpushare-prod: accessEntries.admin-0.principalArn is", "already has an access entry"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_admins_at_cluster_scope_pass(plans):
    """cluster.adminPrincipalArns' cluster-admin grant is what admins are for, declared or as pulumi-eks's child."""
    resources = resources_of(plans["prod"])
    admins(resources, {"type": "cluster"})
    child = {
        "urn": f"urn:pulumi:prod::gpushare::eks:index:Cluster${ASSOCIATION}::admin",
        "type": ASSOCIATION,
        "name": "admin",
        "inputs": {"accessScope": {"type": "cluster"}, "policyArn": POLICY + "AmazonEKSClusterAdminPolicy"},
    }
    resources.append(child)
    assert messages(resources, "eks-access-least-privilege") == []
