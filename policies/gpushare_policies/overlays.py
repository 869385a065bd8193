"""Rules 1-4: HAMi pools carry the labels the device plugins select, and overlays say what nodes register."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from pydantic import Field

from gpushare import names
from gpushare.compat import MOCK_MAX_UNITS_PER_RESOURCE

from .hami import HAMI_RESOURCES, Hami, expected_capacity, is_hami_pool
from .kube import Pool, effective_capacity, overlay_weight, overlays_for, pools, quantity, selector_unmet, tolerates
from .rule import Finding, Rule, RuleConfig, finding
from .stack import NODE_OVERLAY, Resource, StackView

NODE_RESOURCES = (names.GPU, *HAMI_RESOURCES)


def hami_pools(view: StackView) -> list[Pool]:
    return [pool for pool in pools(view) if is_hami_pool(view, pool)]


def _taint(taint: dict) -> str:
    value = f"={taint['value']}" if taint.get("value") else ""
    return f"{taint.get('key')}{value}:{taint.get('effect')}"


def check_labels(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    mocks = view.mock_daemonsets()
    for pool in hami_pools(view):
        if hami is None:
            yield Finding(
                pool.resource,
                f"{pool.resource.label}: shares GPUs with HAMi but the stack has no `{names.HAMI_CHART}` Helm release, "
                "so nothing registers vGPUs on its nodes. Fix: deploy the HAMi chart (gpushare's Hami component).",
            )
        else:
            for key, value in hami.node_selector.items():
                if pool.labels.get(key) != value:
                    yield finding(
                        pool.resource,
                        f'spec.template.metadata.labels["{key}"]',
                        pool.labels.get(key),
                        f'HAMi chart {hami.version} runs its device plugin only on nodes labelled {key}: "{value}" '
                        f"(values.devicePlugin.{hami.selector_key}), so these nodes never register {names.GPU} vGPUs "
                        "and GPU pods stay Pending",
                        f'add {key}: "{value}" to the pool template labels',
                    )
            for index, taint in enumerate(pool.taints):
                if not tolerates(hami.tolerations, taint):
                    yield finding(
                        pool.resource,
                        f"spec.template.spec taint [{index}]",
                        _taint(taint),
                        f"the HAMi device plugin (Release {hami.resource.object_name} "
                        "values.devicePlugin.tolerations) does not tolerate it, so it never starts on these nodes",
                        f"add {{key: {taint.get('key')}, operator: Exists, effect: {taint.get('effect')}}} "
                        "to values.devicePlugin.tolerations",
                    )
        for mock in mocks:
            pod_spec = mock.get("spec", "template", "spec") or {}
            for key, current, required in selector_unmet(pod_spec, pool.labels):
                yield finding(
                    pool.resource,
                    key,
                    current,
                    f"{mock.label} requires {required}, so the mock plugin never registers "
                    f"{names.GPU_MEMORY} there and NodeClaims stay ResourceNotRegistered",
                    "label the pool template so the mock DaemonSet's node selection matches",
                )
            for index, taint in enumerate(pool.taints):
                if not tolerates(pod_spec.get("tolerations") or [], taint):
                    yield finding(
                        pool.resource,
                        f"spec.template.spec taint [{index}]",
                        _taint(taint),
                        f"{mock.label} does not tolerate it, so the mock plugin never starts on these nodes",
                        f"add a toleration for {taint.get('key')} to the DaemonSet's pod template",
                    )


def check_coverage(view: StackView, _config: None) -> Iterator[Finding]:
    for pool in hami_pools(view):
        if pool.instance_types is None:
            yield Finding(
                pool.resource,
                f"{pool.resource.label}: spec.template.spec.requirements has no "
                f"`{names.INSTANCE_TYPE_LABEL} In [...]`: "
                "the pool can launch types no overlay describes. Fix: list the pool's instance types with an In "
                "requirement (gpushare does this from pools[].instanceTypes).",
            )
            continue
        for instance_type in pool.instance_types:
            capacity = effective_capacity(overlays_for(view, pool, instance_type))
            missing = [resource for resource in NODE_RESOURCES if resource not in capacity]
            if missing:
                yield Finding(
                    pool.resource,
                    f"{pool.resource.label}: instance type {instance_type} has no NodeOverlay setting "
                    f"{', '.join(missing)}: Karpenter cannot see what HAMi registers and answers "
                    "'no instance type has enough resources' for pods that ask for it. Fix: add a NodeOverlay with "
                    f"requirements {names.NODEPOOL_LABEL} In [{pool.name}] and {names.INSTANCE_TYPE_LABEL} In "
                    f"[{instance_type}] setting those resources (gpushare renders one per pool and type).",
                )


class CapacityConfig(RuleConfig):
    allow_below_registered: bool = Field(
        default=False,
        alias="allowBelowRegistered",
        description="Accept overlays that promise less than a node registers (headroom); more is always refused.",
    )


def check_capacity(view: StackView, config: CapacityConfig) -> Iterator[Finding]:
    for overlay in sorted(view.of_type(NODE_OVERLAY), key=lambda r: r.object_name):
        for resource in (names.GPU_MEMORY, names.GPU_CORES):
            value = overlay.get("spec", "capacity", resource)
            amount = quantity(value) if value is not None else None
            if amount is not None and amount > MOCK_MAX_UNITS_PER_RESOURCE:
                yield finding(
                    overlay,
                    f'spec.capacity["{resource}"]',
                    value,
                    f"the mock device plugin cannot advertise more than {MOCK_MAX_UNITS_PER_RESOURCE} units of one "
                    "resource per node (the kubelet's gRPC limit; the node would register 0)",
                    "use this instance type in an exclusive pool",
                )
    hami = Hami.of(view)
    if hami is None:
        return
    for pool in hami_pools(view):
        for instance_type in pool.instance_types or ():
            expected = expected_capacity(hami, instance_type)
            if isinstance(expected, str):
                yield Finding(pool.resource, f"{pool.resource.label}: {expected}. Fix: use catalog types that fit.")
                continue
            capacity = effective_capacity(overlays_for(view, pool, instance_type))
            for resource, registered in expected.resources().items():
                if resource not in capacity:
                    continue  # hami-overlay-coverage reports it
                value, overlay = capacity[resource]
                amount = quantity(value)
                where = f'spec.capacity["{resource}"]'
                basis = (
                    f"a {instance_type} node in pool {pool.name} registers {registered} under HAMi {hami.version} "
                    f"(deviceSplitCount {hami.profile.device_split_count}, "
                    f"deviceMemoryScaling {hami.profile.device_memory_scaling}, "
                    f"deviceCoreScaling {hami.profile.device_core_scaling})"
                )
                if amount is None:
                    yield finding(overlay, where, value, "not a Kubernetes quantity", f'set it to "{registered}"')
                elif amount > registered:
                    yield finding(
                        overlay,
                        where,
                        value,
                        f"{basis}; promising more makes Karpenter launch nodes for pods that can never fit",
                        f'set it to "{registered}"',
                    )
                elif amount < registered and not config.allow_below_registered:
                    yield finding(
                        overlay,
                        where,
                        value,
                        f"{basis}; promising less makes Karpenter skip this type or pick larger nodes than needed",
                        f'set it to "{registered}" (or allow it with policy config allowBelowRegistered)',
                    )


def check_conflicts(view: StackView, _config: None) -> Iterator[Finding]:
    conflicts: dict[tuple[tuple[str, ...], str, int, str], list[str]] = defaultdict(list)
    by_name: dict[str, Resource] = {}
    for pool in pools(view):
        for instance_type in pool.instance_types or ():
            setters: dict[tuple[int, str], list[Resource]] = defaultdict(list)
            for overlay in overlays_for(view, pool, instance_type):
                for resource in overlay.get("spec", "capacity") or {}:
                    setters[(overlay_weight(overlay), resource)].append(overlay)
            for (weight, resource), overlays in setters.items():
                if len(overlays) > 1:
                    names_ = tuple(sorted(o.object_name for o in overlays))
                    by_name.update((o.object_name, o) for o in overlays)
                    conflicts[(names_, resource, weight, pool.name)].append(instance_type)
    for (overlay_names, resource, weight, pool_name), types in sorted(conflicts.items()):
        first = by_name[overlay_names[0]]
        others = ", ".join(overlay_names[1:])
        yield Finding(
            first,
            f'{first.label}: spec.capacity["{resource}"] at spec.weight {weight} is also set by NodeOverlay {others} '
            f"for pool {pool_name}, instance types {', '.join(types)}: Karpenter applies neither "
            "(ValidationSucceeded=False, reason Conflict). Fix: give one overlay a different spec.weight or "
            "narrow its requirements so only one applies.",
        )


RULES = (
    Rule(
        name="hami-pool-labels-match-device-plugins",
        description="Every HAMi NodePool's template labels and taints let both the HAMi device plugin and the "
        "mock device plugin run on its nodes.",
        why="Without the selector label or a toleration the plugins never start: nodes register no vGPUs and "
        "GPU pods stay Pending while Karpenter keeps the nodes.",
        remediation='Add the HAMi node-selector label (gpu: "on"; key devicePlugin.nvidiaNodeSelector from chart '
        "2.8.0, nvidianodeSelector before) to the pool template; tolerate every pool taint in "
        "devicePlugin.tolerations and in the mock DaemonSet.",
        enforcement="mandatory",
        severity="critical",
        check=check_labels,
    ),
    Rule(
        name="hami-overlay-coverage",
        description="Every instance type a HAMi NodePool can launch has NodeOverlays for that pool setting "
        "nvidia.com/gpu, gpumem, gpucores and gpumem-percentage.",
        why="Karpenter only knows an instance type's physical GPUs; without an overlay it answers 'no instance "
        "type has enough resources' for pods asking for vGPUs or GPU memory.",
        remediation="List the pool's types with node.kubernetes.io/instance-type In [...] and add one NodeOverlay "
        "per pool and type (karpenter.sh/nodepool In [pool], instance-type In [type]).",
        enforcement="mandatory",
        severity="critical",
        check=check_coverage,
    ),
    Rule(
        name="hami-overlay-capacity-matches",
        description="Each overlay's nvidia.com/gpu, gpumem, gpucores and gpumem-percentage equal what the node "
        "registers under the HAMi release's sharing profile, and stay under the mock plugin's ceiling.",
        why="An overlay promising 24000 MiB on a GPU that registers 23028 launches nodes for pods that never fit; "
        "above 123011 units the kubelet registers 0.",
        remediation="Set the overlay capacity to the figures in the README catalog table for the pinned profile "
        "(gpushare renders them from gpushare/catalog.yaml); move types above the ceiling to exclusive pools.",
        enforcement="mandatory",
        severity="critical",
        check=check_capacity,
        config=CapacityConfig,
    ),
    Rule(
        name="node-overlay-no-conflicts",
        description="No two NodeOverlays of equal weight set the same resource for the same pool and instance type.",
        why="Karpenter applies neither of two conflicting overlays (reason Conflict), so capacity silently falls "
        "back to the instance type's own.",
        remediation="Give one overlay a different weight or narrow its requirements.",
        enforcement="mandatory",
        severity="high",
        check=check_conflicts,
    ),
)
