"""The stack's team admission objects: policies, their bindings and the team namespaces, indexed once."""

from __future__ import annotations

from typing import Any

from gpushare import names

from .stack import NAMESPACE, Resource, StackView

ADMISSION_API = "kubernetes:admissionregistration.k8s.io/v1"
POLICY_BINDINGS = {
    "MutatingAdmissionPolicy": "MutatingAdmissionPolicyBinding",
    "ValidatingAdmissionPolicy": "ValidatingAdmissionPolicyBinding",
}
KINDS = (*POLICY_BINDINGS, *POLICY_BINDINGS.values())


def admission_objects(view: StackView) -> dict[tuple[str, str], Resource]:
    """(kind, name) -> resource, for the admission policies, their bindings and namespaces."""
    tokens = {f"{ADMISSION_API}:{kind}": kind for kind in KINDS} | {NAMESPACE: "Namespace"}
    return {(kind, r.object_name): r for token, kind in tokens.items() for r in view.of_type(token)}


def kind_of(resource: Resource) -> str:
    """The Kubernetes kind of a resource (the last segment of its type token)."""
    return resource.type.rsplit(":", 1)[-1]


def team_of(resource: Resource) -> Any:
    """The team label of an admission object (None on objects that belong to no team)."""
    return resource.get("metadata", "labels", names.TEAM_LABEL)


def denying_validations(view: StackView) -> dict[str, list[tuple[Resource, dict[str, Any]]]]:
    """Namespace -> (policy, validation) of every ValidatingAdmissionPolicy a Deny binding applies to pods of
    exactly that namespace (selected by its name label); indexed once per view."""

    def index() -> dict[str, list[tuple[Resource, dict[str, Any]]]]:
        objects = admission_objects(view)
        found: dict[str, list[tuple[Resource, dict[str, Any]]]] = {}
        for (kind, _), binding in objects.items():
            actions = binding.get("spec", "validationActions")
            if kind != "ValidatingAdmissionPolicyBinding" or not isinstance(actions, list) or "Deny" not in actions:
                continue
            namespace = binding.get("spec", "matchResources", "namespaceSelector", "matchLabels")
            namespace = namespace.get(names.NAMESPACE_NAME_LABEL) if isinstance(namespace, dict) else None
            policy = objects.get(("ValidatingAdmissionPolicy", str(binding.get("spec", "policyName"))))
            validations = policy.get("spec", "validations") if policy is not None else None
            if isinstance(namespace, str) and isinstance(validations, list):
                found.setdefault(namespace, []).extend((policy, v) for v in validations if isinstance(v, dict))
        return found

    return view.memo("denying-validations", index)


def binding_without_deny(view: StackView, policy: str) -> Resource | None:
    """The ValidatingAdmissionPolicyBinding of `policy` when it only warns or audits (the policy refuses nothing);
    indexed once per view, as rules ask per team namespace."""

    def index() -> dict[str, Resource]:
        found: dict[str, Resource] = {}
        for binding in view.of_type(f"{ADMISSION_API}:ValidatingAdmissionPolicyBinding"):
            actions, name = binding.get("spec", "validationActions"), binding.get("spec", "policyName")
            if isinstance(name, str) and not (isinstance(actions, list) and "Deny" in actions):
                found.setdefault(name, binding)
        return found

    return view.memo("bindings-without-deny", index).get(policy)
