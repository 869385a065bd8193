"""The domain layer: what each pool's nodes register, how many of them its limit admits, and what a team's pools
can supply. Computed here once; the config checks, the renderers and the policy pack call these functions, so
they cannot disagree about a quota or a limit.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, reduce
from math import gcd
from typing import TYPE_CHECKING

from gpushare import names
from gpushare.catalog import Catalog, load_catalog
from gpushare.hami import NodeCapacity, node_capacity

if TYPE_CHECKING:  # the policy pack imports this module: it must not load the config schema it judges
    from gpushare.config import StackConfig

# Quota resources a team's pools supply (ResourceQuota keys are `requests.<name>`).
QUOTA_RESOURCES = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_SHARED)


@dataclass(frozen=True)
class NodeShape:
    """One instance type as a pool sees it: what a node registers (what Karpenter sees through its overlay)."""

    instance_type: str
    resources: Mapping[str, int]


def limit_resource(sharing: str) -> str:
    """The resource a pool's NodePool limit counts, and every pod placed on the pool asks: replicas on time-sliced
    pools, else nvidia.com/gpu (vGPUs on HAMi pools, whose overlays raise it, whole GPUs on exclusive ones)."""
    return names.GPU_SHARED if sharing == names.SHARING_TIMESLICE else names.GPU


def most_within(nodes: Sequence[NodeShape], limit: int, resource: str, counted: str = names.GPU) -> int:
    """The most of `resource` whole nodes can register while their `counted` sum stays within `limit`.

    Karpenter launches whole nodes and skips an instance type whose capacity would take the pool past its limit,
    so a 6-GPU limit over 4-GPU nodes holds one node, while 4-GPU and 1-GPU types together reach all 6. An
    unbounded knapsack over the limit, divided by the node sizes' common divisor (vGPUs per GPU on HAMi pools).
    """
    sized = [(n.resources[counted], n.resources.get(resource, 0)) for n in nodes if n.resources.get(counted, 0) > 0]
    if not sized or limit <= 0:
        return 0
    step = reduce(gcd, (units for units, _ in sized))
    items = [(units // step, amount) for units, amount in sized if amount > 0]
    if not items:
        return 0
    slots = limit // step
    # An optimum uses fewer than `size` nodes of other types than the densest one (pigeonhole on their sizes
    # modulo `size`), so all but a bounded remainder of a large limit is filled with the densest type.
    size, amount = max(items, key=lambda item: (item[1] / item[0], -item[0]))
    fixed = max(0, slots - size * (max(s for s, _ in items) + 2)) // size
    slots -= fixed * size
    best = [0] * (slots + 1)
    for used in range(1, slots + 1):
        best[used] = max([best[used - 1]] + [best[used - s] + a for s, a in items if s <= used])
    return fixed * amount + best[slots]


def supply(nodes: Sequence[NodeShape], limit: int, counted: str = names.GPU) -> dict[str, int]:
    """Quota resource -> the most a pool of these node shapes can ever provide within its limit on `counted`."""
    return {resource: most_within(nodes, limit, resource, counted) for resource in QUOTA_RESOURCES}


def total_supply(supplies: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """What several pools supply together (a team's quota may ask at most this)."""
    total = dict.fromkeys(QUOTA_RESOURCES, 0)
    for one in supplies:
        for resource in QUOTA_RESOURCES:
            total[resource] += one.get(resource, 0)
    return total


@dataclass(frozen=True)
class PoolPlan:
    """One pool, decided once: its node shapes, its NodePool limit and (HAMi pools) what each type registers."""

    name: str
    sharing: str
    gpu_limit: int
    nodes: tuple[NodeShape, ...]
    capacities: tuple[NodeCapacity, ...]

    @property
    def limit_resource(self) -> str:
        return limit_resource(self.sharing)

    @property
    def overlaid(self) -> bool:
        """Whether Karpenter needs NodeOverlays to see what this pool's nodes register (not whole GPUs)."""
        return self.sharing != names.SHARING_EXCLUSIVE

    @cached_property
    def supply(self) -> dict[str, int]:
        return supply(self.nodes, self.gpu_limit, self.limit_resource)

    def nodes_admitted(self, instance_type: str) -> int:
        """How many nodes of one type the limit admits on their own."""
        shape = next(n for n in self.nodes if n.instance_type == instance_type)
        return self.gpu_limit // shape.resources[self.limit_resource]


_last_plans: list[tuple[StackConfig, dict[str, PoolPlan]]] = []


def pool_plans(config: StackConfig) -> dict[str, PoolPlan]:
    """Pool name -> its plan. HAMi pools count vGPUs (deviceSplitCount per GPU, overlays make Karpenter see
    them); time-sliced pools count `replicas` per GPU under nvidia.com/gpu.shared (overlays too, and they zero
    nvidia.com/gpu, which time-slicing renames away); exclusive pools count whole GPUs as the NVIDIA device plugin
    registers them. Planned once per config object: renderers and checks ask for it per pool and per team."""
    if not _last_plans or _last_plans[0][0] is not config:
        _last_plans[:] = [(config, _plan(config, load_catalog()))]
    return _last_plans[0][1]


def _plan(config: StackConfig, catalog: Catalog) -> dict[str, PoolPlan]:
    plans = {}
    for pool in config.pools:
        itypes = [catalog.instance_type(name) for name in pool.instance_types]
        if pool.sharing == names.SHARING_HAMI:
            capacities = tuple(node_capacity(catalog, itype, config.hami.profile) for itype in itypes)
            nodes = tuple(NodeShape(c.instance_type, c.resources()) for c in capacities)
            limit = pool.max_gpus * config.hami.profile.device_split_count
        elif pool.sharing == names.SHARING_TIMESLICE:
            if pool.replicas is None:
                raise ValueError(f"pool {pool.name}: sharing timeslice without replicas (config validation lets none)")
            capacities = ()
            nodes = tuple(
                NodeShape(i.name, {names.GPU: 0, names.GPU_SHARED: i.gpu_count * pool.replicas}) for i in itypes
            )
            limit = pool.max_gpus * pool.replicas
        else:
            capacities = ()
            nodes = tuple(NodeShape(itype.name, {names.GPU: itype.gpu_count}) for itype in itypes)
            limit = pool.max_gpus
        plans[pool.name] = PoolPlan(pool.name, pool.sharing, limit, nodes, capacities)
    return plans


def per_gpu_limits(capacities: Iterable[NodeCapacity]) -> dict[str, int]:
    """Resource -> the most one container may ask on nodes of these HAMi capacities: a vGPU lives on one GPU, so
    the largest GPU bounds gpumem (in registered units), gpucores and gpumem-percentage; HAMi gives each of a
    container's vGPUs a GPU of its own (pkg/device/nvidia/device.go Fit takes a device at most once per
    container), so the node with the most GPUs bounds nvidia.com/gpu. Empty without HAMi."""
    capacities = list(capacities)
    if not capacities:
        return {}
    return {
        names.GPU: max(c.gpus for c in capacities),
        names.GPU_MEMORY: max(c.vgpu_max_memory_mib // c.memory_factor for c in capacities),
        names.GPU_CORES: max(c.gpu_cores // c.gpus for c in capacities),
        names.GPU_MEMORY_PERCENTAGE: 100,
    }


def container_limits(
    hami_capacities: Iterable[NodeCapacity], exclusive_gpu_counts: Iterable[int], timeslice: bool
) -> dict[str, int]:
    """Resource -> the most one container of a team may ask on its pools. HAMi's per-GPU bounds; nvidia.com/gpu
    raised to the largest exclusive node where the team also has whole GPUs (a pod does not say which pool it
    means); one time-sliced replica (replicas of one GPU add no compute and the NVIDIA plugin refuses more)."""
    limits = per_gpu_limits(hami_capacities)
    if names.GPU in limits:
        limits[names.GPU] = max([limits[names.GPU], *exclusive_gpu_counts])
    if timeslice:
        limits[names.GPU_SHARED] = 1
    return limits
