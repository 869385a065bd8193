"""Cross-key checks of each team's warm headroom: a Karpenter with CapacityBuffers, the team's pools, a shape its
pool holds without fragmenting, within the team's quota and the pools' limits."""

from __future__ import annotations

from dataclasses import replace

from gpushare import compat, names
from gpushare.capacity import (
    QUOTA,
    Headroom,
    NodeShape,
    PodsPerNode,
    headroom_fits,
    headroom_pod_shape,
    limit_resource,
    limit_units_needed,
    most_within,
    per_gpu_limits,
    pool_plans,
    team_headroom,
    team_quota,
)
from gpushare.catalog import load_catalog
from gpushare.config import PROJECT, HeadroomConfig, HeadroomShapeConfig, StackConfig, TeamConfig
from gpushare.errors import ConfigError


def check_headroom(config: StackConfig) -> list[ConfigError]:
    """Every team's warm headroom: a Karpenter that has CapacityBuffers; pools of the team; a shape its pool's
    sharing mode means something on and its nodes hold without Karpenter and HAMi disagreeing; at least one pod,
    within the team's quota; and, with every other team's headroom on the pool, within the pool's limit."""
    errors: list[ConfigError] = []
    known = {pool.name for pool in config.pools}
    on_pools: dict[str, list[Headroom]] = {}
    for index, team in enumerate(config.teams):
        headroom = team.headroom
        if headroom is None or not set(team.pools) <= known:
            continue  # unknown pools are reported by check_teams
        key = f"{PROJECT}:teams[{index}].headroom"
        version = config.karpenter_version
        if compat.parse_version(version) < compat.KARPENTER_MIN_CAPACITY_BUFFER_VERSION:
            first = ".".join(str(part) for part in compat.KARPENTER_MIN_CAPACITY_BUFFER_VERSION)
            held_by = config.karpenter_version_key
            errors.append(
                ConfigError(
                    key,
                    f"needs Karpenter's CapacityBuffer (autoscaling.x-k8s.io/v1beta1), which exists from chart "
                    f"{first}, but {held_by} is {version}; allowed: {held_by.rsplit('.', 1)[1]} {first} or "
                    "newer, or no headroom",
                )
            )
        placement = _headroom_pools(key, team, headroom)
        if placement:
            errors.extend(placement)
            continue
        resolved = team_headroom(config, index)
        shapes = [
            problem for h in resolved for problem in _headroom_fits(config, h, *_headroom_shape(key, headroom, h.pool))
        ]
        if shapes:
            errors.extend(shapes)
            continue
        errors.extend(_headroom_within_quota(config, team, resolved))
        for h in resolved:
            on_pools.setdefault(h.pool, []).append(h)
    errors.extend(_headroom_within_limits(config, on_pools))
    return errors


def _headroom_pools(key: str, team: TeamConfig, headroom: HeadroomConfig) -> list[ConfigError]:
    """The pools named for headroom are the team's; each perPool entry overrides one of them."""
    listed = ", ".join(team.pools)
    if not headroom.pools and len(team.pools) > 1:
        return [
            ConfigError(
                f"{key}.pools",
                f"is required: team {team.name} lists pools {listed}; allowed: those of them that keep warm pods",
            )
        ]
    errors = [
        ConfigError(f"{key}.pools[{j}]", f"{name!r} is not a pool of team {team.name}; allowed: {listed}")
        for j, name in enumerate(headroom.pools)
        if name not in team.pools
    ]
    keeping = headroom.pools or team.pools[:1]
    errors += [
        ConfigError(
            f"{key}.perPool.{name}",
            f"overrides a pool that keeps no headroom; allowed: one of headroom.pools ({', '.join(keeping)})",
        )
        for name in headroom.per_pool
        if name not in keeping
    ]
    return errors


def _headroom_shape(key: str, headroom: HeadroomConfig, pool: str) -> tuple[HeadroomShapeConfig, str]:
    """The shape a pool keeps warm and the key it was written under."""
    override = headroom.per_pool.get(pool)
    if override is not None and override.shape is not None:
        return override.shape, f"{key}.perPool.{pool}.shape"
    return headroom.shape, f"{key}.shape"


