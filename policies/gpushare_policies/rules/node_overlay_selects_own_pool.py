"""Every NodeOverlay selects instance types of its own pool and of no other, judged by where its requirements
point rather than by the pool it is missing from."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from gpushare import names
from gpushare.catalog import load_catalog

from ..kube import Pool, describe_requirement, overlays_for, pools
from ..rule import Finding, Rule, finding
from ..stack import NODE_OVERLAY, Resource, StackView, sorted_by_name


def _launchable(pool: Pool) -> tuple[str, ...]:
    """The types a pool can launch: its `In` list, or every catalog type when it allows any."""
    return pool.instance_types if pool.instance_types is not None else tuple(load_catalog().instance_type_names)


def own_pool(overlay: Resource) -> str | None:
    """The pool an overlay was made for: its gpushare pool label, else the one pool its nodepool `In` names."""
    labelled = overlay.get("metadata", "labels", names.POOL_LABEL)
    if isinstance(labelled, str):
        return labelled
    named = {
        str(v)
        for r in overlay.get("spec", "requirements") or []
        if isinstance(r, dict) and r.get("key") == names.NODEPOOL_LABEL and r.get("operator") == "In"
        for v in r.get("values") or []
    }
    return named.pop() if len(named) == 1 else None


def selected(view: StackView) -> dict[str, dict[str, list[str]]]:
    """Overlay URN -> pool name -> the pool's instance types its requirements select (Karpenter matches an overlay
    against the nodepool label, the pool's template labels and each instance type's labels; an empty requirements
    list selects every type of every pool). Built from the pack's overlay index, so linear in pools and types."""
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for pool in pools(view):
        for instance_type in _launchable(pool):
            for overlay in overlays_for(view, pool, instance_type):
                found[overlay.urn][pool.name].append(instance_type)
    return found


def _shown(by_pool: dict[str, list[str]], all_pools: dict[str, Pool]) -> str:
    def types(name: str) -> str:
        chosen = by_pool[name]
        if all_pools[name].instance_types is None:
            return f"any of {len(chosen)} catalog types"
        if len(chosen) == len(all_pools[name].instance_types or ()) > 1:
            return f"all {len(chosen)} types"
        return ", ".join(chosen)

    return "; ".join(f"{name} ({types(name)})" for name in sorted(by_pool))


def _requirements(overlay: Resource) -> str:
    shown = [describe_requirement(r) for r in overlay.get("spec", "requirements") or [] if isinstance(r, dict)]
    return ", ".join(shown) if shown else "[] (selects every node)"


def check_overlay_targets(view: StackView, _config: None) -> Iterator[Finding]:
    by_overlay = selected(view)
    all_pools = {pool.name: pool for pool in pools(view)}
    for overlay in sorted_by_name(view.of_type(NODE_OVERLAY)):
        by_pool = by_overlay.get(overlay.urn, {})
        own = own_pool(overlay)
        if own is None and len(by_pool) == 1:
            own = next(iter(by_pool))  # unlabelled and aimed at one pool by other labels: that pool is its own
        others = {name: types for name, types in by_pool.items() if name != own}
        requirements = _requirements(overlay)
        if own is not None and own not in all_pools:
            yield finding(
                overlay,
                f'metadata.labels["{names.POOL_LABEL}"]',
                own,
                "no NodePool of that name exists, so the overlay tells Karpenter about nodes no pool launches"
                + (f"; its requirements ({requirements}) select {_shown(by_pool, all_pools)}" if by_pool else ""),
                "delete the overlay or point it at an existing pool",
            )
        elif others:
            if own is None:
                whose = "more than one pool"
            else:
                whose = f"{'besides' if own in by_pool else 'instead of'} its own pool {own}"
            yield finding(
                overlay,
                "spec.requirements",
                requirements,
                f"Karpenter applies it to {_shown(by_pool, all_pools)}, {whose}: those nodes are sized by "
                "capacity and prices meant for another pool's plugin and GPUs",
                f"require {names.NODEPOOL_LABEL} In [{own or 'its pool'}] and {names.INSTANCE_TYPE_LABEL} In [its "
                "type] (gpushare renders exactly these)",
            )
        elif own is not None and not by_pool:
            yield finding(
                overlay,
                "spec.requirements",
                requirements,
                f"it selects none of pool {own}'s instance types ({', '.join(_launchable(all_pools[own]))}), so "
                "Karpenter never applies it there",
                f"require {names.NODEPOOL_LABEL} In [{own}] and {names.INSTANCE_TYPE_LABEL} In [one of those types]",
            )
        elif own is None and not by_pool:
            yield finding(
                overlay,
                "spec.requirements",
                requirements,
                "it selects no instance type of any pool, so Karpenter never applies it",
                f"require {names.NODEPOOL_LABEL} In [a pool] and {names.INSTANCE_TYPE_LABEL} In [one of its types]",
            )


RULE = Rule(
    name="node-overlay-selects-own-pool",
    order=20,
    description="Every NodeOverlay's requirements, evaluated as Karpenter matches them against every pool's "
    "nodepool label, template labels and instance types, select types of its own pool (its "
    f"{names.POOL_LABEL} label, else the one pool its nodepool requirement names) and of no other.",
    why="An overlay re-pointed at another pool's label, or a catch-all (`requirements: []` selects every node, "
    "karpenter #2655), changes the capacity and price Karpenter plans with on pools it was not made for: nodes "
    "are launched for pods their plugin cannot serve.",
    remediation=f"Give every overlay {names.NODEPOOL_LABEL} In [its pool] and {names.INSTANCE_TYPE_LABEL} In "
    "[its type] (gpushare renders one per pool and type).",
    enforcement="mandatory",
    severity="high",
    check=check_overlay_targets,
)
