"""The stack's team admission objects, judged by gpushare's own checks (gpushare/render/tenancy_checks.py):
each problem those checks report becomes a finding on the object it names."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from gpushare.render.tenancy_checks import POLICY_BINDINGS

from .rule import Finding, finding_about
from .stack import NAMESPACE, Resource, StackView

ADMISSION_API = "kubernetes:admissionregistration.k8s.io/v1"
KINDS = (*POLICY_BINDINGS, *POLICY_BINDINGS.values())


def _objects(view: StackView) -> dict[tuple[str, str], Resource]:
    """(kind, name) -> resource, for the admission policies, their bindings and namespaces."""
    tokens = {f"{ADMISSION_API}:{kind}": kind for kind in KINDS} | {NAMESPACE: "Namespace"}
    return {(kind, r.object_name): r for token, kind in tokens.items() for r in view.of_type(token)}


def problem_findings(
    view: StackView, problems: Callable[[list[dict[str, Any]]], list[str]], fix: str
) -> Iterator[Finding]:
    """One finding per `<Kind> <name>: <problem>` the check reports, on that object when the stack has it."""
    objects = _objects(view)
    plain = [
        {"kind": kind, "metadata": resource.get("metadata") or {}, "spec": resource.get("spec") or {}}
        for (kind, _), resource in objects.items()
    ]
    for problem in problems(plain):
        subject, _, _ = problem.partition(":")
        kind, _, name = subject.partition(" ")
        resource = objects.get((kind, name))
        # The problem names its object as the object's label does; the constructor puts the label back.
        shown = problem.removeprefix(f"{resource.label}: ") if resource is not None else problem
        yield finding_about(resource, shown, fix)
