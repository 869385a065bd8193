"""Cross-key checks of a team's quota: within what its pools can ever supply, and admitting the pods of every pool
it lists."""

from __future__ import annotations

from gpushare import names
from gpushare.capacity import (
    QUOTA,
    QuotaResource,
    in_key_units,
    keys_refusing_vgpus,
    limit_resource,
    pool_plans,
    quota_resource_of,
    smallest_gpu_units,
    team_quota,
    team_quota_hard,
    team_supply,
)
from gpushare.config import PROJECT, StackConfig, TeamConfig
from gpushare.errors import ConfigError, ConfigErrors, Problems


def check_quota_admits_pools(config: StackConfig, index: int, team: TeamConfig) -> None:
    """A pool listed with a quota that refuses every pod it could run is a pool the team can never use: a zero
    quota on the resource every pod of the pool asks, or, on HAMi pools, a quota refusing every way a container
    takes a vGPU (the domain's keys_refusing_vgpus, which the pack judges the rendered quota with)."""
    quota = team_quota(config, team)
    unusable: dict[str, list[str]] = {}
    for name in team.pools:
        resource = limit_resource(config.pool(name).sharing)
        if quota[resource] == 0:
            unusable.setdefault(resource, []).append(name)
    keys = {resource.name: resource.key for resource in QUOTA}
    errors = [
        ConfigError(
            f"{PROJECT}:teams[{index}].quota.{keys[resource]}",
            f"0, but the team lists pools {', '.join(pools)}, whose every pod asks {resource}: none would ever be "
            "admitted; allowed: 1 or more, or drop those pools from the team",
        )
        for resource, pools in unusable.items()
    ]
    plans = pool_plans(config)
    hami = [name for name in team.pools if config.pool(name).sharing == names.SHARING_HAMI]
    if hami and names.GPU not in unusable:
        gpu_units = smallest_gpu_units(c for name in hami for c in plans[name].capacities)
        refusing = keys_refusing_vgpus(team_quota_hard(config, team), gpu_units)
        factor = config.hami.profile.memory_factor
        least: dict[QuotaResource, int] = {}
        for key, amount in refusing.items():
            resource = quota_resource_of(key)
            if resource is not None:
                least[resource] = max(amount, least.get(resource, 0))
        stated = team.quota.model_dump()
        errors.extend(
            ConfigError(
                f"{PROJECT}:teams[{index}].quota.{resource.key}",
                f"{stated[resource.key]} ({quota[resource.name]} {resource.name}) refuses every vGPU pod of the team "
                f"on pools {', '.join(hami)}, whether it states GPU memory, cores only or neither (HAMi charges GPU "
                f"memory to each); allowed: {in_key_units(resource, amount, factor)} or more, or leave the key out "
                "(no cap of its own)",
            )
            for resource, amount in least.items()
        )
    if errors:
        raise ConfigErrors(errors)


def check_quota_within_supply(config: StackConfig, index: int, team: TeamConfig) -> None:
    """A quota above what the team's pools can ever provide is a planning mistake, not headroom; compared in the
    units nodes register, as the pack compares the rendered quota."""
    quota, can_supply = team_quota(config, team), team_supply(config, team)
    stated = team.quota.model_dump()
    factor = config.hami.profile.memory_factor
    problems = Problems()
    problems.errors.extend(
        ConfigError(
            f"{PROJECT}:teams[{index}].quota.{resource.key}",
            f"{stated[resource.key]} is more than pools {', '.join(team.pools)} can ever provide (whole nodes within "
            f"their maxGpus); allowed: at most {in_key_units(resource, can_supply[resource.name], factor)}",
        )
        for resource in QUOTA
        if quota[resource.name] > can_supply[resource.name]
    )
    problems.raise_any()
