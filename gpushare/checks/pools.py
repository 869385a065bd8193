"""Cross-key checks of the pools: unique names, instance types of the catalog that the HAMi profile can slice, and a
NodePool limit that admits at least one node."""

from __future__ import annotations

from gpushare import names
from gpushare.catalog import Catalog
from gpushare.config import PROJECT, PoolConfig, StackConfig
from gpushare.errors import ConfigError, Problems
from gpushare.hami import CapacityError, node_capacity


def check_unique_names(key: str, values: list[str]) -> None:
    problems = Problems()
    for i, value in enumerate(values):
        if value in values[:i]:
            problems.errors.append(ConfigError(f"{PROJECT}:{key}[{i}].name", f"duplicate name {value!r}"))
    problems.raise_any()


def check_pool(config: StackConfig, catalog: Catalog, index: int, pool: PoolConfig) -> None:
    """Every instance type of the pool is judged; maxGpus once, against the largest known type."""
    key = f"{PROJECT}:pools[{index}]"
    problems = Problems()
    largest = None
    for j, type_name in enumerate(pool.instance_types):
        if type_name not in catalog.instance_type_names:
            problems.errors.append(
                ConfigError(
                    f"{key}.instanceTypes[{j}]",
                    f"{type_name!r} is not in the GPU catalog; allowed: {', '.join(catalog.instance_type_names)}",
                )
            )
            continue
        itype = catalog.instance_type(type_name)
        if pool.sharing == names.SHARING_HAMI:
            try:
                node_capacity(catalog, itype, config.hami.profile)
            except CapacityError as error:
                problems.errors.append(
                    ConfigError(f"{key}.instanceTypes[{j}]", f"{error}; use a smaller type or an exclusive pool")
                )
        if largest is None or itype.gpu_count > largest.gpu_count:
            largest = itype
    if largest is not None and largest.gpu_count > pool.max_gpus:
        problems.errors.append(
            ConfigError(
                f"{key}.maxGpus",
                f"{pool.max_gpus} is below the {largest.gpu_count} GPUs of {largest.name}, so the NodePool limit "
                f"could never admit one node of it; allowed: {largest.gpu_count} or more",
            )
        )
    problems.raise_any()
