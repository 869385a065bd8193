"""Loading the stack file: the raw `config:` map (of a Pulumi.<stack>.yaml, or what the Pulumi engine passes the
program) becomes a StackConfig, or ConfigErrors naming every bad key.

Above the domain layer on purpose: the cross-key checks (catalog membership, what a pool's nodes register, what
a team's pools can supply) call `capacity.py`, which itself reads the typed models of `config.py`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import replace
from datetime import date
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from gpushare import compat, images, karpenter_api, names, stackfile
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
from gpushare.catalog import Catalog, load_catalog
from gpushare.checks.charts import check_chart_folder
from gpushare.checks.cluster import (
    check_cluster_mode,
    check_existing_gates,
    check_nodes_reach_the_endpoint,
    check_principals_once,
    check_system_nodes_without_gpus,
)
from gpushare.checks.pools import check_pool, check_unique_names
from gpushare.checks.teams import check_teams
from gpushare.checks.versions import (
    check_kubernetes_version,
    check_minimum_versions,
)
from gpushare.config import (
    CONFIG_KEYS,
    PATTERN_RULES,
    PROJECT,
    ExistingClusterConfig,
    ExistingKarpenterConfig,
    HeadroomConfig,
    HeadroomShapeConfig,
    StackConfig,
    TeamConfig,
    trusted_registries_context,
)
from gpushare.errors import ConfigError, Problems, all_errors, key_path
from gpushare.wording import Wording


def _config_key(loc: tuple[int | str, ...]) -> str:
    """pydantic location -> the key as a user writes it: `gpushare:pools[0].maxGpus`."""
    if not loc:
        return PROJECT
    if loc[-1] == "[key]":  # pydantic's marker for a bad map key: the key itself names the place
        loc = loc[:-1]
    head, *rest = loc
    return key_path("aws:region" if head == "region" else f"{PROJECT}:{head}", rest)


WORDING = Wording(StackConfig, PATTERN_RULES)


def _project_key(key: Any, value: Any, secret_keys: Collection[str]) -> str | None:
    """The StackConfig field a stack-file key sets, None for a key Pulumi or a provider reads; ConfigError for a key
    the engine cannot parse, one nobody reads (it would be dropped without a word) or a secret `gpushare:` value.
    The program runs this over its whole config under `pulumi up` too, so the engine and the offline plan agree."""
    namespace, name = stackfile.parse_key(key, PROJECT, CONFIG_KEYS)
    full = f"{namespace}:{name}"
    if full == "aws:region":
        return "region"
    if namespace != PROJECT:
        problem = stackfile.foreign_key_problem(namespace, name, PROJECT, CONFIG_KEYS)
        if problem is not None:
            raise ConfigError(str(key), problem)
        return None
    if name not in CONFIG_KEYS:
        nearest = stackfile.nearest_key(full, PROJECT, CONFIG_KEYS)
        hint = f"did you mean {nearest}? " if nearest else ""
        raise ConfigError(str(key), f"unknown key; {hint}allowed: {', '.join(f'{PROJECT}:{k}' for k in CONFIG_KEYS)}")
    if key in secret_keys or full in secret_keys or stackfile.is_secure(value):
        raise ConfigError(
            str(key),
            "is a secret (secure:): gpushare keys hold no secrets, and the offline plan could not decrypt one; "
            "allowed: the plain value (credentials stay in Kubernetes Secrets the stack names, e.g. "
            "monitoring.alertReceiver.secretName)",
        )
    return name


def _decode(key: str, value: Any) -> Any:
    """Pulumi hands object config to programs as JSON text; stack files hold it as YAML objects."""
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.loads(value)
        except json.JSONDecodeError as error:
            raise ConfigError(key, f"is not valid JSON ({error.msg} at column {error.colno})") from None
    return value


def load_stack_config(
    raw: Mapping[str, Any],
    catalog: Catalog | None = None,
    *,
    today: date,
    secret_keys: Collection[str] = (),
) -> StackConfig:
    """Validate the raw stack config map (every key of it: see `_project_key`); ConfigErrors lists every bad key
    found, one line each: the schema's problems, and the cross-key rules' over every section that holds on its own.
    `today` is the day EKS support windows are judged for: the CLI and the program pass the real date, tests a fixed
    one. `secret_keys` are the keys the engine decrypted for the program (`pulumi config set --secret`)."""
    catalog = catalog or load_catalog()
    data: dict[str, Any] = {}
    problems = Problems()
    stand_ins: dict[str, Any] = {}  # a refused key's value, for the key it most likely meant
    for key, value in raw.items():
        try:
            name = _project_key(key, value, secret_keys)
        except ConfigError as error:
            problems.errors.append(error)
            # a misspelt key's value stands in for the key it meant; never a refused key's own (a secret's)
            meant = stackfile.nearest_key(str(key), PROJECT, CONFIG_KEYS)
            if meant is not None and meant.startswith(f"{PROJECT}:") and meant != stackfile.engine_key(str(key)):
                stand_ins.setdefault(meant.partition(":")[2], value)
            continue
        if name is None:
            continue  # Pulumi's or a provider's key: theirs to read
        try:
            data[name] = _decode(f"{PROJECT}:{name}" if name != "region" else "aws:region", value)
        except ConfigError as error:
            problems.errors.append(error)
    # A misspelled key is one mistake: the key it meant is not also "required", nor its absence felt further on.
    for name, value in stand_ins.items():
        if name not in data:
            try:
                data[name] = _decode(f"{PROJECT}:{name}", value)
            except ConfigError as error:
                problems.errors.append(error)
    try:
        config = StackConfig.model_validate(data, context=trusted_registries_context(data.get("trustedRegistries")))
    except ValidationError as error:
        problems.errors.extend(all_errors(error, _config_key, WORDING).errors)
        partial, sections = _valid_sections(data)
        problems.check(check_references, partial, catalog, today, sections)
        _raise_one_line_per_key(problems)
        raise  # unreachable: a ValidationError always carries a problem
    problems.check(check_references, config, catalog, today)
    _raise_one_line_per_key(problems)
    return config


def _valid_sections(data: dict[str, Any]) -> tuple[StackConfig, frozenset[str]]:
    """The stack with only the top-level sections that validate on their own (unchecked as a whole), and their
    names: cross-key rules over those still run when another section is broken."""
    valid: dict[str, Any] = {}
    for name, field in StackConfig.model_fields.items():
        key = field.alias or name
        if key not in data:
            if not field.is_required():
                valid[name] = field.get_default(call_default_factory=True)
            continue
        try:
            constrained = Annotated[(field.annotation, *field.metadata)] if field.metadata else field.annotation
            context = trusted_registries_context(data.get("trustedRegistries"))
            valid[name] = TypeAdapter(constrained).validate_python(data[key], context=context)
        except ValidationError:
            continue
    sections = frozenset(valid)
    existing = data.get("existingCluster")
    if existing is not None and "existing_cluster" not in sections:
        # A broken existingCluster still says which cluster mode holds, and its Karpenter (when that part holds)
        # still judges the rest; the section itself stays unready.
        valid["existing_cluster"] = ExistingClusterConfig.model_construct(karpenter=_karpenter_part(existing))
    return StackConfig.model_construct(**valid), sections


def _karpenter_part(existing: Any) -> ExistingKarpenterConfig | None:
    """existingCluster.karpenter when it validates on its own, else None."""
    try:
        return ExistingKarpenterConfig.model_validate(existing.get("karpenter") if isinstance(existing, dict) else None)
    except ValidationError:
        return None


def _raise_one_line_per_key(problems: Problems) -> None:
    """A key reported once: the first layer's complaint (a value that is not JSON is not also "required")."""
    first: dict[str, ConfigError] = {}
    for error in problems.errors:
        first.setdefault(error.key, error)
    problems.errors = list(first.values())
    problems.raise_any()


