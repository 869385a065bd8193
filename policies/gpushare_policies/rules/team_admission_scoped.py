"""Every team admission policy is bound, and both policy and binding select only the team's namespace."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpushare import names

from ..admission import POLICY_BINDINGS, admission_objects, kind_of, team_of
from ..rule import Finding, Rule, finding, finding_about
from ..selectors import selects_only_namespace
from ..stack import Resource, StackView


def _only_namespace(objects: dict[tuple[str, str], Resource], selector: Any, namespace: str) -> bool:
    """Whether the selector selects the team's namespace (with the labels the stack gives it) and no other,
    however it is written: matchLabels or matchExpressions are the same set."""
    found = objects.get(("Namespace", namespace))
    return selects_only_namespace(selector, namespace, found.get("metadata", "labels") if found else None)


def scope_problems(view: StackView) -> list[tuple[Resource, str]]:
    """(policy or binding, problem) for every team policy without a binding, or selecting more than its team."""
    indexed = admission_objects(view)
    objects = indexed.values()
    bindings = {(kind_of(o), o.get("spec", "policyName")): o for o in objects if kind_of(o) in POLICY_BINDINGS.values()}
    problems = []
    for policy in (o for o in objects if kind_of(o) in POLICY_BINDINGS):
        team = team_of(policy)
        if team is None:
            continue
        if not _only_namespace(indexed, policy.get("spec", "matchConstraints", "namespaceSelector"), team):
            problems.append((policy, f"matchConstraints must select only namespace {team}"))
        binding_kind = POLICY_BINDINGS[kind_of(policy)]
        binding = bindings.get((binding_kind, policy.object_name))
        if binding is None:
            problems.append((policy, f"no {binding_kind} names it"))
        elif not _only_namespace(indexed, binding.get("spec", "matchResources", "namespaceSelector"), team):
            problems.append((binding, f"matchResources must select only namespace {team}"))
    return problems


def dangling_bindings(view: StackView) -> Iterator[tuple[Resource, str, str]]:
    """(team binding, the policy kind it should name, the name it gives) for bindings naming no policy."""
    objects = admission_objects(view)
    for policy_kind, binding_kind in POLICY_BINDINGS.items():
        for (kind, _), binding in sorted(objects.items()):
            name = binding.get("spec", "policyName")
            if kind == binding_kind and team_of(binding) is not None and (policy_kind, str(name)) not in objects:
                yield binding, policy_kind, str(name)


def check_scope(view: StackView, _config: None) -> Iterator[Finding]:
    for binding, policy_kind, name in dangling_bindings(view):
        yield finding(
            binding,
            "spec.policyName",
            name,
            f"no {policy_kind} of that name is in the stack, so the binding applies nothing and team "
            f"{team_of(binding)}'s pods go unchecked",
            f"name the team's {policy_kind} (gpushare-{team_of(binding)}-<purpose>) or drop the binding",
        )
    for resource, problem in scope_problems(view):
        yield finding_about(
            resource,
            problem,
            f"bind each team policy and select the team's namespace by {names.NAMESPACE_NAME_LABEL} in both the "
            "policy and its binding (gpushare renders them so)",
        )


RULE = Rule(
    name="team-admission-scoped",
    order=22,
    description="Every team admission policy has a binding, every team binding names a policy of the stack, and "
    "both select only the team's namespace.",
    why="An unbound policy does nothing; one matching other namespaces changes or refuses other teams' pods.",
    remediation=f"Bind each policy and select the team namespace by {names.NAMESPACE_NAME_LABEL}.",
    enforcement="mandatory",
    severity="high",
    check=check_scope,
)
