"""Rule 12: every team namespace has a GPU quota, and no quota asks more than the team's pools provide."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from gpushare import names
from gpushare.capacity import QUOTA_RESOURCES, NodeShape, supply, total_supply

from .hami import Hami, is_hami_pool
from .kube import Pool, pools, quantity
from .limits import per_node, pool_slicing, sharing_hami
from .nvidia import is_timeslice_pool
from .rule import Finding, Rule, finding
from .stack import NAMESPACE, RESOURCE_QUOTA, Resource, StackView, sorted_by_name


def _pools_by_name(view: StackView) -> dict[str, list[Pool]]:
    grouped: dict[str, list[Pool]] = defaultdict(list)
    for pool in pools(view):
        grouped[pool.name].append(pool)
    return grouped


def _team_pools(view: StackView, namespace: Resource) -> list[Pool]:
    """The pools a team namespace lists (all when it lists none), looked up rather than rescanned per namespace."""
    listed = namespace.get("metadata", "annotations", names.TEAM_POOLS_ANNOTATION)
    if not isinstance(listed, str) or not listed:
        return pools(view)
    by_name = view.memo("pools-by-name", lambda: _pools_by_name(view))
    wanted = sorted({name.strip() for name in listed.split(",")})
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


def _required(view: StackView, team_pools: list[Pool]) -> list[str]:
    """Quota resources a team's pods can ask on its pools: GPUs always, HAMi's on HAMi pools, replicas on
    time-sliced ones."""
    required = [names.GPU]
    if any(is_hami_pool(view, pool) for pool in team_pools):
        required += [names.GPU_MEMORY, names.GPU_CORES]
    if any(is_timeslice_pool(pool) for pool in team_pools):
        required.append(names.GPU_SHARED)
    return required


def check_quota_present(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        labels = namespace.get("metadata", "labels") or {}
        if names.TEAM_LABEL not in labels:
            continue
        team_pools = _team_pools(view, namespace)
        required = _required(view, team_pools)
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


def _pool_supply(view: StackView, hami: Hami | None, pool: Pool) -> dict[str, int] | None:
    """What a pool can ever provide within its limits, by the domain function the config check uses (None:
    unlimited, or a type gpushare cannot size)."""
    sliced = pool_slicing(view, pool)
    counted = sliced[0] if sliced else names.GPU
    limit = quantity(pool.limits.get(counted)) if counted in pool.limits else None
    if limit is None:
        return None
    pool_hami = sharing_hami(view, hami, pool)
    shapes = []
    for instance_type in pool.instance_types or ():
        node = {key: int(amount) for key, (amount, _unit) in per_node(pool_hami, instance_type, sliced).items()}
        if not node:
            return None
        if counted != names.GPU:
            del node[names.GPU]  # time-slicing renames the GPUs: the node registers only the replicas
        shapes.append(NodeShape(instance_type, node))
    return supply(shapes, int(limit), counted)


def check_quota_fits(view: StackView, _config: None) -> Iterator[Finding]:
    hami = Hami.of(view)
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}):
            continue
        team_pools = _team_pools(view, namespace)
        supplies = [_pool_supply(view, hami, pool) for pool in team_pools]
        if not supplies or None in supplies:
            continue
        can_supply = total_supply(s for s in supplies if s is not None)
        for quota in _quotas(view, namespace.object_name):
            for key in QUOTA_RESOURCES:
                value = (quota.get("spec", "hard") or {}).get(f"requests.{key}")
                asked = quantity(value) if value is not None else None
                total = can_supply[key]
                if asked is not None and asked > total:
                    yield finding(
                        quota,
                        f'spec.hard["requests.{key}"]',
                        value,
                        f"pools {', '.join(p.name for p in team_pools)} can provide at most {total} (whole nodes "
                        "within their limits), so the quota promises the team capacity that never comes",
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
