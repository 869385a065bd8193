"""A team's quota admits pods on every pool the team lists: a zero quota on the resource a pool's pods ask makes
the pool unusable for that team, and so does, on HAMi pools, a quota refusing every way a container takes a vGPU
(stating GPU memory, cores only, or neither), by the domain function the config check uses."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.capacity import keys_refusing_vgpus, limit_resource, requests_key, smallest_gpu_units
from gpushare.hami import NodeCapacity

from ..hami import Hami, expected_capacity
from ..kube import Pool, quantity, quotas_in
from ..pools import pools_of_team, sharing_hami
from ..rule import Finding, Rule, finding
from ..stack import NAMESPACE, Resource, StackView, sorted_by_name


def _gpu_units(hami: Hami, hami_pools: list[Pool]) -> int:
    """The smallest GPU of the pools in registered gpumem units (1 when no type can be sized: other rules say why)."""
    found = [expected_capacity(hami, t) for pool in hami_pools for t in pool.instance_types or ()]
    return smallest_gpu_units(c for c in found if isinstance(c, NodeCapacity))


def _refusing_vgpus(view: StackView, namespace: Resource, quota: Resource, team_pools: list[Pool]) -> Iterator[Finding]:
    hami = Hami.of(view)
    hami_pools = [pool for pool in team_pools if sharing_hami(view, hami, pool) is not None]
    if hami is None or not hami_pools:
        return
    hard = {str(k): v for k, v in (quota.get("spec", "hard") or {}).items()}
    # HAMi before 2.10 does not hold to its limits. keys (quota-keys-enforced says so): only Kubernetes' count then.
    held = {key: value for key, value in hard.items() if hami.charges_quota or key.startswith("requests.")}
    amounts = {key: int(amount) for key, value in held.items() if (amount := quantity(value)) is not None}
    if amounts.get(requests_key(names.GPU), 1) < 1:
        return  # no vGPU admitted at all: the zero check reports it
    keys = dict(sorted(keys_refusing_vgpus(amounts, _gpu_units(hami, hami_pools)).items()))
    if keys:
        first = next(iter(keys))
        yield finding(
            quota,
            f'spec.hard["{first}"]',
            hard[first],
            f"with {', '.join(f'{key} {hard[key]}' for key in keys)} the quota refuses every vGPU pod of team "
            f"{namespace.object_name} on pools {', '.join(p.name for p in hami_pools)}, whether it states GPU memory, "
            "cores only or neither (HAMi's webhook adds gpucores: 100 to a whole vGPU and HAMi charges GPU memory to "
            "each)",
            f"raise {', '.join(f'{key} to at least {least}' for key, least in keys.items())} (teams[].quota; a key "
            "left out there caps nothing of its own) or drop the HAMi pools from the team",
        )


def check_quota_admits_pools(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}):
            continue
        if not namespace.get("metadata", "annotations", names.TEAM_POOLS_ANNOTATION):
            continue  # lists no pools: it may use any, none in particular
        team_pools = pools_of_team(view, namespace)
        needed: dict[str, list[str]] = {}
        for pool in team_pools:
            needed.setdefault(limit_resource(pool.labels.get(names.SHARING_LABEL, "")), []).append(pool.name)
        for quota in quotas_in(view, namespace.object_name):
            hard = quota.get("spec", "hard") or {}
            for resource, pool_names in needed.items():
                value = hard.get(requests_key(resource))
                if value is not None and quantity(value) == 0:
                    yield finding(
                        quota,
                        f'spec.hard["{requests_key(resource)}"]',
                        value,
                        f"team {namespace.object_name} lists pools {', '.join(pool_names)}, whose every pod asks "
                        f"{resource}: the API server refuses all of them",
                        "raise the team's quota on it (teams[].quota) or drop those pools from the team",
                    )
            yield from _refusing_vgpus(view, namespace, quota, team_pools)


RULE = Rule(
    name="team-quota-admits-its-pools",
    order=62,
    description="No team quota is zero on the resource every pod of one of the team's pools asks "
    f"({names.GPU_SHARED} on time-sliced pools, {names.GPU} on the others), nor, on HAMi pools, refuses every way a "
    "container takes a vGPU (GPU memory, cores only, a whole vGPU).",
    why="A pool listed for a team whose quota refuses every pod it could run (a zero vGPU count, or zero GPU memory "
    "and cores, which HAMi's webhook and scheduler charge) can never run the team's pods: the API server or HAMi "
    "refuses each one, while the stack looks as if the team had the pool.",
    remediation="Give the team a quota on the pool's resources (teams[].quota: a key left out caps nothing of its "
    "own), or remove the pool from the team.",
    enforcement="mandatory",
    severity="medium",
    check=check_quota_admits_pools,
)
