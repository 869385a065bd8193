"""Rule 12: every team namespace has a GPU quota, and no quota asks more than the team's pools provide."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from decimal import Decimal

from gpushare import names

from .hami import Hami
from .kube import Pool, pools, quantity
from .limits import per_node, sharing_hami
from .rule import Finding, Rule, finding
from .stack import NAMESPACE, RESOURCE_QUOTA, Resource, StackView, sorted_by_name


def _team_pools(namespace_pools: str | None, all_pools: list[Pool], by_name: dict[str, list[Pool]]) -> list[Pool]:
    """The listed pools in `all_pools` order (by name), looked up rather than rescanned per namespace."""
    if not namespace_pools:
        return all_pools
    wanted = sorted({name.strip() for name in namespace_pools.split(",")})
    return [pool for name in wanted for pool in by_name.get(name, ())]


def _quotas(view: StackView, namespace: str) -> list[Resource]:
    return list(
        view.memo("quotas-by-namespace", lambda: _by_namespace(view.of_type(RESOURCE_QUOTA))).get(namespace, ())
    )


def _by_namespace(quotas: list[Resource]) -> dict[str, list[Resource]]:
    """Grouped once, not rescanned per namespace; a non-string namespace names no namespace."""
    grouped: dict[str, list[Resource]] = defaultdict(list)
    for quota in quotas:
        namespace = quota.get("metadata", "namespace")
        if isinstance(namespace, str):
            grouped[namespace].append(quota)
    return grouped


def check_quota_present(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        labels = namespace.get("metadata", "labels") or {}
        if names.TEAM_LABEL not in labels:
            continue
        exclusive_only = labels.get(names.HAMI_WEBHOOK_IGNORE[0]) == names.HAMI_WEBHOOK_IGNORE[1]
        required = [names.GPU] if exclusive_only else [names.GPU, names.GPU_MEMORY, names.GPU_CORES]
        hard: dict = {}
        for quota in _quotas(view, namespace.object_name):
            hard.update(quota.get("spec", "hard") or {})
        missing = [f"requests.{r}" for r in required if f"requests.{r}" not in hard]  # see quota_keys.py
        if missing:
            yield Finding(
                namespace,
                f"{namespace.label}: team namespace has no ResourceQuota on {', '.join(missing)}: one team can take "
                "every shared GPU and the others' pods wait. Fix: add a ResourceQuota with spec.hard "
                f"{', '.join(missing)} (gpushare renders it from teams[].quota).",
            )


def _pool_supply(view: StackView, hami: Hami | None, pool: Pool, key: str) -> Decimal | None:
    """The most of `key` a pool can ever provide within its limits (None: unlimited or unknown)."""
    gpu_limit = quantity(pool.limits.get(names.GPU)) if names.GPU in pool.limits else None
    if gpu_limit is None:
        return None
    if key == names.GPU:
        return gpu_limit
    best = Decimal(0)
    pool_hami = sharing_hami(view, hami, pool)
    for instance_type in pool.instance_types or ():
        node = per_node(pool_hami, instance_type)
        if key in node and node[names.GPU][0]:
            best = max(best, (gpu_limit // node[names.GPU][0]) * node[key][0])
    return best


def check_quota_fits(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    all_pools = pools(view)
    by_name: dict[str, list[Pool]] = defaultdict(list)
    for pool in all_pools:
        by_name[pool.name].append(pool)
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}):
            continue
        listed = namespace.get("metadata", "annotations", names.TEAM_POOLS_ANNOTATION)
        team_pools = _team_pools(listed, all_pools, by_name)
        for quota in _quotas(view, namespace.object_name):
            for key in (names.GPU, names.GPU_MEMORY, names.GPU_CORES):
                value = (quota.get("spec", "hard") or {}).get(f"requests.{key}")
                asked = quantity(value) if value is not None else None
                supplies = [_pool_supply(view, hami, pool, key) for pool in team_pools]
                if asked is None or not supplies or None in supplies:
                    continue
                total = sum(supplies, Decimal(0))
                if asked > total:
                    yield finding(
                        quota,
                        f'spec.hard["requests.{key}"]',
                        value,
                        f"pools {', '.join(p.name for p in team_pools)} can provide at most {total} within their "
                        "limits, so the quota promises the team capacity that never comes",
                        f"lower it to {total} or raise the pools' limits",
                    )


RULES = (
    Rule(
        name="team-namespace-gpu-quota",
        description="Every team namespace has a ResourceQuota on requests.nvidia.com/gpu, and on gpumem and "
        "gpucores when the team uses HAMi pools.",
        why="Without a quota one team can take every shared GPU.",
        remediation="Set teams[].quota (gpus, gpuMemoryMib, gpuCores) in the stack config.",
        enforcement="mandatory",
        severity="medium",
        check=check_quota_present,
    ),
    Rule(
        name="team-quota-within-pool-limits",
        description="No team quota asks more than the limits of the team's pools can provide.",
        why="A quota above what the pools can ever launch promises capacity that never comes.",
        remediation="Lower the quota or raise the pools' maxGpus.",
        enforcement="advisory",
        severity="low",
        check=check_quota_fits,
    ),
)