SECTIONS: frozenset[str] = frozenset(StackConfig.model_fields)
# What decides which charts, of which versions, the stack deploys.
CHART_SECTIONS = ("chart_source", "existing_cluster", "karpenter", "hami", "nvidia_device_plugin", "monitoring")


def check_references(config: StackConfig, catalog: Catalog, today: date, sections: frozenset[str] = SECTIONS) -> None:
    """Cross-key rules pydantic cannot see: the EKS support window, names, catalog membership, capacity, quotas,
    access and topology. Each runs when the sections it reads are valid; ConfigErrors lists what they found. A
    broken existingCluster still decides the cluster mode (and holds its Karpenter when that part is valid)."""

    def ready(*needed: str) -> bool:
        return set(needed) <= sections

    existing = config.existing_cluster is not None
    running = config.existing_cluster.karpenter if config.existing_cluster is not None else None
    problems = Problems()
    problems.errors.extend(check_cluster_mode(config, ready, existing))
    if existing and running is None:
        # The running Karpenter's version is in the broken key: what is judged against it waits for that key.
        sections = sections - {"karpenter"}
    version_errors = len(problems.errors)
    if ready("cluster") and (existing or ready("karpenter")):
        problems.check(check_kubernetes_version, config, today, existing)
    # An unsupported version is one cause, reported once: what it lacks (features a newer minor brings) follows
    # from it, so the checks that judge a feature by the version run only on a version the stack supports.
    version_known = ready("cluster") and len(problems.errors) == version_errors
    problems.errors.extend(check_minimum_versions(config, ready, version_known))
    if ready("cluster", "teams") and not existing:
        problems.errors.extend(check_principals_once(config))
    if ready("cluster"):
        problems.errors.extend(check_nodes_reach_the_endpoint(config))
        problems.errors.extend(check_system_nodes_without_gpus(config, catalog))
    if ready("teams"):
        problems.check(check_unique_names, "teams", [t.name for t in config.teams])
    if not ready("pools", "hami"):
        problems.raise_any()
        return
    pool_problems = Problems()
    pool_problems.check(check_unique_names, "pools", [p.name for p in config.pools])
    for i, pool in enumerate(config.pools):
        pool_problems.check(check_pool, config, catalog, i, pool)
    problems.errors.extend(pool_problems.errors)
    if not pool_problems.errors and ready("teams") and running is not None:
        problems.errors.extend(check_existing_gates(config, running))
    if not pool_problems.errors and ready(*CHART_SECTIONS):
        problems.errors.extend(check_chart_folder(config))
    if ready("teams"):
        # quota and admission checks compute each pool's capacity; admission also reads the cluster's version
        problems.errors.extend(check_teams(config, not pool_problems.errors, ready("cluster"), version_known))
        if not pool_problems.errors and ready("karpenter"):
            problems.errors.extend(_check_headroom(config))
    problems.raise_any()