def _headroom_fits(
    config: StackConfig, headroom: Headroom, spec: HeadroomShapeConfig, shape_key: str
) -> list[ConfigError]:
    """The shape means something on the pool's sharing mode, some node of the pool holds one such pod as the device
    plugin places it, and no node type of the pool holds fewer than Karpenter would count (fragmented GPUs)."""
    pool = config.pool(headroom.pool)
    errors = [
        ConfigError(
            f"{shape_key}.{field}",
            f"{value} is a HAMi resource, but pool {pool.name} shares GPUs by {pool.sharing}, where a pod asks "
            f"{limit_resource(pool.sharing)} only; allowed: gpus, cpu and memory",
        )
        for field, value in (("gpuMemoryMib", spec.gpu_memory_mib), ("gpuCores", spec.gpu_cores))
        if value is not None and pool.sharing != names.SHARING_HAMI
    ]
    if pool.sharing == names.SHARING_TIMESLICE and spec.gpus != 1:
        errors.append(
            ConfigError(
                f"{shape_key}.gpus",
                f"{spec.gpus} on time-sliced pool {pool.name}: a container takes one replica (more add no compute and "
                "the NVIDIA device plugin refuses them); allowed: 1",
            )
        )
    if errors:
        return errors
    fits = headroom_fits(config, headroom)
    if not any(fit.placed for fit in fits):
        return _headroom_too_big(config, headroom, spec, shape_key)
    fragmented = [fit for fit in fits if fit.fragments]
    return [ConfigError(shape_key, _fragmentation(config, headroom, spec, fragmented[0]))] if fragmented else []


def _headroom_too_big(
    config: StackConfig, headroom: Headroom, spec: HeadroomShapeConfig, shape_key: str
) -> list[ConfigError]:
    """Which part of the shape no node (or, on HAMi pools, no GPU) of the pool can hold, with the pool's bound."""
    plan = pool_plans(config)[headroom.pool]
    catalog = load_catalog()
    itypes = [catalog.instance_type(node.instance_type) for node in plan.nodes]
    gpus_why = "each vGPU of a container takes a GPU of its own" if plan.sharing == names.SHARING_HAMI else "whole GPUs"
    most_gpus = max(t.gpu_count for t in itypes)
    # (key, as written, what the shape asks, the pool's bound as the key writes it, the bound stated)
    bounds = [
        ("gpus", spec.gpus, spec.gpus, most_gpus, f"its largest node has {most_gpus} GPU(s), and {gpus_why}"),
        (
            "cpu",
            spec.cpu,
            headroom.shape.cpu_millis,
            max(t.vcpu for t in itypes) * 1000,
            "the vCPUs of its largest node",
        ),
        (
            "memory",
            spec.memory,
            headroom.shape.memory_mib,
            max(t.memory_mib for t in itypes),
            "the memory of its largest node",
        ),
    ]
    per_gpu = per_gpu_limits(plan.capacities)
    if per_gpu:
        most_memory = per_gpu[names.GPU_MEMORY] * config.hami.profile.memory_factor
        bounds += [
            (
                "gpuMemoryMib",
                spec.gpu_memory_mib,
                spec.gpu_memory_mib or 0,
                most_memory,
                f"one GPU holds {most_memory} MiB",
            ),
            ("gpuCores", spec.gpu_cores, spec.gpu_cores or 0, per_gpu[names.GPU_CORES], "the cores of one GPU"),
        ]
    units = {"cpu": "m", "memory": "Mi"}
    errors = [
        ConfigError(
            f"{shape_key}.{key}",
            f"{written} is more than pool {headroom.pool} can give one pod ({stated}); allowed: at most "
            f"{bound}{units.get(key, '')}",
        )
        for key, written, asked, bound, stated in bounds
        if asked > bound
    ]
    return errors or [
        ConfigError(
            shape_key,
            f"no node of pool {headroom.pool} holds one pod of this shape (its vGPUs, GPU memory and cores on the GPUs "
            "of one node, with its CPU and memory); allowed: a smaller shape",
        )
    ]


