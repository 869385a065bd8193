"""Karpenter CapacityBuffers in a stack: the PodTemplate each names, what one warm pod asks, how many Karpenter keeps
and which pools its pods can land on.

Karpenter (kubernetes-sigs/karpenter v1.15.0) resolves `spec.podTemplateRef` in the buffer's namespace, counts
`min(max(replicas, percentage), limits)` pods (pkg/controllers/capacitybuffer computeReplicas; percentage needs a
scalableRef) and places them like pending pods, so the template's nodeSelector, required node affinity and
tolerations decide the pool, and its requests (summed over containers, as Karpenter sums a pod's) the room.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from functools import cached_property
from typing import Any

from gpushare import names
from gpushare.capacity import PodShape

from .kube import CAPACITY_TYPES, Pool, pools, quantity
from .placement import Placement, node_shapes, pod_placement, reach
from .pools import PoolView, pool_view
from .stack import CAPACITY_BUFFER, NAMESPACE, POD_TEMPLATE, Resource, StackView

GPU_RESOURCES = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_SHARED)
MIB = 2**20


@dataclass(frozen=True, eq=False)  # one per CapacityBuffer, compared by identity
class Buffer:
    resource: Resource
    namespace: str
    template: Resource | None  # the PodTemplate spec.podTemplateRef names in the buffer's namespace

    @property
    def template_name(self) -> Any:
        return self.resource.get("spec", "podTemplateRef", "name")

    @property
    def pod_spec(self) -> dict[str, Any]:
        spec = self.template.get("template", "spec") if self.template is not None else None
        return spec if isinstance(spec, dict) else {}

    @cached_property
    def containers(self) -> list[dict[str, Any]]:
        found = self.pod_spec.get("containers")
        return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []

    @cached_property
    def container_requests(self) -> list[dict[str, Decimal]]:
        """Per container what it asks: its requests, a limit standing in for a missing request (the API server
        defaults requests from limits, and Karpenter reads them so)."""
        found = []
        for container in self.containers:
            resources = container.get("resources") if isinstance(container.get("resources"), dict) else {}
            asked: dict[str, Decimal] = {}
            for side in ("limits", "requests"):
                given = resources.get(side)
                for name, value in given.items() if isinstance(given, dict) else ():
                    amount = quantity(value)
                    if amount is not None:
                        asked[str(name)] = amount
            found.append(asked)
        return found

    @cached_property
    def shape(self) -> PodShape:
        """One warm pod, summed over its containers as Karpenter sums them, in the units nodes register."""
        total: dict[str, Decimal] = {}
        for asked in self.container_requests:
            for name, amount in asked.items():
                total[name] = total.get(name, Decimal(0)) + amount
        return PodShape(
            {r: math.ceil(total[r]) for r in GPU_RESOURCES if total.get(r)},
            math.ceil(total.get("cpu", Decimal(0)) * 1000),
            math.ceil(total.get("memory", Decimal(0)) / MIB),
        )

    @property
    def asks_gpus(self) -> bool:
        return bool(self.shape.gpu)

    @cached_property
    def replicas(self) -> int | None:
        """Warm pods Karpenter keeps for a template buffer: replicas capped by limits, or limits alone (None: neither
        can be read)."""
        replicas = self.resource.get("spec", "replicas")
        count = replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else None
        limits = self.resource.get("spec", "limits")
        per_pod = {**{r: Decimal(a) for r, a in self.shape.gpu.items()}}
        per_pod["cpu"] = Decimal(self.shape.cpu_millis) / 1000
        per_pod["memory"] = Decimal(self.shape.memory_mib * MIB)
        bounds = [
            int(amount // per_pod[name])
            for name, value in (limits.items() if isinstance(limits, dict) else ())
            if (amount := quantity(value)) is not None and per_pod.get(name)
        ]
        if bounds:
            return min([*bounds, count]) if count is not None else min(bounds)
        return count

    @property
    def count_key(self) -> str:
        """The field the warm pod count comes from: replicas, or limits alone."""
        replicas = self.resource.get("spec", "replicas")
        return "spec.replicas" if isinstance(replicas, int) and not isinstance(replicas, bool) else "spec.limits"

    @property
    def count_value(self) -> object:
        return self.resource.get(*self.count_key.split("."))

    @cached_property
    def placement(self) -> Placement:
        return pod_placement(self.template or self.resource, "template.spec", self.pod_spec)


def buffers(view: StackView) -> list[Buffer]:
    """Every CapacityBuffer with the PodTemplate it names, sorted by namespace and name."""

    def compute() -> list[Buffer]:
        templates = {(str(t.get("metadata", "namespace")), t.object_name): t for t in view.of_type(POD_TEMPLATE)}
        found = []
        for resource in view.of_type(CAPACITY_BUFFER):
            namespace = str(resource.get("metadata", "namespace") or "default")
            ref = resource.get("spec", "podTemplateRef", "name")
            found.append(Buffer(resource, namespace, templates.get((namespace, str(ref))) if ref else None))
        return sorted(found, key=lambda b: (b.namespace, b.resource.object_name))

    return list(view.memo("capacity-buffers", compute))


def team_namespace(view: StackView, name: str) -> Resource | None:
    """The namespace `name` when it is a gpushare team's (labelled with the team label)."""
    for namespace in view.objects(NAMESPACE, name):
        if names.TEAM_LABEL in (namespace.get("metadata", "labels") or {}):
            return namespace
    return None


def capacity_shapes(pool: Pool) -> list[dict[str, str]]:
    """The pool's node label sets, once per capacity type it offers: a template may select one by
    karpenter.sh/capacity-type, which Karpenter sets on every node."""
    return [
        {**labels, names.CAPACITY_TYPE_LABEL: capacity}
        for labels in node_shapes(pool)
        for capacity in pool.capacity_types or CAPACITY_TYPES
    ]


def landing_pools(view: StackView, buffer: Buffer) -> list[Pool]:
    """The NodePools some node of which the buffer's pods fit by labels and taints (what Karpenter may launch)."""
    return [pool for pool in pools(view) if reach(buffer.placement, pool, capacity_shapes(pool))[0]]


@dataclass(frozen=True)
class KeptNodes:
    """A buffer whose warm pods land on exactly one pool gpushare can size: how many it keeps and the fewest units
    of the pool's limit the whole nodes holding them take."""

    buffer: Buffer
    pool: PoolView
    replicas: int
    units: int


def kept_nodes(view: StackView) -> list[KeptNodes]:
    """Every buffer the limit rules can size (others are named by capacity-buffer-selects-team-pool or
    capacity-buffer-fits-hami-gpus), in buffer order."""

    def compute() -> list[KeptNodes]:
        found = []
        for buffer in buffers(view):
            replicas = buffer.replicas
            if buffer.template is None or not replicas or replicas < 1 or not buffer.asks_gpus:
                continue
            landing = landing_pools(view, buffer)
            sized = pool_view(view, landing[0]) if len(landing) == 1 else None
            units = sized.units_needed(buffer.shape, replicas) if sized is not None else None
            if sized is not None and units is not None:
                found.append(KeptNodes(buffer, sized, replicas, units))
        return found

    return list(view.memo("kept-nodes", compute))
