"""Loading the stack file: the raw `config:` map (of a Pulumi.<stack>.yaml, or what the Pulumi engine passes the
program) becomes a StackConfig, or ConfigErrors naming every bad key.

Above the domain layer on purpose: the cross-key checks (catalog membership, what a pool's nodes register, what
a team's pools can supply) call `capacity.py`, which itself reads the typed models of `config.py`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import date
from typing import Any

from pydantic import ValidationError

from gpushare import compat, eks, names, pins
from gpushare.capacity import hami_budget_uncapped, limit_resource, pool_plans, total_supply
from gpushare.catalog import Catalog, load_catalog
from gpushare.config import CONFIG_KEYS, PROJECT, PoolConfig, StackConfig, TeamConfig
from gpushare.errors import ConfigError, ConfigErrors, Problems, all_errors, key_path
from gpushare.hami import CapacityError, node_capacity


def _config_key(loc: tuple[int | str, ...]) -> str:
    """pydantic location -> the key as a user writes it: `gpushare:pools[0].maxGpus`."""
    if not loc:
        return PROJECT
    if loc[-1] == "[key]":  # pydantic's marker for a bad map key: the key itself names the place
        loc = loc[:-1]
    head, *rest = loc
    return key_path("aws:region" if head == "region" else f"{PROJECT}:{head}", rest)


def _decode(key: str, value: Any) -> Any:
    """Pulumi hands object config to programs as JSON text; stack files hold it as YAML objects."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigError(key, f"is not valid JSON ({error.msg} at column {error.colno})") from None
    return value


def load_stack_config(raw: Mapping[str, Any], catalog: Catalog | None = None, *, today: date) -> StackConfig:
    """Validate the raw stack config map; ConfigErrors lists every bad key found, one line each (schema
    problems first; cross-key rules run once the schema holds, since they need a typed model). `today` is the
    day EKS support windows are judged for: the CLI and the program pass the real date, tests a fixed one."""
    catalog = catalog or load_catalog()
    data: dict[str, Any] = {}
    problems = Problems()
    for key, value in raw.items():
        namespace, _, name = key.partition(":")
        if key == "aws:region":
            data["region"] = value
        elif namespace == PROJECT:
            if name not in CONFIG_KEYS:
                allowed = ", ".join(f"{PROJECT}:{k}" for k in CONFIG_KEYS)
                problems.errors.append(ConfigError(key, f"unknown key; allowed: {allowed}"))
                continue
            try:
                data[name] = _decode(key, value)
            except ConfigError as error:
                problems.errors.append(error)
    if "region" not in data:
        problems.errors.append(ConfigError("aws:region", "is required (the AWS region to deploy into, e.g. us-west-2)"))
    try:
        config = StackConfig.model_validate(data)
    except ValidationError as error:
        problems.errors.extend(all_errors(error, _config_key).errors)
        problems.raise_any()
        raise  # unreachable: a ValidationError always carries a problem
    problems.raise_any()
    check_references(config, catalog, today)
    return config


def check_references(config: StackConfig, catalog: Catalog, today: date) -> None:
    """Cross-key rules pydantic cannot see: the EKS support window, names, catalog membership, capacity and
    quotas. Every check runs; ConfigErrors lists what they found."""
    problems = Problems()
    problems.check(_check_kubernetes_version, config, today)
    problems.check(_unique_names, "pools", [p.name for p in config.pools])
    problems.check(_unique_names, "teams", [t.name for t in config.teams])
    pool_names = [p.name for p in config.pools]
    for i, pool in enumerate(config.pools):
        problems.check(_check_pool, config, catalog, i, pool)
    pools_valid = not problems.errors  # quota and admission checks compute each pool's capacity
    used: set[str] = set()
    for i, team in enumerate(config.teams):
        unknown = [
            ConfigError(
                f"{PROJECT}:teams[{i}].pools[{j}]", f"unknown pool {pool_name!r}; allowed: {', '.join(pool_names)}"
            )
            for j, pool_name in enumerate(team.pools)
            if pool_name not in pool_names
        ]
        problems.errors.extend(unknown)
        used.update(team.pools)
        if pools_valid and not unknown:
            problems.check(_check_quota, config, i, team)
            problems.check(_check_quota_admits_pools, config, i, team)
            problems.check(_check_hami_budgets, config, i, team)
            problems.check(_check_admission, config, i, team)
    problems.check(_check_alert_waits, config)
    for i, pool in enumerate(config.pools):
        if pool.name not in used:
            problems.errors.append(
                ConfigError(f"{PROJECT}:pools[{i}].name", f"no team lists pool {pool.name!r}: it could never be used")
            )
    problems.raise_any()


