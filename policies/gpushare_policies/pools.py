"""What gpushare's pools provide: what one node counts against a pool's limits and quotas, and which pools a
team uses."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from gpushare import names
from gpushare.capacity import NodeShape, PodShape, PodsPerNode, cheapest_cover, pods_per_node
from gpushare.catalog import CatalogError, load_catalog

from .hami import Hami, expected_capacity, is_hami_pool
from .kube import Pool, pools, quantity
from .nvidia import NvidiaPlugin
from .stack import Resource, StackView

MIB = 2**20


def is_gpu_pool(pool: Pool) -> bool:
    """Labelled with a sharing mode, or launching a GPU type of the catalog."""
    catalog = load_catalog()
    return names.SHARING_LABEL in pool.labels or any(
        t in catalog.instance_type_names and catalog.instance_type(t).gpu_count > 0 for t in pool.instance_types or ()
    )


def sharing_hami(view: StackView, hami: Hami | None, pool: Pool) -> Hami | None:
    """The HAMi release when it slices this pool's GPUs, else None (the pool counts whole GPUs)."""
    return hami if hami is not None and is_hami_pool(view, pool) else None


def pool_slicing(view: StackView, pool: Pool) -> tuple[str, int] | None:
    """(resource, replicas per GPU) when the NVIDIA plugin time-slices this pool's GPUs."""
    nvidia = NvidiaPlugin.of(view)
    return nvidia.pool_slicing(pool) if nvidia is not None else None


def per_node(
    hami: Hami | None, instance_type: str, sliced: tuple[str, int] | None = None
) -> dict[str, tuple[Decimal, str]]:
    """Limit key -> (what one node of the type counts against it, unit) for the keys gpushare can know;
    `hami` is the release slicing the pool's GPUs, None when the pool takes whole GPUs; `sliced` is the
    time-sliced resource and its replicas per GPU."""
    try:
        itype = load_catalog().instance_type(instance_type)
    except CatalogError:
        return {}
    amounts = {
        "cpu": (Decimal(itype.vcpu), "vCPU"),
        "memory": (Decimal(itype.memory_mib * MIB), f"bytes ({itype.memory_mib} MiB)"),
        names.GPU: (Decimal(itype.gpu_count), "GPUs"),
    }
    if sliced is not None:
        resource, replicas = sliced
        amounts[resource] = (Decimal(itype.gpu_count * replicas), f"replicas ({replicas} per GPU)")
        if resource != names.GPU:
            amounts[names.GPU] = (Decimal(0), "GPUs (renamed away by time-slicing; the overlay says 0)")
    if hami is not None:
        capacity = expected_capacity(hami, instance_type)
        if not isinstance(capacity, str):
            amounts.update(
                {
                    names.GPU: (Decimal(capacity.vgpus), "vGPUs"),
                    names.GPU_MEMORY: (Decimal(capacity.gpu_memory), "MiB"),
                    names.GPU_CORES: (Decimal(capacity.gpu_cores), "gpucores"),
                }
            )
    return amounts


def _pools_by_name(view: StackView) -> dict[str, list[Pool]]:
    grouped: dict[str, list[Pool]] = defaultdict(list)
    for pool in pools(view):
        grouped[pool.name].append(pool)
    return grouped


def pools_of_team(view: StackView, namespace: Resource) -> list[Pool]:
    """The pools a team namespace lists (all when it lists none), looked up rather than rescanned per namespace."""
    listed = namespace.get("metadata", "annotations", names.TEAM_POOLS_ANNOTATION)
    if not isinstance(listed, str) or not listed:
        return pools(view)
    by_name = view.memo("pools-by-name", lambda: _pools_by_name(view))
    wanted = sorted({name.strip() for name in listed.split(",")})
    return [pool for name in wanted for pool in by_name.get(name, ())]


@dataclass(frozen=True)
class PoolView:
    """A pool as the pack sizes it: the resource its limit counts, the limit, and per instance type what Karpenter
    sees of a node and (HAMi pools) what HAMi registers per GPU."""

    pool: Pool
    counted: str
    limit: int
    nodes: tuple[NodeShape, ...]
    hami: Hami | None

    def fits(self, shape: PodShape) -> list[PodsPerNode]:
        """Pods of the shape per node of each type, by the domain function the config check uses."""
        catalog = load_catalog()
        found = []
        for node in self.nodes:
            itype = catalog.instance_type(node.instance_type)
            capacity = expected_capacity(self.hami, node.instance_type) if self.hami is not None else None
            per_gpu = capacity if capacity is not None and not isinstance(capacity, str) else None
            found.append(pods_per_node(shape, node, per_gpu, itype.vcpu, itype.memory_mib))
        return found

    def units_needed(self, shape: PodShape, pods: int) -> int | None:
        """The fewest units of the limit whole nodes holding `pods` warm pods take; None when no node holds one."""
        units = {node.instance_type: node.resources.get(self.counted, 0) for node in self.nodes}
        cover = cheapest_cover([(f.instance_type, f.placed, units[f.instance_type]) for f in self.fits(shape)], pods)
        return None if cover is None else int(cover[0])


def pool_view(view: StackView, pool: Pool) -> PoolView | None:
    """The pool sized as the config sizes it (None: no limit on its counted resource, or a type or sharing profile
    gpushare cannot size; other rules say why)."""
    sliced = pool_slicing(view, pool)
    counted = sliced[0] if sliced else names.GPU
    limit = quantity(pool.limits.get(counted)) if counted in pool.limits else None
    if limit is None:
        return None
    hami = sharing_hami(view, Hami.of(view), pool)
    nodes = []
    for instance_type in pool.instance_types or ():
        node = {key: int(amount) for key, (amount, _unit) in per_node(hami, instance_type, sliced).items()}
        if not node or (hami is not None and names.GPU_MEMORY not in node):
            return None
        nodes.append(NodeShape(instance_type, node))
    return PoolView(pool, counted, int(limit), tuple(nodes), hami)
