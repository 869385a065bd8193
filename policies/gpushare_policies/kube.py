"""Kubernetes and Karpenter matching semantics the rules need: requirements, tolerations, quantities."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from gpushare import names
from gpushare.catalog import load_catalog

from .stack import NODE_OVERLAY, NODE_POOL, RESOURCE_QUOTA, Resource, StackView

_SUFFIXES = {
    "": 1,
    "m": Decimal("0.001"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]{0,2})$")


def quantity(value: Any) -> Decimal | None:
    """A Kubernetes quantity (`16`, `500m`, `64Gi`, `1e3`) as a number; None when it is not one."""
    match = _QUANTITY.match(str(value).strip())
    if not match or match.group(2) not in _SUFFIXES:
        return None
    try:
        return Decimal(match.group(1)) * _SUFFIXES[match.group(2)]
    except InvalidOperation:
        return None


def requirement_matches(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """One node-selector requirement against a label set (operators of Karpenter's NodeSelectorRequirement)."""
    key, operator = requirement.get("key"), requirement.get("operator")
    if not isinstance(key, str):
        return False
    given = requirement.get("values")
    values = [str(v) for v in given] if isinstance(given, list) else []
    present = key in labels
    value = labels.get(str(key))
    if operator == "In":
        return present and value in values
    if operator == "NotIn":
        return not present or value not in values
    if operator == "Exists":
        return present
    if operator == "DoesNotExist":
        return not present
    if operator in ("Gt", "Lt", "Gte", "Lte") and present and values:
        try:
            have, bound = int(str(value)), int(values[0])
        except ValueError:
            return False
        return {"Gt": have > bound, "Lt": have < bound, "Gte": have >= bound, "Lte": have <= bound}[operator]
    return False


def tolerates(tolerations: Sequence[Mapping[str, Any]], taint: Mapping[str, Any]) -> bool:
    """Whether any toleration tolerates the taint (core/v1 Toleration.ToleratesTaint)."""
    for toleration in tolerations:
        if toleration.get("effect") and toleration.get("effect") != taint.get("effect"):
            continue
        operator = toleration.get("operator") or "Equal"
        key = toleration.get("key")
        if not key:
            if operator == "Exists":
                return True
            continue
        if key != taint.get("key"):
            continue
        same_value = (toleration.get("value") or "") == (taint.get("value") or "")
        if operator == "Exists" or (operator == "Equal" and same_value):
            return True
    return False


@dataclass(frozen=True)
class Pool:
    """What a NodePool lets Karpenter launch, read from its spec."""

    resource: Resource
    name: str
    labels: dict[str, str]
    instance_types: tuple[str, ...] | None  # None: not restricted by an `In` on the instance-type label
    taints: tuple[dict[str, Any], ...]
    limits: dict[str, Any]
    node_class: str | None
    capacity_types: tuple[str, ...] | None  # None: any offering Karpenter has

    @classmethod
    def of(cls, resource: Resource) -> Pool:
        template = resource.get("spec", "template") or {}
        spec = template.get("spec") or {}
        types: tuple[str, ...] | None = None
        for requirement in spec.get("requirements") or []:
            if requirement.get("key") == names.INSTANCE_TYPE_LABEL and requirement.get("operator") == "In":
                allowed = tuple(str(v) for v in requirement.get("values") or [])
                types = allowed if types is None else tuple(t for t in types if t in allowed)
        ref = spec.get("nodeClassRef") or {}
        return cls(
            resource=resource,
            name=resource.object_name,
            labels={str(k): str(v) for k, v in ((template.get("metadata") or {}).get("labels") or {}).items()},
            instance_types=types,
            # startupTaints are removed by their owner (e.g. a CNI) before the node initializes: nothing needs
            # to tolerate them.
            taints=tuple(spec.get("taints") or ()),
            capacity_types=_in_values(spec.get("requirements"), names.CAPACITY_TYPE_LABEL),
            limits=dict(resource.get("spec", "limits") or {}),
            node_class=ref.get("name"),
        )

    def node_labels(self, instance_type: str) -> dict[str, str]:
        """Labels an overlay is matched against: what Karpenter sets on every offering of the type (from the
        catalog), the template labels and the pool name."""
        return {**instance_type_labels(instance_type), **self.labels, names.NODEPOOL_LABEL: self.name}


# Labels karpenter-provider-aws sets on every instance type (pkg/apis/v1/labels.go) whose value the gpushare catalog
# does not hold, or which differ per offering (zone): a requirement on them may hold, so it never makes an overlay
# "not apply". Only labels nobody sets count as unmet.
UNEVALUATED_LABELS: frozenset[str] = frozenset(
    {
        "topology.kubernetes.io/zone",
        "topology.k8s.aws/zone-id",
        "topology.kubernetes.io/region",
        "karpenter.k8s.aws/instance-cpu-manufacturer",
        "karpenter.k8s.aws/instance-cpu-sustained-clock-speed-mhz",
        "karpenter.k8s.aws/instance-ebs-bandwidth",
        "karpenter.k8s.aws/instance-network-bandwidth",
        "karpenter.k8s.aws/instance-local-nvme",
        "karpenter.k8s.aws/instance-hypervisor",
        "karpenter.k8s.aws/instance-encryption-in-transit-supported",
        "karpenter.k8s.aws/instance-capability-flex",
    }
)
CAPACITY_TYPES = ("on-demand", "spot", "reserved")


def instance_type_labels(instance_type: str) -> dict[str, str]:
    """The labels Karpenter gives a node of a catalog type (name-derived ones for types outside the catalog)."""
    family, _, size = instance_type.partition(".")
    category = family.rstrip("abcdefghijklmnopqrstuvwxyz-").rstrip("0123456789") or family
    labels = {
        names.INSTANCE_TYPE_LABEL: instance_type,
        "karpenter.k8s.aws/instance-family": family,
        "karpenter.k8s.aws/instance-size": size,
        "karpenter.k8s.aws/instance-category": category,
        "karpenter.k8s.aws/instance-generation": family[len(category) :].rstrip("abcdefghijklmnopqrstuvwxyz-"),
    }
    catalog = load_catalog()
    if instance_type not in catalog.instance_type_names:
        return labels
    itype = catalog.instance_type(instance_type)
    labels |= {
        names.ARCH_LABEL: "amd64",
        names.OS_LABEL: "linux",
        "karpenter.k8s.aws/instance-cpu": str(itype.vcpu),
        "karpenter.k8s.aws/instance-memory": str(itype.memory_mib),
    }
    if itype.gpu_count:
        model = catalog.gpu_model_of(itype)
        labels |= {
            "karpenter.k8s.aws/instance-gpu-name": model.karpenter_gpu_name,
            "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
            "karpenter.k8s.aws/instance-gpu-count": str(itype.gpu_count),
            "karpenter.k8s.aws/instance-gpu-memory": str(model.ec2_memory_mib),
        }
    return labels


def _in_values(requirements: Any, key: str) -> tuple[str, ...] | None:
    """The values an `In` requirement on `key` allows (None: not restricted)."""
    for requirement in requirements if isinstance(requirements, list) else ():
        if isinstance(requirement, dict) and requirement.get("key") == key and requirement.get("operator") == "In":
            return tuple(str(v) for v in requirement.get("values") or [])
    return None


def requirement_may_hold(requirement: Mapping[str, Any], labels: Mapping[str, str], capacity_types: Any) -> bool:
    """A NodeOverlay requirement against a pool's node of one type: capacity type holds for some offering the pool
    allows, labels gpushare cannot evaluate may hold, every other label is known."""
    key = requirement.get("key")
    if key in UNEVALUATED_LABELS:  # set on every node, to a value gpushare cannot know
        return requirement.get("operator") != "DoesNotExist"
    if key == names.CAPACITY_TYPE_LABEL:
        return any(requirement_matches(requirement, {key: value}) for value in capacity_types or CAPACITY_TYPES)
    return requirement_matches(requirement, labels)


def pools(view: StackView) -> list[Pool]:
    """Sorted by name; read from the specs once per view."""
    return list(view.memo("pools", lambda: sorted((Pool.of(r) for r in view.of_type(NODE_POOL)), key=lambda p: p.name)))


class _OverlayIndex:
    """Overlays by one `In` requirement each (the nodepool one when there is one): a node's candidates are the
    overlays filed under one of its labels, plus those with no usable `In`, instead of every overlay."""

    def __init__(self, overlays: list[Resource]) -> None:
        self.unfiled: list[int] = []
        self.filed: dict[tuple[str, str], list[int]] = defaultdict(list)
        self.overlays = overlays
        for position, overlay in enumerate(overlays):
            anchor = _anchor(overlay.get("spec", "requirements"))
            if anchor is None:
                self.unfiled.append(position)
                continue
            for value in dict.fromkeys(str(v) for v in anchor["values"]):
                self.filed[(anchor["key"], value)].append(position)

    def matching(self, labels: Mapping[str, str], capacity_types: tuple[str, ...] | None) -> list[Resource]:
        """Overlays whose requirements all hold for `labels`, in stack order (equal weights: the later wins)."""
        candidates = set(self.unfiled)
        for item in labels.items():
            candidates.update(self.filed.get(item, ()))
        found = (self.overlays[position] for position in sorted(candidates))
        return [
            o
            for o in found
            if all(requirement_may_hold(r, labels, capacity_types) for r in o.get("spec", "requirements") or [])
        ]


def _anchor(requirements: Any) -> dict[str, Any] | None:
    """The requirement an overlay is filed under: an `In` on a string key with a list of values, the nodepool
    key first; a label set lacking key=value fails it, so the overlay cannot match that node."""
    usable = [
        req
        for req in (requirements if isinstance(requirements, list) else ())
        if isinstance(req, dict)
        and req.get("operator") == "In"
        and isinstance(req.get("key"), str)
        and req["key"] not in UNEVALUATED_LABELS | {names.CAPACITY_TYPE_LABEL}
        and isinstance(req.get("values"), list)
    ]
    return next((req for req in usable if req["key"] == names.NODEPOOL_LABEL), usable[0] if usable else None)


def overlays_for(view: StackView, pool: Pool, instance_type: str) -> list[Resource]:
    """Overlays whose requirements all hold for this pool and instance type (Karpenter NodeOverlay docs)."""
    labels = pool.node_labels(instance_type)
    index = view.memo("overlay-index", lambda: _OverlayIndex(view.of_type(NODE_OVERLAY)))
    key = ("overlays-for", frozenset(labels.items()), pool.capacity_types)
    return list(view.memo(key, lambda: index.matching(labels, pool.capacity_types)))


def near_misses(view: StackView, pool: Pool, instance_type: str) -> list[tuple[Resource, dict[str, Any]]]:
    """(overlay, its first requirement that fails) for overlays aimed at this pool and type by an `In` on the
    nodepool or instance-type label that still do not apply: what a coverage finding names. Scans every overlay,
    so call it only for a finding."""
    labels = pool.node_labels(instance_type)
    aimed = (names.NODEPOOL_LABEL, names.INSTANCE_TYPE_LABEL)
    found = []
    for overlay in view.of_type(NODE_OVERLAY):
        requirements = [r for r in overlay.get("spec", "requirements") or [] if isinstance(r, dict)]
        if not any(r.get("key") in aimed and r.get("operator") == "In" for r in requirements):
            continue
        if not all(requirement_matches(r, labels) for r in requirements if r.get("key") in aimed):
            continue
        failing = [r for r in requirements if not requirement_may_hold(r, labels, pool.capacity_types)]
        if failing:
            found.append((overlay, failing[0]))
    return found


def overlay_for(pool: Pool, instance_type: str) -> str:
    """How a fix names the overlay a pool's type needs: the requirements gpushare renders for it."""
    return (
        f"a NodeOverlay with requirements {names.NODEPOOL_LABEL} In [{pool.name}] and {names.INSTANCE_TYPE_LABEL} In "
        f"[{instance_type}]"
    )


def describe_requirement(requirement: Mapping[str, Any]) -> str:
    values = requirement.get("values")
    shown = f" [{', '.join(str(v) for v in values)}]" if isinstance(values, list) and values else ""
    return f"{requirement.get('key')} {requirement.get('operator')}{shown}"


def overlay_weight(overlay: Resource) -> int:
    weight = overlay.get("spec", "weight")
    return int(weight) if isinstance(weight, int) else 0


def effective_capacity(overlays: Sequence[Resource]) -> dict[str, tuple[Any, Resource]]:
    """Resource -> (value, overlay) as Karpenter applies them: per resource, the highest weight wins."""
    result: dict[str, tuple[Any, Resource]] = {}
    for overlay in sorted(overlays, key=overlay_weight):
        for resource, value in (overlay.get("spec", "capacity") or {}).items():
            result[resource] = (value, overlay)
    return result


def quotas_in(view: StackView, namespace: str) -> list[Resource]:
    """The ResourceQuotas of one namespace."""
    return list(view.memo("quotas-by-namespace", lambda: by_namespace(view.of_type(RESOURCE_QUOTA))).get(namespace, ()))


def by_namespace(objects: list[Resource]) -> dict[str, list[Resource]]:
    """Grouped once, in the given order, not rescanned per namespace; a non-string namespace names no namespace."""
    grouped: dict[str, list[Resource]] = defaultdict(list)
    for resource in objects:
        namespace = resource.get("metadata", "namespace")
        if isinstance(namespace, str):
            grouped[namespace].append(resource)
    return grouped