def _check_kubernetes_version(config: StackConfig, today: date) -> None:
    """A version past EKS standard support bills extended support or is upgraded by EKS: refused unless the
    stack opts into extended support; every minor needs a pinned kube-scheduler patch for HAMi."""
    cluster = config.cluster
    problem = eks.support_problem(
        cluster.kubernetes_version,
        today,
        cluster.support_type == "EXTENDED",
        config.karpenter.chart_version,
        eks.load_eks_support(),
    )
    if problem is None and cluster.kubernetes_version not in pins.kubernetes_minors():
        problem = (
            f"{cluster.kubernetes_version} has no kube-scheduler patch pinned for HAMi in gpushare/pins.yaml; "
            f"allowed: {', '.join(pins.kubernetes_minors())}"
        )
    if problem is not None:
        raise ConfigError(f"{PROJECT}:cluster.kubernetesVersion", problem)


def _unique_names(key: str, values: list[str]) -> None:
    for i, value in enumerate(values):
        if value in values[:i]:
            raise ConfigError(f"{PROJECT}:{key}[{i}].name", f"duplicate name {value!r}")


def _check_pool(config: StackConfig, catalog: Catalog, index: int, pool: PoolConfig) -> None:
    key = f"{PROJECT}:pools[{index}]"
    for j, type_name in enumerate(pool.instance_types):
        if type_name not in catalog.instance_type_names:
            raise ConfigError(
                f"{key}.instanceTypes[{j}]",
                f"{type_name!r} is not in the GPU catalog; allowed: {', '.join(catalog.instance_type_names)}",
            )
        itype = catalog.instance_type(type_name)
        if pool.sharing == names.SHARING_HAMI:
            try:
                node_capacity(catalog, itype, config.hami.profile)
            except CapacityError as error:
                raise ConfigError(
                    f"{key}.instanceTypes[{j}]", f"{error}; use a smaller type or an exclusive pool"
                ) from None
        if itype.gpu_count > pool.max_gpus:
            raise ConfigError(
                f"{key}.maxGpus",
                f"{pool.max_gpus} is below the {itype.gpu_count} GPUs of {type_name}, so the NodePool limit "
                f"could never admit one node of it; allowed: {itype.gpu_count} or more",
            )


def _check_admission(config: StackConfig, index: int, team: TeamConfig) -> None:
    """Team behaviour applied by MutatingAdmissionPolicy needs its GA API; spot-only needs spot pools."""
    key = f"{PROJECT}:teams[{index}]"
    version = config.cluster.kubernetes_version
    if not compat.has_mutating_admission_policy(version):
        needs = {
            "schedulerPolicy": team.scheduler_policy is not None,
            "priority": team.priority != "standard",
            "spotOnly": team.spot_only,
        }
        for field, used in needs.items():
            if used:
                raise ConfigError(
                    f"{key}.{field}",
                    f"is applied by a MutatingAdmissionPolicy (admissionregistration.k8s.io/v1), GA from Kubernetes "
                    f"1.36, but gpushare:cluster.kubernetesVersion is {version}; allowed: kubernetesVersion 1.36 "
                    f"or newer, or drop {field}",
                )
    if team.spot_only:
        if team.priority != "batch":
            raise ConfigError(f"{key}.spotOnly", f"true needs priority batch, got priority {team.priority!r}")
        lacking = [name for name in team.pools if "spot" not in config.pool(name).capacity_types]
        if lacking:
            raise ConfigError(
                f"{key}.spotOnly",
                f"true but pools {', '.join(lacking)} offer no spot capacity; allowed: only pools whose "
                "capacityTypes include spot",
            )


