"""Changes that break `rbac-least-privilege`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import caught, set_at

ROLE = "hami-mock-device-plugin"


def role(r):
    return find(r, "ClusterRole", ROLE)


def binding(r):
    return find(r, "ClusterRoleBinding", ROLE)


# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "wildcard verbs": (
        "rbac-least-privilege",
        lambda r: set_at(role(r), ["rules", 0, "verbs"], ["*"]),
        ["ClusterRole hami-mock-device-plugin: rules[0].verbs is ['*']", "list the verbs"],
    ),
    "wildcard resources": (
        "rbac-least-privilege",
        lambda r: set_at(role(r), ["rules", 0, "resources"], ["nodes", "*"]),
        ["rules[0].resources is", "every resource"],
    ),
    "wildcard API groups": (
        "rbac-least-privilege",
        lambda r: set_at(role(r), ["rules", 0, "apiGroups"], ["*"]),
        ["rules[0].apiGroups is", "every apiGroup"],
    ),
    "binding to cluster-admin": (
        "rbac-least-privilege",
        lambda r: set_at(binding(r), ["roleRef", "name"], "cluster-admin"),
        ['ClusterRoleBinding hami-mock-device-plugin: roleRef.name is "cluster-admin"', "bind a Role"],
    ),
    "binding admin cluster-wide": (
        "rbac-least-privilege",
        lambda r: set_at(binding(r), ["roleRef", "name"], "admin"),
        ['ClusterRoleBinding hami-mock-device-plugin: roleRef.name is "admin"', "runs pods as any ServiceAccount"],
    ),
    "binding edit cluster-wide": (
        "rbac-least-privilege",
        lambda r: set_at(binding(r), ["roleRef", "name"], "edit"),
        ['roleRef.name is "edit"', "reads every Secret"],
    ),
    "a role that may impersonate": (
        "rbac-least-privilege",
        lambda r: set_at(role(r), ["rules", 0, "verbs"], ["get", "impersonate"]),
        ["rules[0].verbs is ['get', 'impersonate']", "amounts to cluster-admin", "drop those verbs"],
    ),
    "a role that may bind and escalate": (
        "rbac-least-privilege",
        lambda r: set_at(role(r), ["rules", 0, "verbs"], ["bind", "escalate"]),
        ["bind, escalate lets the identity grant itself any permission"],
    ),
    "binding to every authenticated caller": (
        "rbac-least-privilege",
        lambda r: set_at(
            binding(r), ["subjects", 0], {"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac"}
        ),
        ['subjects[0].name is "system:authenticated"', "granted to everyone"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_admin_bound_inside_one_namespace_passes(plans):
    """A RoleBinding to admin stays in its namespace: only cluster-wide bindings of admin or edit are refused."""
    resources = resources_of(plans["dev"])
    resources.append(
        {
            "urn": "urn:pulumi:dev::gpushare::kubernetes:rbac.authorization.k8s.io/v1:RoleBinding::ops",
            "type": "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
            "name": "ops",
            "inputs": {
                "metadata": {"name": "ops", "namespace": "inference"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "admin"},
                "subjects": [{"kind": "Group", "name": "inference-admins", "apiGroup": "rbac.authorization.k8s.io"}],
            },
        }
    )
    assert messages(resources, "rbac-least-privilege") == []
