"""Which GPU device plugin (and GPU exporter) lands on which pool's nodes, computed the way the charts render
their DaemonSets.

A DaemonSet's pod lands on a node when its nodeSelector matches the node's labels, one of its required node
affinity terms holds and it tolerates every NoSchedule/NoExecute taint. The pack sees a chart's values, not the
DaemonSet, so the values are merged over the chart defaults as Helm coalesces them (maps merge key by key, a
`null` deletes a key, lists and scalars replace: `affinity: {}` keeps the chart's affinity, helm/helm#5407) and
the three fields are read as the templates write them (`{{- with }}` / `{{- if }}`: an empty map or list renders
nothing, so an empty selector admits every node).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from gpushare import compat, names
from gpushare.catalog import load_catalog

from .hami import dra_enabled, is_hami_pool
from .kube import Pool, describe_requirement, pools, requirement_matches, tolerates
from .stack import EKS_MANAGED_NODE_GROUP, EKS_NODE_GROUP, NODE_POOL, Resource, StackView, version_of

NVIDIA, HAMI, MOCK, DCGM, POD = "nvidia", "hami", "mock", "dcgm", "pod"
WHAT = {
    NVIDIA: "NVIDIA's device plugin",
    HAMI: "HAMi's device plugin",
    MOCK: "the mock device plugin",
    DCGM: "the GPU exporter",
    POD: "its pods",
}
# The node label that keeps each DaemonSet on its own pools: gpushare gives it to exactly those pools.
OWN_LABEL = {
    NVIDIA: f'{names.NVIDIA_PLUGIN_NODE_LABEL[0]}: "{names.NVIDIA_PLUGIN_NODE_LABEL[1]}"',
    HAMI: f'{names.HAMI_NODE_LABEL[0]}: "{names.HAMI_NODE_LABEL[1]}"',
    MOCK: f'{names.HAMI_NODE_LABEL[0]}: "{names.HAMI_NODE_LABEL[1]}"',
    DCGM: f"{names.SHARING_LABEL} (any value)",
}
# EKS managed node groups spell taint effects the AWS way.
EKS_TAINT_EFFECTS = {"NO_SCHEDULE": "NoSchedule", "NO_EXECUTE": "NoExecute", "PREFER_NO_SCHEDULE": "PreferNoSchedule"}
BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")  # PreferNoSchedule keeps no DaemonSet pod away


def helm_merge(defaults: Any, values: Any) -> Any:
    """`values` over a chart's `defaults` as Helm coalesces them: maps merge, null deletes, the rest replaces."""
    if not isinstance(defaults, dict) or not isinstance(values, dict):
        return values
    merged = dict(defaults)
    for key, value in values.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = helm_merge(merged.get(key), value)
    return merged


def _at(values: Any, *path: str) -> Any:
    for step in path:
        values = values.get(step) if isinstance(values, dict) else None
    return values


class Blocker(NamedTuple):
    """The field that keeps a DaemonSet off a node: its key and rendered value, why, and for a taint the
    toleration that would admit it."""

    key: str
    value: Any
    why: str
    toleration: str | None = None


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one per DaemonSet
class Placement:
    """Where one device-plugin DaemonSet lands; `keys` say where its nodeSelector, affinity and tolerations come
    from (values keys of a release, pod-spec paths of a DaemonSet object)."""

    kind: str
    resource: Resource
    keys: tuple[str, str, str]
    node_selector: dict[str, str]
    terms: tuple[tuple[dict[str, Any], ...], ...] | None  # None: no required node affinity rendered
    tolerations: tuple[dict[str, Any], ...]
    off: tuple[str, Any] | None = None  # (values key, value) that stops the chart rendering it at all
    fixed: bool = False  # node selector and tolerations are fixed in the chart template; keys[0] turns it on

    @property
    def label(self) -> str:
        return f"{self.resource.label} ({WHAT[self.kind]})"

    def blocker(self, labels: Mapping[str, str], taints: tuple[dict[str, Any], ...]) -> Blocker | None:
        """The first field that keeps the pod off a node with these labels and taints; None when it lands there."""
        if self.off is not None:
            return Blocker(*self.off, "the chart renders no DaemonSet")
        for key, value in self.node_selector.items():
            if labels.get(key) != value:
                return Blocker(self.keys[0], self.node_selector, f'the nodes carry no label {key}: "{value}"')
        if self.terms is not None and not any(
            term and all(requirement_matches(e, labels) for e in term) for term in self.terms
        ):
            why = "no term of its required node affinity holds for their labels"
            return Blocker(self.keys[1], show_terms(self.terms), why)
        for taint in taints:
            if taint.get("effect") in BLOCKING_EFFECTS and not tolerates(self.tolerations, taint):
                toleration = f"{{key: {taint.get('key')}, operator: Exists, effect: {taint.get('effect')}}}"
                why = f"it does not tolerate their taint {show_taint(taint)}"
                return Blocker(self.keys[2], list(self.tolerations), why, toleration)
        return None


