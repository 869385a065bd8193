"""Roles the stack creates grant named verbs on named resources, and no binding hands out cluster-admin or binds
everyone.

Kubernetes RBAC: `*` in verbs, resources or apiGroups also grants whatever later versions add (escalate, bind,
impersonate, new resources); `cluster-admin` is every verb on every resource; the groups system:authenticated
and system:unauthenticated are every caller (kubernetes.io/docs/reference/access-authn-authz/rbac/).
"""

from __future__ import annotations

from collections.abc import Iterator

from ..rule import Finding, Rule, finding
from ..stack import StackView, sorted_by_name

RBAC = "kubernetes:rbac.authorization.k8s.io/v1"
ROLES = (f"{RBAC}:ClusterRole", f"{RBAC}:Role")
BINDINGS = (f"{RBAC}:ClusterRoleBinding", f"{RBAC}:RoleBinding")
EVERYONE = ("system:authenticated", "system:unauthenticated", "system:anonymous")
# Verbs that let their holder grant itself more than it has: escalate (write a role with rights it lacks), bind
# (bind a role it does not hold), impersonate (act as any user or group, system:masters included)
# (kubernetes.io/docs/concepts/security/rbac-good-practices/#privilege-escalation-risks).
ESCALATING_VERBS = ("escalate", "bind", "impersonate")
# Built-in ClusterRoles that amount to cluster-admin when bound cluster-wide: admin and edit read every Secret and
# create pods with any ServiceAccount in every namespace, kube-system included (user-facing roles, RBAC docs).
CLUSTER_WIDE_ADMIN = ("cluster-admin", "admin", "edit")


def check_rbac(view: StackView, _config: None) -> Iterator[Finding]:
    for role in sorted_by_name(r for token in ROLES for r in view.of_type(token)):
        if role.get("aggregationRule") is not None:
            continue  # its rules are filled in by the controller from other roles, each checked on its own
        for index, rule in enumerate(role.get("rules") or []):
            if not isinstance(rule, dict):
                continue
            escalating = [verb for verb in rule.get("verbs") or [] if verb in ESCALATING_VERBS]
            if escalating:
                yield finding(
                    role,
                    f"rules[{index}].verbs",
                    rule.get("verbs"),
                    f"{', '.join(escalating)} lets the identity grant itself any permission (or act as "
                    "system:masters): it amounts to cluster-admin",
                    "drop those verbs; no component of gpushare needs them",
                )
            for key in ("verbs", "resources", "apiGroups"):
                values = rule.get(key) or []
                if "*" in values:
                    yield finding(
                        role,
                        f"rules[{index}].{key}",
                        values,
                        f"`*` grants every {key[:-1]}, also those added later (escalate, bind, impersonate, new "
                        "resources): the identity can do more than it needs",
                        f"list the {key} this role needs (the mock device plugin needs get on nodes)",
                    )
    for binding in sorted_by_name(b for token in BINDINGS for b in view.of_type(token)):
        role = binding.get("roleRef", "name")
        cluster_wide = binding.type == f"{RBAC}:ClusterRoleBinding"
        if role == "cluster-admin" or (cluster_wide and role in CLUSTER_WIDE_ADMIN):
            yield finding(
                binding,
                "roleRef.name",
                role,
                (
                    "cluster-admin is every verb on every resource"
                    if role == "cluster-admin"
                    else f"{role} bound cluster-wide reads every Secret and runs pods as any ServiceAccount in every "
                    "namespace, kube-system included"
                )
                + ": whoever holds it can remove quotas, admission policies and other teams' workloads",
                "bind a Role or ClusterRole listing only the verbs and resources its subjects need",
            )
        for index, subject in enumerate(binding.get("subjects") or []):
            if isinstance(subject, dict) and subject.get("name") in EVERYONE:
                yield finding(
                    binding,
                    f"subjects[{index}].name",
                    subject.get("name"),
                    f"the group is every caller of the API, so role {role} is granted to everyone",
                    "bind the ServiceAccount, user or group that needs the role",
                )


RULE = Rule(
    name="rbac-least-privilege",
    order=33,
    description="Roles and ClusterRoles the stack creates list their verbs, resources and API groups (no `*`) and "
    "grant no escalate, bind or impersonate; no binding refers to cluster-admin, no ClusterRoleBinding to admin or "
    "edit, and none binds system:authenticated, system:unauthenticated or system:anonymous.",
    why="A wildcard or cluster-admin lets a compromised controller or team pod delete quotas, admission policies "
    "and other teams' workloads.",
    remediation="Grant each ServiceAccount the verbs on the resources it uses, bound to that ServiceAccount only.",
    enforcement="mandatory",
    severity="high",
    check=check_rbac,
)