_RETENTION_UNIT_MINUTES = {"h": 60, "d": 1440, "w": 10080}


def _check_alert_waits(config: StackConfig) -> None:
    """An alert that must hold longer than the stack's own Prometheus keeps samples restarts its wait from what is
    kept after every Prometheus restart: in practice it never fires."""
    monitoring = config.monitoring
    if not monitoring.enabled or monitoring.existing_prometheus is not None:
        return
    kept = int(monitoring.retention[:-1]) * _RETENTION_UNIT_MINUTES[monitoring.retention[-1]]
    errors = [
        ConfigError(
            f"{PROJECT}:monitoring.alerts.{field.alias}",
            f"{minutes} minutes is longer than gpushare:monitoring.retention {monitoring.retention} ({kept} minutes): "
            f"the alert could never fire; allowed: at most {kept}, or a longer retention",
        )
        for name, field in type(monitoring.alerts).model_fields.items()
        if name.endswith("_minutes") and (minutes := getattr(monitoring.alerts, name)) > kept
    ]
    if errors:
        raise ConfigErrors(errors)


def _check_quota_admits_pools(config: StackConfig, index: int, team: TeamConfig) -> None:
    """A pool listed with a zero quota on the resource its pods ask is a pool the team can never use."""
    fields = {names.GPU: ("gpus", team.quota.gpus), names.GPU_SHARED: ("sharedGpus", team.quota.shared_gpus)}
    unusable: dict[str, list[str]] = {}
    for name in team.pools:
        field, value = fields[limit_resource(config.pool(name).sharing)]
        if value == 0:
            unusable.setdefault(field, []).append(name)
    errors = [
        ConfigError(
            f"{PROJECT}:teams[{index}].quota.{field}",
            f"0, but the team lists pools {', '.join(pools)}, whose every pod asks "
            f"{limit_resource(config.pool(pools[0]).sharing)}: none would ever be admitted; allowed: 1 or more, or "
            "drop those pools from the team",
        )
        for field, pools in unusable.items()
    ]
    if errors:
        raise ConfigErrors(errors)


def _check_hami_budgets(config: StackConfig, index: int, team: TeamConfig) -> None:
    """A team on HAMi pools needs memory and core budgets HAMi can enforce: HAMi reads 0 as no cap, and Kubernetes
    alone misses what HAMi charges beyond a container's stated requests (capacity.HAMI_QUOTA_RESOURCES)."""
    if all(config.pool(name).sharing != names.SHARING_HAMI for name in team.pools):
        return
    budgets = {"gpuMemoryMib": team.quota.gpu_memory_mib, "gpuCores": team.quota.gpu_cores}
    errors = [
        ConfigError(
            f"{PROJECT}:teams[{index}].quota.{field}",
            f"{value} leaves the team's HAMi pods uncapped (HAMi's own quota reads 0 as no limit, and Kubernetes "
            "alone misses whole-GPU, gpumem-percentage and multi-vGPU requests); allowed: at least 1 on teams with "
            "HAMi pools",
        )
        for field, value in budgets.items()
        if hami_budget_uncapped(value)
    ]
    if errors:
        raise ConfigErrors(errors)


def _check_quota(config: StackConfig, index: int, team: TeamConfig) -> None:
    """A quota above what the team's pools can ever provide is a planning mistake, not headroom."""
    plans = pool_plans(config)
    can_supply = total_supply(plans[name].supply for name in team.pools)
    asked = {
        "gpus": (team.quota.gpus, names.GPU),
        "gpuMemoryMib": (team.quota.gpu_memory_mib, names.GPU_MEMORY),
        "gpuCores": (team.quota.gpu_cores, names.GPU_CORES),
        "sharedGpus": (team.quota.shared_gpus, names.GPU_SHARED),
    }
    for field, (value, resource) in asked.items():
        if value > can_supply[resource]:
            raise ConfigError(
                f"{PROJECT}:teams[{index}].quota.{field}",
                f"{value} is more than pools {', '.join(team.pools)} can ever provide (whole nodes within "
                f"their maxGpus); allowed: at most {can_supply[resource]}",
            )
