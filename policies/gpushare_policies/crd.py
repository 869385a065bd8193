"""The pinned Karpenter CRDs, and validators that find what they refuse: the nodepool-crd-valid,
node-overlay-crd-valid and ec2nodeclass-crd-valid rules check NodePools, NodeOverlays and EC2NodeClasses
against the OpenAPI schema and x-kubernetes-validations (CEL) rules, catching at preview what the API server
would refuse.

Sources (read, not vendored) are the files the karpenter-crd chart 1.15.2 installs, from
github.com/aws/karpenter-provider-aws v1.15.2 pkg/apis/crds/ (the same bytes as v1.15.1's):
- karpenter.sh_nodepools.yaml (v1) and karpenter.sh_nodeoverlays.yaml (v1alpha1): sigs.k8s.io/karpenter
  v1.15's CRDs plus the AWS provider's `label domain "karpenter.k8s.aws" is restricted` rules;
- karpenter.k8s.aws_ec2nodeclasses.yaml (v1).
Each check names the CRD field it mirrors. Patterns are rewritten to match as Go's RE2 does (`\\Z`, ASCII
classes). JSON types are shape.py's concern: a number or boolean where the CRD wants a string is read as its
text, so nothing here tells `"true"` from `true`. A value unknown during preview counts as set, like CEL has().
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from gpushare import names

from .rule import Finding, finding
from .stack import UNKNOWN, Resource

POOLS_CRD = "karpenter.sh_nodepools.yaml"
OVERLAYS_CRD = "karpenter.sh_nodeoverlays.yaml"
CLASSES_CRD = "karpenter.k8s.aws_ec2nodeclasses.yaml"

# Shared by NodePool requirements and NodeOverlay requirements: key and values (items) patterns and lengths.
LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z"
)
LABEL_KEY_MAX = 316
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?\Z")
LABEL_VALUE_MAX = 63
QUANTITY = re.compile(
    r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?\Z"
)
OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte")
NUMERIC_OPERATORS = ("Gt", "Lt", "Gte", "Lte")
HOSTNAME_LABEL = "kubernetes.io/hostname"
KARPENTER_LABELS = (names.CAPACITY_TYPE_LABEL, names.NODEPOOL_LABEL)
# karpenter.k8s.aws labels the AWS provider's CEL lets NodeOverlays select ...
OVERLAY_AWS_LABELS = frozenset(
    f"karpenter.k8s.aws/{name}"
    for name in (
        "ec2nodeclass",
        "instance-encryption-in-transit-supported",
        "instance-category",
        "instance-hypervisor",
        "instance-family",
        "instance-generation",
        "instance-local-nvme",
        "instance-size",
        "instance-cpu",
        "instance-cpu-manufacturer",
        "instance-cpu-sustained-clock-speed-mhz",
        "instance-memory",
        "instance-ebs-bandwidth",
        "instance-network-bandwidth",
        "instance-gpu-name",
        "instance-gpu-manufacturer",
        "instance-gpu-count",
        "instance-gpu-memory",
        "instance-accelerator-name",
        "instance-accelerator-manufacturer",
        "instance-accelerator-count",
        "instance-capability-flex",
    )
)
# ... and NodePools select or set (template labels and requirements list the same names).
POOL_AWS_LABELS = OVERLAY_AWS_LABELS | {
    f"karpenter.k8s.aws/{name}"
    for name in (
        "instance-tenancy",
        "capacity-reservation-type",
        "capacity-reservation-id",
        "capacity-reservation-interruptible",
        "placement-group-id",
        "placement-group-partition",
    )
}
MAX_REQUIREMENTS = 100


def text_of(value: Any) -> str | None:
    """A scalar as the text a pattern is matched against; None for containers and unknown values."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, int, float)):
        return str(value)
    return None


def as_dict(value: Any) -> dict[str, Any]:
    """An object, or {} for a missing or misshapen one."""
    return value if isinstance(value, dict) else {}


def indexed_dicts(value: Any) -> list[tuple[int, dict[str, Any]]]:
    """Indexed objects of a list; anything else (a wrong shape shape.py reports) yields none."""
    return [(i, item) for i, item in enumerate(value) if isinstance(item, dict)] if isinstance(value, list) else []


def has(node: dict[str, Any], field: str) -> bool:
    """CEL has(): the field is present (the API server prunes nulls before validating)."""
    return node.get(field) is not None


def matches(
    resource: Resource, key: str, value: Any, pattern: re.Pattern[str], crd: str, fix: str
) -> Iterator[Finding]:
    text = text_of(value)
    if text is not None and not pattern.search(text):
        shown = pattern.pattern.replace("\\Z", "$")  # as the CRD writes it
        yield finding(resource, key, value, f"{crd} refuses it (pattern {shown})", fix)


def one_of(resource: Resource, key: str, value: Any, allowed: tuple[str, ...], crd: str) -> Iterator[Finding]:
    text = text_of(value)
    if text is not None and text not in allowed:
        yield finding(
            resource, key, value, f"{crd} allows only {', '.join(allowed)}", f"use one of {', '.join(allowed)}"
        )


