"""Every scheduler policy a team namespace records is applied to its GPU pods."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from gpushare import names

from ..admission import admission_objects, kind_of, team_of
from ..rule import Finding, Rule, finding_about
from ..stack import Resource, StackView


def unapplied_policies(view: StackView) -> list[tuple[Resource, str]]:
    """(namespace, problem) for every scheduler policy a team namespace records that no mutating policy sets."""
    objects = admission_objects(view).values()
    expressions: dict[Any, set[Any]] = defaultdict(set)  # team -> what its policies set, read once for all teams
    for policy in (o for o in objects if kind_of(o) == "MutatingAdmissionPolicy"):
        mutations = policy.get("spec", "mutations")
        for mutation in mutations if isinstance(mutations, list) else []:
            apply = mutation.get("applyConfiguration") if isinstance(mutation, dict) else None
            expressions[team_of(policy)].add(apply.get("expression") if isinstance(apply, dict) else None)
    problems = []
    for namespace in (o for o in objects if kind_of(o) == "Namespace"):
        annotations = namespace.get("metadata", "annotations") or {}
        team = namespace.object_name
        for recorded, hami_key in (
            (names.NODE_POLICY_ANNOTATION, names.HAMI_NODE_POLICY_ANNOTATION),
            (names.GPU_POLICY_ANNOTATION, names.HAMI_GPU_POLICY_ANNOTATION),
        ):
            if recorded not in annotations:
                continue
            wanted = f"'{hami_key}': '{annotations[recorded]}'"
            if not any(wanted in (expression or "") for expression in expressions.get(team, ())):
                problems.append(
                    (
                        namespace,
                        f"scheduler policy {annotations[recorded]} is not applied to its pods "
                        f"(no MutatingAdmissionPolicy for namespace {team} sets {hami_key})",
                    )
                )
    return problems


def check_scheduler_policy(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace, problem in unapplied_policies(view):
        yield finding_about(
            namespace,
            problem,
            "keep the team's MutatingAdmissionPolicy that copies its schedulerPolicy onto GPU pods (Kubernetes 1.36+)",
        )


RULE = Rule(
    name="team-scheduler-policy-applied",
    order=23,
    description="A team namespace's recorded scheduler policy is set on its GPU pods by a MutatingAdmissionPolicy.",
    why="HAMi reads binpack/spread only from pod annotations; recorded but not applied, the team's choice "
    "is silently ignored.",
    remediation="Keep the scheduler-policy MutatingAdmissionPolicy gpushare renders for the team.",
    enforcement="mandatory",
    severity="medium",
    check=check_scheduler_policy,
)
