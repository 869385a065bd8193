"""Kubernetes label selectors (metav1.LabelSelector) evaluated as the sets they select, never compared as text:
`matchExpressions: [{key: kubernetes.io/metadata.name, operator: In, values: [team]}]` selects the same
namespaces as `matchLabels: {kubernetes.io/metadata.name: team}`, so rules must treat them alike."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpushare import names

from .kube import requirement_matches


def requirements(selector: Mapping[str, Any]) -> list[dict[str, Any]]:
    """matchLabels as `In` requirements plus matchExpressions: what the API server ANDs together."""
    found = [
        {"key": str(key), "operator": "In", "values": [str(value)]}
        for key, value in (selector.get("matchLabels") or {}).items()
    ]
    expressions = selector.get("matchExpressions")
    found += [e for e in expressions or [] if isinstance(e, dict)] if isinstance(expressions, list) else []
    return found


def selects(selector: Any, labels: Mapping[str, str]) -> bool:
    """Whether a label selector selects an object with these labels; `{}` selects everything, a missing
    selector (None) nothing, as for the selectors of admission policies and Prometheus objects."""
    if not isinstance(selector, Mapping):
        return False
    return all(_holds(requirement, labels) for requirement in requirements(selector))


def _holds(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    # A label selector knows only In, NotIn, Exists and DoesNotExist; anything else selects nothing.
    if requirement.get("operator") not in ("In", "NotIn", "Exists", "DoesNotExist"):
        return False
    return requirement_matches(requirement, labels)


def namespace_labels(name: str, labels: Mapping[str, Any] | None = None) -> dict[str, str]:
    """A namespace's labels as selectors see them: the API server adds kubernetes.io/metadata.name itself."""
    return {**{str(k): str(v) for k, v in (labels or {}).items()}, names.NAMESPACE_NAME_LABEL: name}


def names_allowed(selector: Any) -> frozenset[str] | None:
    """The namespace names a selector can select at most, from its requirements on kubernetes.io/metadata.name
    (intersected `In` values less `NotIn` values); None when it does not restrict the name, so it can select
    namespaces the stack does not know (kube-system, default, a namespace created tomorrow)."""
    if not isinstance(selector, Mapping):
        return None
    allowed: set[str] | None = None
    excluded: set[str] = set()
    for requirement in requirements(selector):
        if requirement.get("key") != names.NAMESPACE_NAME_LABEL:
            continue
        operator, values = requirement.get("operator"), {str(v) for v in requirement.get("values") or []}
        if operator == "In":
            allowed = values if allowed is None else allowed & values
        elif operator == "NotIn":
            excluded |= values
        elif operator == "DoesNotExist":
            allowed = set()
    return None if allowed is None else frozenset(allowed - excluded)


def selects_only_namespace(selector: Any, name: str, labels: Mapping[str, Any] | None = None) -> bool:
    """Whether a namespaceSelector selects exactly the namespace `name` (with these labels) and no other."""
    return names_allowed(selector) == {name} and selects(selector, namespace_labels(name, labels))