def integer(resource: Resource, key: str, value: Any, low: int, high: int, crd: str) -> Iterator[Finding]:
    if value is None or value is UNKNOWN:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        yield finding(
            resource, key, value, f"{crd} takes an integer from {low} to {high}", f"set an integer from {low} to {high}"
        )


def at_most(resource: Resource, key: str, value: Any, limit: int, what: str, crd: str) -> Iterator[Finding]:
    if isinstance(value, (list, dict)) and len(value) > limit:
        yield finding(
            resource, f"{key} count", len(value), f"{crd} allows at most {limit} {what}", f"keep {limit} or fewer"
        )


def required(resource: Resource, key: str, value: Any, crd: str, fix: str) -> Iterator[Finding]:
    if value is None:
        yield finding(resource, key, None, f"{crd} requires it", fix)


def quantities(resource: Resource, where: str, values: Any, crd: str) -> Iterator[Finding]:
    """int-or-string map values: an integer, or a string in Kubernetes quantity form."""
    for name, value in as_dict(values).items():
        key = f'{where}["{name}"]'
        if isinstance(value, str):
            yield from matches(resource, key, value, QUANTITY, crd, 'write a quantity such as "40", "500m" or "64Gi"')
        elif value is not UNKNOWN and (isinstance(value, bool) or not isinstance(value, int)):
            yield finding(resource, key, value, f"{crd} takes an integer or a quantity string", 'write it as "40"')


def _label_refusal(key: str, aws_allowed: frozenset[str]) -> str | None:
    """The CRD's CEL message when a label key is one Karpenter keeps for itself."""
    domain = key.split("/", 1)[0]  # CEL: key.find("^([^/]+)")
    if key not in KARPENTER_LABELS and domain.endswith("karpenter.sh"):
        return 'label domain "karpenter.sh" is restricted'
    if key == HOSTNAME_LABEL:
        return f'label "{HOSTNAME_LABEL}" is restricted'
    if key not in aws_allowed and domain.endswith("karpenter.k8s.aws"):
        return 'label domain "karpenter.k8s.aws" is restricted'
    return None


def pool_label_refusal(key: str) -> str | None:
    """NodePools may neither set nor require karpenter.sh/nodepool: Karpenter sets it to the pool's name."""
    if key == names.NODEPOOL_LABEL:
        return f'label "{names.NODEPOOL_LABEL}" is restricted'
    return _label_refusal(key, POOL_AWS_LABELS)


def overlay_label_refusal(key: str) -> str | None:
    """Overlays may select a pool (karpenter.sh/nodepool) but fewer AWS labels than pools."""
    return _label_refusal(key, OVERLAY_AWS_LABELS)


def requirements(
    resource: Resource,
    where: str,
    requirements: Any,
    crd: str,
    refusal: Callable[[str], str | None],
    not_in_needs_values: bool,
) -> Iterator[Finding]:
    """requirements[]: key, operator and values as the item schema and the list's CEL rules constrain them."""
    yield from required(resource, where, requirements, crd, "list the node selector requirements")
    yield from at_most(resource, where, requirements, MAX_REQUIREMENTS, "requirements", crd)
    needs_values = ("In", "NotIn") if not_in_needs_values else ("In",)
    for index, requirement in indexed_dicts(requirements):
        at = f"{where}[{index}]"
        key, operator, values = requirement.get("key"), requirement.get("operator"), requirement.get("values")
        yield from required(resource, f"{at}.key", key, crd, "name the label to match")
        yield from required(resource, f"{at}.operator", operator, crd, f"use one of {', '.join(OPERATORS)}")
        if isinstance(key, str):
            problem = refusal(key)
            if problem is not None:
                yield finding(resource, f"{at}.key", key, f"{crd} refuses it ({problem})", "match another label")
            elif len(key) > LABEL_KEY_MAX or not LABEL_KEY.search(key):
                yield finding(resource, f"{at}.key", key, f"{crd} refuses it: not a label key", "use prefix/name")
        yield from one_of(resource, f"{at}.operator", operator, OPERATORS, crd)
        listed = values if isinstance(values, list) else []
        for position, value in enumerate(listed):
            text = text_of(value)
            if text is not None and (len(text) > LABEL_VALUE_MAX or not LABEL_VALUE.search(text)):
                yield finding(
                    resource,
                    f"{at}.values[{position}]",
                    value,
                    f"{crd} refuses it: not a label value",
                    "use a label value",
                )
        if operator in needs_values and not listed:
            yield finding(
                resource, f"{at}.values", values, f"{crd} refuses operator {operator} without values", "list the values"
            )
        single = text_of(listed[0]) if len(listed) == 1 else None
        if operator in NUMERIC_OPERATORS and not (single and re.fullmatch(r"[0-9]+", single) and int(single) < 2**63):
            yield finding(
                resource,
                f"{at}.values",
                values,
                f"{crd} requires operator {operator} to have a single non-negative integer value",
                'give one value such as ["0"]',
            )