def _fragmentation(config: StackConfig, headroom: Headroom, spec: HeadroomShapeConfig, fit: PodsPerNode) -> str:
    """Why Karpenter counts more warm pods on a node than HAMi places there, and a shape no larger that fragments no
    node type of the pool, when rounding it to a whole number of pods per GPU finds one."""
    capacity = next(c for c in pool_plans(config)[headroom.pool].capacities if c.instance_type == fit.instance_type)
    memory, cores = capacity.vgpu_max_memory_mib, capacity.gpu_cores // capacity.gpus
    update: dict[str, int] = {}
    if spec.gpus > 1:
        update["gpus"] = 1
    if spec.gpu_memory_mib is not None and memory % spec.gpu_memory_mib:
        update["gpu_memory_mib"] = memory // -(-memory // spec.gpu_memory_mib)
    if spec.gpu_cores is not None and cores % spec.gpu_cores:
        update["gpu_cores"] = cores // -(-cores // spec.gpu_cores)
    even = spec.model_copy(update=update)
    factor = config.hami.profile.memory_factor
    shape = headroom_pod_shape(
        even.gpus,
        even.gpu_memory_mib // factor if even.gpu_memory_mib is not None else None,
        even.gpu_cores,
        headroom.shape.cpu_millis,
        headroom.shape.memory_mib,
        names.SHARING_HAMI,
    )
    evens_out = not any(f.fragments for f in headroom_fits(config, replace(headroom, shape=shape)))
    keys = HeadroomShapeConfig.model_fields
    example = ", ".join(f"{keys[field].alias or field} {value}" for field, value in update.items())
    return (
        f"fragments the {capacity.gpus} GPUs of {fit.instance_type}: Karpenter counts {fit.counted} warm pods per node "
        f"from its summed capacity, HAMi places {fit.placed} (each vGPU on one GPU), so the buffer would look kept "
        "while real pods of this shape wait; allowed: a shape that fits each GPU a whole number of times"
        + (f" (e.g. {example})" if update and evens_out else "")
        + ", or a pool of 1-GPU types"
    )


def _headroom_within_quota(config: StackConfig, team: TeamConfig, resolved: list[Headroom]) -> list[ConfigError]:
    """At least one warm pod per pool, and all of the team's warm pods together within its quota: virtual pods are
    not charged, but the real pods they stand for are, so headroom beyond the quota could never be used."""
    errors = [
        ConfigError(
            f"{PROJECT}:{h.size_key}",
            "holds no pod of the shape within that share of the team's quota; allowed: a larger quotaPercent, or pods",
        )
        for h in resolved
        if h.pods < 1
    ]
    if errors:
        return errors
    quota = team_quota(config, team)
    for resource, field in ((r.name, r.key) for r in QUOTA):
        asking = [h for h in resolved if h.shape.gpu.get(resource)]
        asked = sum(h.pods * h.shape.gpu[resource] for h in asking)
        if asked <= quota[resource]:
            continue
        if len(asking) == 1:
            allowed = f"at most {quota[resource] // asking[0].shape.gpu[resource]} pods, or a larger quota.{field}"
        else:
            allowed = f"headroom of at most {quota[resource]} {resource} on all pools, or a larger quota.{field}"
        errors.append(
            ConfigError(
                f"{PROJECT}:{asking[0].size_key}",
                f"{sum(h.pods for h in asking)} warm pods ask {asked} {resource}, more than the team's quota.{field} "
                f"{quota[resource]} admits: the real pods they stand for could never all run; allowed: {allowed}",
            )
        )
    return errors


def _headroom_within_limits(config: StackConfig, on_pools: dict[str, list[Headroom]]) -> list[ConfigError]:
    """Each team's warm pods in whole nodes within the pool's limit, and all teams' together: a NodePool limit counts
    its nodes' whole capacity, and Karpenter launches nothing past it for a buffer either."""
    errors = []
    plans = pool_plans(config)
    for pool_index, pool in enumerate(config.pools):
        if pool.name not in on_pools:
            continue
        plan = plans[pool.name]
        units = {node.instance_type: node.resources[plan.limit_resource] for node in plan.nodes}
        total, over = 0, False
        for headroom in on_pools[pool.name]:
            fits = headroom_fits(config, headroom)
            needed = limit_units_needed(plan, fits, headroom.pods) or 0
            total += needed
            if needed > plan.node_pool_limit:
                over = True
                shapes = [
                    NodeShape(f.instance_type, {plan.limit_resource: units[f.instance_type], "pods": f.placed})
                    for f in fits
                ]
                most = most_within(shapes, plan.node_pool_limit, "pods", plan.limit_resource)
                errors.append(
                    ConfigError(
                        f"{PROJECT}:{headroom.size_key}",
                        f"{headroom.pods} warm pods need whole nodes worth {needed} {plan.limit_resource}, more than "
                        f"pool {pool.name}'s maxGpus {pool.max_gpus} admits ({plan.node_pool_limit}); allowed: at most "
                        f"{most} pods, or a larger maxGpus",
                    )
                )
        if total > plan.node_pool_limit and not over:
            teams = ", ".join(h.team for h in on_pools[pool.name])
            errors.append(
                ConfigError(
                    f"{PROJECT}:pools[{pool_index}].maxGpus",
                    f"{pool.max_gpus}: the headroom of teams {teams} needs whole nodes worth {total} "
                    f"{plan.limit_resource} together, more than this limit admits ({plan.node_pool_limit}); allowed: a "
                    "larger maxGpus, or less headroom",
                )
            )
    return errors
