"""Every pool's nodes get exactly the device plugins their sharing mode needs (and the GPU exporter), computed
from where each rendered DaemonSet lands."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from gpushare import names

from ..placement import (
    DCGM,
    HAMI,
    MOCK,
    NVIDIA,
    OWN_LABEL,
    WHAT,
    Blocker,
    Placement,
    expected_kinds,
    gpu_daemonsets,
    node_shapes,
    pools_by_role,
    reach,
    show_terms,
)
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView

ROLE = {HAMI: "HAMi pools", NVIDIA: "exclusive/time-sliced pools", "": "CPU pools and node groups"}
# What the nodes of a pool miss without the plugin.
MISSING = {
    NVIDIA: f"register no {names.GPU}, never initialize and bill until they expire",
    HAMI: f"register no {names.GPU} vGPUs and GPU pods stay Pending",
    MOCK: f"never register {names.GPU_MEMORY}/{names.GPU_CORES} and their NodeClaims stay ResourceNotRegistered",
    DCGM: "export no GPU metrics: the utilization panels and GpuNodeIdle see nothing of them",
}
# What goes wrong when the plugin also lands where it does not belong.
EXTRA = {
    NVIDIA: f"a second plugin registers {names.GPU} beside the pool's own and the two fight over it (HAMi #829)",
    HAMI: f"a second plugin registers {names.GPU} beside the pool's own and the two fight over it (HAMi #646)",
    MOCK: f"it registers {names.GPU_MEMORY}/{names.GPU_CORES} that no HAMi scheduler serves there",
}
ON_CPU_NODES = "its pods start on nodes without a GPU, where they fail and restart"
DEPLOY = {
    NVIDIA: f"deploy the `{names.NVIDIA_PLUGIN_CHART}` chart with devicePlugin.enabled (gpushare does)",
    HAMI: f"deploy the `{names.HAMI_CHART}` chart with devicePlugin.enabled true and dra.enabled false",
}


def _pools(names_: list[str]) -> str:
    return ", ".join(sorted(names_))


def _fix(placement: Placement, blocker: Blocker) -> str:
    """The change that makes the DaemonSet land, for the field that keeps it off."""
    own = OWN_LABEL[placement.kind]
    if placement.off is not None:
        return f"set {blocker.key} so the chart renders the DaemonSet"
    if blocker.toleration is not None:
        return f"add {blocker.toleration} to {blocker.key}"
    if blocker.key == placement.keys[1]:
        return f"let {blocker.key} admit nodes labelled {own}, or set it to null to keep only the node selector"
    return f"set {blocker.key} to {{{own}}} and label those pools' templates {own}"


def _too_wide(placement: Placement) -> tuple[str, Any]:
    """The field (and its rendered value) that lets the DaemonSet onto nodes it does not belong on."""
    if placement.fixed:
        return placement.keys[0], True
    if placement.kind == DCGM:
        return placement.keys[1], show_terms(placement.terms) if placement.terms else None
    return placement.keys[0], placement.node_selector


def _narrow(placement: Placement) -> str:
    """The change that keeps the DaemonSet off nodes it does not belong on."""
    if placement.fixed:
        return f"set {placement.keys[0]} to false and run a mock DaemonSet that selects {OWN_LABEL[MOCK]}"
    if placement.kind == DCGM:
        return f"require {names.SHARING_LABEL} (Exists) in {placement.keys[1]}, a label only GPU pools carry"
    return f"set {placement.keys[0]} to {{{OWN_LABEL[placement.kind]}}} and keep that label off those pools"


def check_device_plugins(view: StackView, _config: None) -> Iterator[Finding]:
    plugins = gpu_daemonsets(view)
    rendered = {p.kind for p in plugins}
    kept: dict[tuple[Placement, str, str, str], list[str]] = defaultdict(list)
    blockers: dict[tuple[Placement, str, str, str], Blocker] = {}
    extra: dict[tuple[Placement, str], list[str]] = defaultdict(list)
    absent: dict[str, list[str]] = defaultdict(list)
    doubled: dict[tuple[Placement, ...], list[str]] = defaultdict(list)
    for pool, pool_role in pools_by_role(view):
        wanted = expected_kinds(pool_role, rendered)
        shapes = node_shapes(pool)
        reached = {placement: reach(placement, pool, shapes) for placement in plugins}
        for kind in sorted(wanted):
            of_kind = [p for p in plugins if p.kind == kind]
            if not of_kind:
                absent[kind].append(pool.name)
                continue
            landing = [p for p in of_kind if reached[p][0]]
            if len(landing) > 1:
                doubled[tuple(landing)].append(pool.name)
            # Every copy is kept off when none lands; a landing one may still miss some of the pool's types.
            for placement in landing or of_kind:
                if (blocked := reached[placement][1]) is not None:
                    group = (placement, blocked.key, blocked.why, ROLE[pool_role])
                    kept[group].append(pool.name)
                    blockers[group] = blocked
        for placement in plugins:
            if placement.kind not in wanted and reached[placement][0]:
                extra[(placement, ROLE[pool_role])].append(pool.name)

    for kind, pool_names in sorted(absent.items()):
        yield finding_about(
            None,
            f"nothing in the stack runs {WHAT[kind]}, so the nodes of pools {_pools(pool_names)} {MISSING[kind]}",
            DEPLOY[kind],
        )
    for group, pool_names in kept.items():
        placement, pool_role, blocked = group[0], group[3], blockers[group]
        yield finding(
            placement.resource,
            blocked.key,
            blocked.value,
            f"{WHAT[placement.kind]} never lands on the {pool_role} {_pools(pool_names)} ({blocked.why}), so "
            f"their nodes {MISSING[placement.kind]}",
            _fix(placement, blocked),
        )
    for (placement, pool_role), pool_names in extra.items():
        harm = ON_CPU_NODES if pool_role == ROLE[""] else EXTRA[placement.kind]
        key, value = _too_wide(placement)
        yield finding(
            placement.resource,
            key,
            value,
            f"{WHAT[placement.kind]} also lands on the {pool_role} {_pools(pool_names)} (its node selector, "
            f"required affinity and tolerations admit their nodes): {harm}",
            _narrow(placement),
        )
    for landing, pool_names in doubled.items():
        yield finding_about(
            landing[0].resource,
            f"{' and '.join(p.label for p in landing)} all land on pools {_pools(pool_names)}: two copies of "
            f"{WHAT[landing[0].kind]} run on each node and report or register the same resources twice",
            "keep one of them",
        )


RULE = Rule(
    name="device-plugins-per-pool",
    order=1,
    description="Every HAMi pool's nodes get exactly HAMi's device plugin and the mock, every exclusive or "
    "time-sliced pool's exactly NVIDIA's, both the GPU exporter, CPU pools and node groups none of them: computed "
    "from each DaemonSet's rendered node selector, required node affinity and tolerations (chart defaults merged as "
    "Helm does) against each pool's labels and taints.",
    why="A pool no plugin lands on registers no GPU: its nodes never initialize and bill until they expire. Two "
    f"plugins on one node fight over {names.GPU} (HAMi #646, #829).",
    remediation=f"HAMi pools carry {OWN_LABEL[HAMI]} and the HAMi plugin and mock select it; exclusive and "
    f"time-sliced pools carry {OWN_LABEL[NVIDIA]} and the NVIDIA plugin's values.nodeSelector selects it; the GPU "
    f"exporter requires {names.SHARING_LABEL}; each tolerates its pools' taints (gpushare renders all of this).",
    enforcement="mandatory",
    severity="critical",
    check=check_device_plugins,
)