def ineffective_keys(config: StackConfig) -> list[str]:
    """Keys the stack file sets that change nothing in this combination and mislead no one: one warning line each
    (`make plan` prints them, `pulumi up` logs them). Combinations that would make someone believe a thing is done
    (an alert receiver without monitoring, a scheduler policy no HAMi reads) are refused instead."""
    found: list[str] = []
    monitoring = config.monitoring
    if not monitoring.enabled:
        found += [
            f"{PROJECT}:monitoring.{key}: has no effect while gpushare:monitoring.enabled is false: nothing is "
            "deployed that reads it"
            for key in monitoring.given("retention", "storage_size", "storage_class", "alerts")
        ]
    if not any(pool.sharing == names.SHARING_HAMI for pool in config.pools):
        found += [
            f"{PROJECT}:hami.{key}: has no effect: no pool has sharing hami, so HAMi slices no GPU and the mock "
            "registers on no node"
            for key in config.hami.given("profile", "scheduler_policy", "mock_device_plugin_image")
        ]
    charts = config.charts()
    if config.given("nvidia_device_plugin") and names.NVIDIA_PLUGIN_CHART not in charts:
        found.append(
            f"{PROJECT}:nvidiaDevicePlugin: has no effect: every pool has sharing hami, so the NVIDIA device plugin "
            "is not deployed"
        )
    pulled = images.registries(charts) | {images.split_registry(config.hami.mock_device_plugin_image)[0]}
    found += [
        f"{PROJECT}:registryMirrors.{registry}: has no effect: no image this stack deploys comes from {registry} "
        f"(they come from {', '.join(sorted(pulled))})"
        for registry in config.registry_mirrors
        if registry not in pulled
    ]
    for i, pool in enumerate(config.pools):
        disruption = pool.disruption
        never = karpenter_api.reasons_never_disrupted(disruption.consolidation_policy, disruption.consolidate_after)
        found += [
            f"{PROJECT}:pools[{i}].disruption.budgets[{j}].reasons: {list(budget.reasons)} has no effect: a pool with "
            f"consolidationPolicy {disruption.consolidation_policy} and consolidateAfter "
            f"{disruption.consolidate_after} never disrupts a node for those reasons, so the budget never limits "
            "anything"
            for j, budget in enumerate(disruption.budgets)
            if budget.reasons and set(budget.reasons) <= never
        ]
    found += [
        f"{PROJECT}:teams[{i}].spotOnly: has no effect: every pool of the team ({', '.join(team.pools)}) offers spot "
        "capacity only"
        for i, team in enumerate(config.teams)
        if team.spot_only
        and all(config.pool(name).capacity_types == (names.CAPACITY_TYPE_SPOT,) for name in team.pools)
    ]
    return found


def _check_headroom(config: StackConfig) -> list[ConfigError]:
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
