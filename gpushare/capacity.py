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
from gpushare.quota import QUOTA, QUOTA_RESOURCES, QuotaResource

if TYPE_CHECKING:  # the policy pack imports this module: it must not load the config schema it judges
    from gpushare.config import StackConfig, TeamConfig


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
    """One pool, decided once: its node shapes, its NodePool limit and (HAMi pools) what each type registers.

    `max_gpus` is the pool's maxGpus (physical GPUs); `node_pool_limit` is what its NodePool's `limits` state, in
    units of `limit_resource`: maxGpus x deviceSplitCount vGPUs on HAMi pools, maxGpus x replicas on time-sliced ones,
    maxGpus whole GPUs on exclusive ones."""

    name: str
    sharing: str
    max_gpus: int
    node_pool_limit: int
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
        return supply(self.nodes, self.node_pool_limit, self.limit_resource)

    def nodes_admitted(self, instance_type: str) -> int:
        """How many nodes of one type the limit admits if the pool ran that type alone (its types share one limit)."""
        shape = next(n for n in self.nodes if n.instance_type == instance_type)
        return self.node_pool_limit // shape.resources[self.limit_resource]


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
        plans[pool.name] = PoolPlan(pool.name, pool.sharing, pool.max_gpus, limit, nodes, capacities)
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


def pool_container_limits(plan: PoolPlan) -> dict[str, int]:
    """Resource -> the most one container may ask on this pool alone; a GPU resource not listed is one its nodes
    never register (a HAMi pool registers no time-sliced replicas, a time-sliced pool no vGPUs, an exclusive pool
    whole GPUs only). What a pod without a pool selector is placed by: the one team pool that holds it."""
    if plan.sharing == names.SHARING_HAMI:
        return per_gpu_limits(plan.capacities)
    if plan.sharing == names.SHARING_TIMESLICE:
        return {names.GPU_SHARED: 1}
    return {names.GPU: max(node.resources[names.GPU] for node in plan.nodes)}


# Warm headroom (teams[].headroom): what one warm pod asks, how many of them a node holds in Karpenter's view and in
# the device plugin's, and what whole nodes the headroom keeps. The config checks, the renderers, the plan summary and
# the policy pack (reading a CapacityBuffer's PodTemplate) all size buffers with these functions.


def cpu_millis(text: str) -> int:
    """A CPU quantity (`250m`, `2`, `0.5`) in millicores."""
    return int(text[:-1]) if text.endswith("m") else round(float(text) * 1000)


def memory_mib(text: str) -> int:
    """A memory quantity in `Mi` or `Gi` (the forms a headroom shape takes) in MiB."""
    return int(text[:-2]) * (1024 if text.endswith("Gi") else 1)


@dataclass(frozen=True)
class PodShape:
    """One pod as its container asks: GPU resources in the units nodes register and ResourceQuota counts (a
    container's request, once, whatever its vGPU count), CPU and memory."""

    gpu: Mapping[str, int]
    cpu_millis: int
    memory_mib: int


def headroom_pod_shape(
    gpus: int, gpu_memory: int | None, gpu_cores: int | None, cpu: int, memory: int, sharing: str
) -> PodShape:
    """The pod a team's real pod becomes after admission, as a buffer's template must state it (virtual pods skip
    admission): on HAMi pools HAMi's webhook adds `nvidia.com/gpucores: 100` to a container asking vGPUs without
    gpumem or gpucores (HAMi 2.8.3 pkg/device/nvidia/device.go defaultExclusiveCoreIfNeeded); time-sliced pools
    count replicas of nvidia.com/gpu.shared. `gpu_memory` is in registered units (MiB / memoryFactor)."""
    if sharing == names.SHARING_TIMESLICE:
        gpu = {names.GPU_SHARED: gpus}
    elif sharing == names.SHARING_EXCLUSIVE:
        gpu = {names.GPU: gpus}
    else:
        gpu = {names.GPU: gpus}
        if gpu_memory is not None:
            gpu[names.GPU_MEMORY] = gpu_memory
        if gpu_cores is not None or gpu_memory is None:
            gpu[names.GPU_CORES] = gpu_cores if gpu_cores is not None else 100
    return PodShape(gpu, cpu, memory)