def show_terms(terms: tuple[tuple[dict[str, Any], ...], ...]) -> str:
    """Required node affinity as `a In [x] and b Exists or c In [y]`."""
    return " or ".join(" and ".join(describe_requirement(e) for e in term) or "(empty term)" for term in terms)


def show_taint(taint: Mapping[str, Any]) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def _terms(affinity: Any) -> tuple[tuple[dict[str, Any], ...], ...] | None:
    required = _at(affinity, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(required, dict):
        return None
    terms = required.get("nodeSelectorTerms")
    return tuple(
        tuple(e for e in term.get("matchExpressions") or [] if isinstance(e, dict))
        for term in (terms if isinstance(terms, list) else ())
        if isinstance(term, dict)
    )


def _selector(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items() if v is not None} if isinstance(value, dict) else {}


def _tolerations(value: Any) -> tuple[dict[str, Any], ...]:
    return tuple(t for t in value if isinstance(t, dict)) if isinstance(value, list) else ()


NVIDIA_CHART_DEFAULTS: dict[str, Any] = {
    "nodeSelector": {},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": list(term)} for term in compat.NVIDIA_CHART_DEFAULT_NODE_SELECTOR_TERMS
                ]
            }
        }
    },
    "tolerations": list(compat.NVIDIA_CHART_DEFAULT_TOLERATIONS),
    "devicePlugin": {"enabled": True},
}


def nvidia_placement(release: Resource) -> Placement:
    """deployments/helm/nvidia-device-plugin templates/daemonset-device-plugin.yml (v0.20.0): `with` on each field."""
    values = helm_merge(NVIDIA_CHART_DEFAULTS, release.get("values") or {})
    enabled = _at(values, "devicePlugin", "enabled")
    return _from_fields(
        NVIDIA, release, "values", values, None if enabled else ("values.devicePlugin.enabled", enabled)
    )


def _hami(release: Resource) -> list[Placement]:
    """charts/hami templates/device-plugin/daemonsetnvidia.yaml and daemonsetmock.yaml (2.8.3, 2.10.0): the plugin's
    `if` on the selector and tolerations, no affinity; the chart's own mock only when enabled."""
    version = str(release.get("version") or "")
    key = compat.hami_node_selector_key(version) if version_of(version) else "nvidiaNodeSelector"
    defaults = {
        "devicePlugin": {"enabled": True, key: dict([names.HAMI_NODE_LABEL]), "tolerations": []},
        "mockDevicePlugin": {"enabled": False},
    }
    values = helm_merge(defaults, release.get("values") or {})
    plugin = values.get("devicePlugin") if isinstance(values.get("devicePlugin"), dict) else {}
    off = None
    if not plugin.get("enabled"):
        off = ("values.devicePlugin.enabled", plugin.get("enabled"))
    elif dra_enabled(release):
        off = ("values.dra.enabled", True)
    found = [
        Placement(
            kind=HAMI,
            resource=release,
            keys=(f"values.devicePlugin.{key}", "(no affinity in the chart)", "values.devicePlugin.tolerations"),
            node_selector=_selector(plugin.get(key)),
            terms=None,
            tolerations=_tolerations(plugin.get("tolerations")),
            off=off,
        )
    ]
    if _at(values, "mockDevicePlugin", "enabled"):
        found.append(
            Placement(
                kind=MOCK,
                resource=release,
                keys=("values.mockDevicePlugin.enabled",) * 3,
                node_selector={},
                terms=None,
                tolerations=compat.HAMI_CHART_MOCK_TOLERATIONS,
                fixed=True,
            )
        )
    return found


def _dcgm(release: Resource) -> Placement:
    """NVIDIA/dcgm-exporter deployment/templates/daemonset.yaml (4.5.1-4.8.0 to 4.5.3-4.8.2): `if` on affinity and
    node selector, `with` on tolerations."""
    defaults = {"nodeSelector": {}, "affinity": {}, "tolerations": list(compat.DCGM_CHART_DEFAULT_TOLERATIONS)}
    return _from_fields(DCGM, release, "values", helm_merge(defaults, release.get("values") or {}))


