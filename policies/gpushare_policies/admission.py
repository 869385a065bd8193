"""Team admission rules: every team policy is bound and scoped to the team's namespace only, and every
scheduler policy a namespace records is applied to its pods. The checks are gpushare's own
(gpushare/render/tenancy_checks.py), run here over the stack's objects."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gpushare.render.tenancy_checks import POLICY_BINDINGS, admission_scope_problems, scheduler_policy_problems

from .rule import Finding, Rule
from .stack import NAMESPACE, Resource, StackView

ADMISSION_API = "kubernetes:admissionregistration.k8s.io/v1"
KINDS = (*POLICY_BINDINGS, *POLICY_BINDINGS.values())


def _objects(view: StackView) -> dict[tuple[str, str], Resource]:
    """(kind, name) -> resource, for the admission policies, their bindings and namespaces."""
    tokens = {f"{ADMISSION_API}:{kind}": kind for kind in KINDS} | {NAMESPACE: "Namespace"}
    return {(kind, r.object_name): r for token, kind in tokens.items() for r in view.of_type(token)}


def _findings(view: StackView, problems: Callable[[list[dict[str, Any]]], list[str]], fix: str) -> Iterator[Finding]:
    objects = _objects(view)
    plain = [
        {"kind": kind, "metadata": resource.get("metadata") or {}, "spec": resource.get("spec") or {}}
        for (kind, _), resource in objects.items()
    ]
    for problem in problems(plain):
        subject, _, _ = problem.partition(":")
        kind, _, name = subject.partition(" ")
        yield Finding(objects.get((kind, name)), f"{problem}. Fix: {fix}.")


def check_scope(view: StackView, _config: None) -> Iterator[Finding]:
    yield from _findings(
        view,
        admission_scope_problems,
        "bind each team policy and select the team's namespace by kubernetes.io/metadata.name in both the policy "
        "and its binding (gpushare renders them so)",
    )


def check_scheduler_policy(view: StackView, _config: None) -> Iterator[Finding]:
    yield from _findings(
        view,
        scheduler_policy_problems,
        "keep the team's MutatingAdmissionPolicy that copies its schedulerPolicy onto GPU pods (Kubernetes 1.36+)",
    )


RULES = (
    Rule(
        name="team-admission-scoped",
        description="Every team admission policy has a binding, and both select only the team's namespace.",
        why="An unbound policy does nothing; one matching other namespaces changes or refuses other teams' pods.",
        remediation="Bind each policy and select the team namespace by kubernetes.io/metadata.name.",
        enforcement="mandatory",
        severity="high",
        check=check_scope,
    ),
    Rule(
        name="team-scheduler-policy-applied",
        description="A team namespace's recorded scheduler policy is set on its GPU pods by a MutatingAdmissionPolicy.",
        why="HAMi reads binpack/spread only from pod annotations; recorded but not applied, the team's choice "
        "is silently ignored.",
        remediation="Keep the scheduler-policy MutatingAdmissionPolicy gpushare renders for the team.",
        enforcement="mandatory",
        severity="medium",
        check=check_scheduler_policy,
    ),
)
