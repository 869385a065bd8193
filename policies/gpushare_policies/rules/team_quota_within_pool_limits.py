"""No team quota asks more than the team's pools can ever provide within their limits: Kubernetes' `requests.` key
and HAMi's `limits.` key of each quota resource, in the registered units both count, as the config check compares."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.capacity import limits_key, requests_key, supply, total_supply
from gpushare.quota import QUOTA

from ..kube import Pool, quantity, quotas_in
from ..pools import pool_view, pools_of_team
from ..rule import Finding, Rule, finding
from ..stack import NAMESPACE, StackView, sorted_by_name


def _pool_supply(view: StackView, pool: Pool) -> dict[str, int] | None:
    """What a pool can ever provide within its limits, by the domain function the config check uses (None:
    unlimited, or a type gpushare cannot size)."""
    sized = pool_view(view, pool)
    return None if sized is None else supply(sized.nodes, sized.limit, sized.counted)


def check_quota_fits(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}):
            continue
        team_pools = pools_of_team(view, namespace)
        supplies = [_pool_supply(view, pool) for pool in team_pools]
        if not supplies or None in supplies:
            continue
        can_supply = total_supply(s for s in supplies if s is not None)
        keys = [
            (key, resource.name)
            for resource in QUOTA
            for key in (requests_key(resource.name), *([limits_key(resource.name)] if resource.hami_charges else []))
        ]
        for quota in quotas_in(view, namespace.object_name):
            hard = quota.get("spec", "hard") or {}
            for key, resource in keys:
                value = hard.get(key)
                asked = quantity(value) if value is not None else None
                total = can_supply[resource]
                if asked is not None and asked > total:
                    yield finding(
                        quota,
                        f'spec.hard["{key}"]',
                        value,
                        f"pools {', '.join(p.name for p in team_pools)} can provide at most {total} (whole nodes "
                        "within their limits), so the quota promises the team capacity that never comes",
                        f"lower it to {total} or raise the pools' limits",
                    )


RULE = Rule(
    name="team-quota-within-pool-limits",
    order=15,
    description="No team quota (its requests. keys, and HAMi's limits. keys) asks more than the limits of the team's "
    "pools can provide, counted in the units nodes register.",
    why="A quota above what the pools can ever launch promises capacity that never comes; the config refuses it, so "
    "a plan holding one was edited by hand.",
    remediation="Lower the quota (teams[].quota; a key left out is the pools' own bound) or raise the pools' maxGpus.",
    enforcement="mandatory",
    severity="medium",
    check=check_quota_fits,
)