@dataclass(frozen=True)
class PodsPerNode:
    """How many pods of one shape a node of one type holds: `counted` as Karpenter counts them from the node's summed
    capacity (overlays for HAMi and time-sliced pools), `placed` as the device plugin places them (HAMi: each vGPU on
    one GPU, the vGPUs of a container on GPUs of their own). CPU and memory bound both by the type's capacity
    (Karpenter subtracts the kubelet's reservations and daemonsets first, so a CPU- or memory-bound shape fits a
    little less)."""

    instance_type: str
    counted: int
    placed: int

    @property
    def fragments(self) -> bool:
        """Karpenter would count warm room on this node that HAMi cannot use."""
        return self.counted > self.placed


def pods_per_node(shape: PodShape, node: NodeShape, capacity: NodeCapacity | None, vcpu: int, mib: int) -> PodsPerNode:
    """`node` is what Karpenter sees of one instance type of the pool, `capacity` what HAMi registers per GPU on it
    (None off HAMi pools, where the kubelet's own resources leave nothing to disagree on); `vcpu` and `mib` the type's
    CPU and memory."""
    bounds = [vcpu * 1000 // max(shape.cpu_millis, 1), mib // max(shape.memory_mib, 1)]
    counted = min(bounds + [node.resources.get(r, 0) // amount for r, amount in shape.gpu.items() if amount > 0])
    vgpus = shape.gpu.get(names.GPU, 0)
    if capacity is None or vgpus == 0:
        return PodsPerNode(node.instance_type, counted, counted)
    per_gpu = capacity.vgpus // capacity.gpus
    memory = shape.gpu.get(names.GPU_MEMORY, 0)
    if memory:
        per_gpu = min(per_gpu, capacity.vgpu_max_memory_mib // capacity.memory_factor // memory)
    cores = shape.gpu.get(names.GPU_CORES, 0)
    if cores:
        per_gpu = min(per_gpu, capacity.gpu_cores // capacity.gpus // cores)
    placed = capacity.gpus * per_gpu // vgpus if vgpus <= capacity.gpus else 0
    return PodsPerNode(node.instance_type, counted, min([placed, *bounds]))


def cheapest_cover(options: Sequence[tuple[str, int, float]], pods: int) -> tuple[float, dict[str, int]] | None:
    """The cheapest whole nodes that together hold `pods` pods: options are (instance type, pods per node, cost per
    node); None when no node holds one. Costs may be prices (what Karpenter minimizes) or NodePool limit units.

    A min-cost cover by DP over the pod count. An optimum uses fewer than `b` nodes of any type but the one of the
    lowest cost per pod (which holds `b` per node): `b` of another type hold what as many of the best type's do, at
    no less cost. So all but a bounded remainder of a large count is filled with the best type first."""
    usable = [(name, per_node, cost) for name, per_node, cost in options if per_node > 0]
    if not usable:
        return None
    best_name, best_size, best_cost = min(usable, key=lambda o: (o[2] / o[1], o[0]))
    fixed = max(0, pods - best_size * (sum(size for _, size, _ in usable) + 1)) // best_size
    rest = pods - fixed * best_size
    cost = [0.0] + [float("inf")] * rest
    choice = [-1] * (rest + 1)
    for held in range(1, rest + 1):
        for index, (_, per_node, node_cost) in enumerate(usable):
            total = cost[max(0, held - per_node)] + node_cost
            if total < cost[held]:
                cost[held], choice[held] = total, index
    nodes = {best_name: fixed} if fixed else {}
    held = rest
    while held > 0:
        name, per_node, _ = usable[choice[held]]
        nodes[name] = nodes.get(name, 0) + 1
        held = max(0, held - per_node)
    return cost[rest] + fixed * best_cost, nodes


def requests_key(resource: str) -> str:
    """The ResourceQuota key Kubernetes enforces an extended resource under (only `requests.`)."""
    return f"requests.{resource}"


def limits_key(resource: str) -> str:
    """The ResourceQuota key HAMi's own scheduler charges its memory and cores under (Kubernetes ignores it)."""
    return f"limits.{resource}"


def quota_resource_of(key: str) -> QuotaResource | None:
    """The quota resource a ResourceQuota key (`requests.<name>` or `limits.<name>`) caps, or None."""
    name = key.removeprefix("requests.").removeprefix("limits.")
    return next((resource for resource in QUOTA if resource.name == name), None)


def in_units(resource: QuotaResource, value: int, memory_factor: int) -> int:
    """A quota key's value in the units nodes register and ResourceQuotas count."""
    return value // memory_factor if resource.in_mib else value


def in_key_units(resource: QuotaResource, units: int, memory_factor: int) -> int:
    """Registered units back in the key's own unit (MiB for GPU memory), for messages a user reads."""
    return units * memory_factor if resource.in_mib else units


def team_supply(config: StackConfig, team: TeamConfig) -> dict[str, int]:
    """The most the team's pools can ever register per quota resource, in registered units."""
    plans = pool_plans(config)
    return total_supply(plans[name].supply for name in team.pools)


def team_quota(config: StackConfig, team: TeamConfig) -> dict[str, int]:
    """The team's quota per resource in registered units (gpumem in memoryFactor units): what its ResourceQuota
    states and every check compares. A key stated is converted once here; a key left out is what the team's pools
    can ever register, so it caps nothing their limits do not, and never refuses the team's own pods."""
    stated = team.quota.model_dump()
    factor = config.hami.profile.memory_factor
    supplied = team_supply(config, team) if any(stated[r.key] is None for r in QUOTA) else {}
    return {r.name: supplied[r.name] if stated[r.key] is None else in_units(r, stated[r.key], factor) for r in QUOTA}


def team_quota_hard(config: StackConfig, team: TeamConfig) -> dict[str, int]:
    """The team's ResourceQuota `spec.hard`, in registered units: Kubernetes' `requests.` key of every quota resource
    (time-sliced replicas only once the stack has a time-sliced pool: pods pick a pool by nodeSelector, not by team,
    so then every team's are capped, 0 for a team listing none), then HAMi's `limits.` keys of what it charges."""
    quota = team_quota(config, team)
    timesliced = any(pool.sharing == names.SHARING_TIMESLICE for pool in config.pools)
    hard = {requests_key(r.name): quota[r.name] for r in QUOTA if r.name != names.GPU_SHARED or timesliced}
    hard.update({limits_key(r.name): quota[r.name] for r in QUOTA if r.hami_charges})
    return hard


def vgpu_requests(gpu_units: int) -> dict[str, dict[str, int]]:
    """The ways a container takes a vGPU on a HAMi pool, each with the least it counts against each ResourceQuota key
    (docs/sharing.md "Team GPU quotas"): stating GPU memory (one unit); stating cores only, which HAMi charges
    a whole GPU's memory for (`defaultMemory: 0`); neither, a whole vGPU, to which HAMi's webhook adds gpucores: 100
    (HAMi 2.10 pkg/device/nvidia/device.go defaultExclusiveCoreIfNeeded). `gpu_units` is the memory of the smallest
    GPU the team's HAMi pools have, in registered units."""
    gpu, memory, cores = names.GPU, names.GPU_MEMORY, names.GPU_CORES
    return {
        "GPU memory": {requests_key(gpu): 1, requests_key(memory): 1, limits_key(memory): 1},
        "cores only": {
            requests_key(gpu): 1,
            requests_key(cores): 1,
            limits_key(cores): 1,
            limits_key(memory): gpu_units,
        },
        "a whole vGPU": {
            requests_key(gpu): 1,
            requests_key(cores): 100,
            limits_key(cores): 100,
            limits_key(memory): gpu_units,
        },
    }


def keys_refusing_vgpus(hard: Mapping[str, int], gpu_units: int) -> dict[str, int]:
    """When a team's ResourceQuota `spec.hard` refuses every way a container takes a vGPU on its HAMi pools: the keys
    refusing the way the fewest quota resources refuse (the first on a tie), each with the least that way needs of
    it, in `hard`'s order; raising them admits that way. Empty when some way is admitted."""
    refusing = [
        {key: least for key, least in asks.items() if key in hard and hard[key] < least}
        for asks in vgpu_requests(gpu_units).values()
    ]
    if not all(refusing):
        return {}
    nearest = min(refusing, key=lambda keys: len({quota_resource_of(key) for key in keys}))
    return {key: nearest[key] for key in hard if key in nearest}


def smallest_gpu_units(capacities: Iterable[NodeCapacity]) -> int:
    """The memory of the smallest GPU these HAMi capacities have, in registered units (what HAMi charges a pod that
    takes a whole GPU's memory, at the least); 1 when none is known."""
    return min((c.vgpu_max_memory_mib // c.memory_factor for c in capacities), default=1)


def pods_within_share(quota: Mapping[str, int], percent: int, shape: PodShape) -> int:
    """How many pods of the shape `percent` of the quota holds, on every quota resource the shape asks."""
    return min(quota.get(resource, 0) * percent // 100 // amount for resource, amount in shape.gpu.items() if amount)


@dataclass(frozen=True)
class Headroom:
    """One team's warm pods on one pool, resolved from teams[].headroom and its perPool override: the size key the
    team wrote (for messages) and the pod shape after admission."""

    team: str
    pool: str
    pods: int
    shape: PodShape
    size_key: str


def team_headroom(config: StackConfig, team_index: int) -> list[Headroom]:
    """The team's headroom per pool, in the order written; pools not of the stack are skipped (config refuses them),
    and a quotaPercent too small for one pod resolves to 0 pods (config refuses that too)."""
    team = config.teams[team_index]
    headroom = team.headroom
    if headroom is None:
        return []
    by_name = {pool.name: pool for pool in config.pools}
    factor = config.hami.profile.memory_factor
    quota = team_quota(config, team)
    resolved = []
    for pool_name in headroom.pools or team.pools[:1]:
        pool = by_name.get(pool_name)
        if pool is None:
            continue
        override = headroom.per_pool.get(pool_name)
        key = f"teams[{team_index}].headroom"
        spec = headroom.shape
        pods, percent, size_key = (
            headroom.pods,
            headroom.quota_percent,
            f"{key}.{'pods' if headroom.pods else 'quotaPercent'}",
        )
        if override is not None:
            spec = override.shape or spec
            if override.pods is not None or override.quota_percent is not None:
                pods, percent = override.pods, override.quota_percent
                size_key = f"{key}.perPool.{pool_name}.{'pods' if override.pods else 'quotaPercent'}"
        memory = spec.gpu_memory_mib // factor if spec.gpu_memory_mib is not None else None
        shape = headroom_pod_shape(
            spec.gpus, memory, spec.gpu_cores, cpu_millis(spec.cpu), memory_mib(spec.memory), pool.sharing
        )
        if pods is None:
            pods = pods_within_share(quota, percent or 0, shape)
        resolved.append(Headroom(team.name, pool_name, pods, shape, size_key))
    return resolved


def stack_headroom(config: StackConfig) -> list[Headroom]:
    """Every team's headroom, teams in config order."""
    return [h for i in range(len(config.teams)) for h in team_headroom(config, i)]


def headroom_fits(config: StackConfig, headroom: Headroom) -> list[PodsPerNode]:
    """Pods per node of each instance type of the headroom's pool."""
    plan = pool_plans(config)[headroom.pool]
    catalog = load_catalog()
    capacities = {c.instance_type: c for c in plan.capacities}
    fits = []
    for node in plan.nodes:
        itype = catalog.instance_type(node.instance_type)
        fits.append(
            pods_per_node(headroom.shape, node, capacities.get(node.instance_type), itype.vcpu, itype.memory_mib)
        )
    return fits


def limit_units_needed(plan: PoolPlan, fits: Sequence[PodsPerNode], pods: int) -> int | None:
    """The fewest units of the pool's limit resource whole nodes holding `pods` warm pods take (NodePool limits count
    a node's whole capacity, not what its pods ask); None when no node of the pool holds one."""
    units = {node.instance_type: node.resources[plan.limit_resource] for node in plan.nodes}
    cover = cheapest_cover([(f.instance_type, f.placed, units[f.instance_type]) for f in fits], pods)
    return None if cover is None else int(cover[0])


def headroom_nodes(fits: Sequence[PodsPerNode], pods: int) -> tuple[float, dict[str, int]] | None:
    """The cheapest whole nodes (on-demand prices of the catalog) that keep `pods` warm pods: what Karpenter launches
    for the buffer alone, and what it costs per hour."""
    catalog = load_catalog()
    options = [(f.instance_type, f.placed, catalog.instance_type(f.instance_type).on_demand_usd_per_hour) for f in fits]
    return cheapest_cover(options, pods)
