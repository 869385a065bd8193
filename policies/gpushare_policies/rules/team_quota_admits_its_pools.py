"""A team's quota admits pods on every pool the team lists: a zero quota on the resource a pool's pods ask makes
the pool unusable for that team."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.capacity import limit_resource

from ..kube import quantity, quotas_in
from ..pools import pools_of_team
from ..rule import Finding, Rule, finding
from ..stack import NAMESPACE, StackView, sorted_by_name


def check_quota_admits_pools(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}):
            continue
        if not namespace.get("metadata", "annotations", names.TEAM_POOLS_ANNOTATION):
            continue  # lists no pools: it may use any, none in particular
        needed: dict[str, list[str]] = {}
        for pool in pools_of_team(view, namespace):
            needed.setdefault(limit_resource(pool.labels.get(names.SHARING_LABEL, "")), []).append(pool.name)
        for quota in quotas_in(view, namespace.object_name):
            hard = quota.get("spec", "hard") or {}
            for resource, pool_names in needed.items():
                value = hard.get(f"requests.{resource}")
                if value is not None and quantity(value) == 0:
                    yield finding(
                        quota,
                        f'spec.hard["requests.{resource}"]',
                        value,
                        f"team {namespace.object_name} lists pools {', '.join(pool_names)}, whose every pod asks "
                        f"{resource}: the API server refuses all of them",
                        "raise the team's quota on it (teams[].quota) or drop those pools from the team",
                    )


RULE = Rule(
    name="team-quota-admits-its-pools",
    order=62,
    description="No team quota is zero on the resource every pod of one of the team's pools asks "
    f"({names.GPU_SHARED} on time-sliced pools, {names.GPU} on the others).",
    why="A pool listed for a team whose quota on its resource is 0 can never run the team's pods: the API server "
    "refuses each one, while the stack looks as if the team had the pool.",
    remediation="Give the team a quota on the pool's resource, or remove the pool from the team.",
    enforcement="mandatory",
    severity="medium",
    check=check_quota_admits_pools,
)