def _from_fields(
    kind: str, resource: Resource, prefix: str, fields: Any, off: tuple[str, Any] | None = None
) -> Placement:
    """Placement from the same-named keys nodeSelector, affinity and tolerations of `fields` (a chart's merged
    values or a pod spec), found under `prefix`."""
    return Placement(
        kind=kind,
        resource=resource,
        keys=(f"{prefix}.nodeSelector", f"{prefix}.affinity", f"{prefix}.tolerations"),
        node_selector=_selector(_at(fields, "nodeSelector")),
        terms=_terms(_at(fields, "affinity")),
        tolerations=_tolerations(_at(fields, "tolerations")),
        off=off,
    )


def pod_placement(resource: Resource, prefix: str, spec: Any) -> Placement:
    """Where pods of a pod spec land (a PodTemplate's, whose pods Karpenter simulates for a CapacityBuffer)."""
    return _from_fields(POD, resource, prefix, spec)


def gpu_daemonsets(view: StackView) -> list[Placement]:
    """Every GPU device plugin and GPU exporter DaemonSet the stack renders or asks a chart to render."""

    def compute() -> list[Placement]:
        found = [nvidia_placement(r) for r in view.releases(names.NVIDIA_PLUGIN_CHART)]
        for release in view.releases(names.HAMI_CHART):
            found += _hami(release)
        found += [_dcgm(r) for r in view.releases(names.DCGM_CHART)]
        pod = "spec.template.spec"
        return found + [_from_fields(MOCK, ds, pod, ds.get(*pod.split("."))) for ds in view.mock_daemonsets()]

    return list(view.memo("gpu-daemonsets", compute))


def takes_nvidia_gpus(pool: Pool) -> bool:
    """Labelled exclusive or time-sliced, or launching GPU types of the catalog (and not served by HAMi)."""
    if pool.labels.get(names.SHARING_LABEL) in (names.SHARING_EXCLUSIVE, names.SHARING_TIMESLICE):
        return True
    catalog = load_catalog()
    return any(
        t in catalog.instance_type_names and catalog.instance_type(t).gpu_count > 0 for t in pool.instance_types or ()
    )


def role(view: StackView, pool: Pool) -> str:
    """HAMI for pools HAMi serves, NVIDIA for pools taking whole or time-sliced GPUs, "" for CPU pools."""
    if is_hami_pool(view, pool):
        return HAMI
    return NVIDIA if takes_nvidia_gpus(pool) else ""


def expected_kinds(pool_role: str, rendered: set[str]) -> frozenset[str]:
    """Exactly the DaemonSets a pool's nodes need: HAMi's plugin plus the mock (where the stack renders one) on HAMi
    pools, NVIDIA's on exclusive and time-sliced ones, the GPU exporter (where deployed) on both, none on CPU nodes."""
    if pool_role == HAMI:
        return frozenset({HAMI} | ({MOCK, DCGM} & rendered))
    return frozenset({NVIDIA} | ({DCGM} & rendered)) if pool_role == NVIDIA else frozenset()


def node_shapes(pool: Pool) -> list[dict[str, str]]:
    """The label sets of the pool's nodes: per instance type it allows (template labels and the nodepool label
    only when it allows any)."""
    if pool.resource.type != NODE_POOL:
        return [dict(pool.labels)]
    if not pool.instance_types:
        return [{**pool.labels, names.NODEPOOL_LABEL: pool.name}]
    return [pool.node_labels(t) for t in pool.instance_types]


def reach(placement: Placement, pool: Pool, shapes: list[dict[str, str]]) -> tuple[bool, Blocker | None]:
    """(whether it lands on some node of the pool, why it misses one: None when it lands on all); `shapes` are the
    pool's node_shapes, computed once per pool."""
    blockers = [placement.blocker(labels, pool.taints) for labels in shapes]
    return any(b is None for b in blockers), next((b for b in blockers if b is not None), None)


def node_groups(view: StackView) -> list[Pool]:
    """The EKS managed node groups (the system nodes) as pools of CPU nodes: their labels and taints."""
    found = []
    for group in view.of_type(EKS_NODE_GROUP) or view.of_type(EKS_MANAGED_NODE_GROUP):
        taints = tuple(
            {**t, "effect": EKS_TAINT_EFFECTS.get(str(t.get("effect")), t.get("effect"))}
            for t in group.get("taints") or []
            if isinstance(t, dict)
        )
        labels = group.get("labels")
        found.append(
            Pool(
                resource=group,
                name=str(group.get("nodeGroupName") or group.name),
                labels={str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {},
                instance_types=None,
                taints=taints,
                limits={},
                node_class=None,
                capacity_types=None,
            )
        )
    return found


def pools_by_role(view: StackView) -> list[tuple[Pool, str]]:
    """Every NodePool with its role, then every managed node group as CPU nodes."""
    return [(pool, role(view, pool)) for pool in pools(view)] + [(group, "") for group in node_groups(view)]
