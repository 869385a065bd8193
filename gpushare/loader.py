"""Loading the stack file: the raw `config:` map (of a Pulumi.<stack>.yaml, or what the Pulumi engine passes the
program) becomes a StackConfig, or ConfigErrors naming every bad key.

Above the domain layer on purpose: the cross-key checks it runs (gpushare/checks/, one module per config section:
catalog membership, what a pool's nodes register, what a team's pools can supply) call `capacity.py`, which itself
reads the typed models of `gpushare/config/`. The order it runs them in is the order their problems are reported in.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from datetime import date
from typing import Annotated, Any

from pydantic import TypeAdapter, ValidationError

from gpushare import stackfile
from gpushare.catalog import Catalog, load_catalog
from gpushare.checks.charts import check_chart_folder
from gpushare.checks.cluster import (
    check_cluster_mode,
    check_existing_gates,
    check_nodes_reach_the_endpoint,
    check_principals_once,
    check_system_nodes_without_gpus,
)
from gpushare.checks.headroom import check_headroom
from gpushare.checks.pools import check_pool, check_unique_names
from gpushare.checks.teams import check_teams
from gpushare.checks.versions import check_kubernetes_version, check_minimum_versions
from gpushare.config import (
    CONFIG_KEYS,
    PATTERN_RULES,
    PROJECT,
    ExistingClusterConfig,
    ExistingKarpenterConfig,
    StackConfig,
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
            problems.errors.extend(check_headroom(config))
    problems.raise_any()
