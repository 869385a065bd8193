"""Every CapacityBuffer lives in a team namespace, names a PodTemplate there, and its warm pods land on exactly one
pool, one the team may use."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..headroom import buffers, capacity_shapes, landing_pools, team_namespace
from ..placement import reach
from ..pools import pools_of_team
from ..rule import Finding, Rule, finding, finding_about
from ..stack import StackView


def check_buffer_pool(view: StackView, _config: None) -> Iterator[Finding]:
    for buffer in buffers(view):
        namespace = team_namespace(view, buffer.namespace)
        if namespace is None:
            yield finding_about(
                buffer.resource,
                f"lives in namespace {buffer.namespace}, which is no gpushare team's: no quota, isolation policy or "
                "pool list says what its warm nodes are for, and they bill with nobody to use them",
                "declare buffers in a team namespace (gpushare renders them from teams[].headroom)",
            )
            continue
        if buffer.template is None:
            yield finding(
                buffer.resource,
                "spec.podTemplateRef.name",
                buffer.template_name,
                f"the stack declares no such PodTemplate in namespace {buffer.namespace}: Karpenter marks the buffer "
                "ReadyForProvisioning=False (PodTemplateNotFound) and keeps nothing warm",
                "name the PodTemplate declared beside it (gpushare's is gpushare-headroom-<pool>)",
            )
            continue
        team_pools = pools_of_team(view, namespace)
        allowed = ", ".join(pool.name for pool in team_pools)
        landing = landing_pools(view, buffer)
        outside = [pool.name for pool in landing if pool not in team_pools]
        if outside:
            yield finding_about(
                buffer.template,
                f"its pods can land on pools {', '.join(outside)}, which team {buffer.namespace} does not list "
                f"({allowed}): Karpenter may keep warm nodes the team's own pods are refused on, or another team's",
                f"select one of the team's pools: nodeSelector {names.POOL_LABEL}: <pool>",
            )
        elif len(landing) > 1:
            yield finding_about(
                buffer.template,
                f"its pods can land on pools {', '.join(p.name for p in landing)}: Karpenter keeps the warm nodes in "
                "whichever it prefers, not where the team's pods go (they must select one pool)",
                f"select one pool: nodeSelector {names.POOL_LABEL}: <pool>",
            )
        elif not landing:
            why = next(
                (
                    f"on team pool {pool.name}: {blocker.key} {blocker.why}"
                    for pool in team_pools
                    if (blocker := reach(buffer.placement, pool, capacity_shapes(pool))[1]) is not None
                ),
                "no NodePool exists",
            )
            yield finding_about(
                buffer.template,
                f"its pods land on no pool ({why}): Karpenter keeps nothing warm for buffer "
                f"{buffer.resource.object_name}",
                f"select one of the team's pools ({allowed}) and tolerate its taints, as the team's pods do",
            )


RULE = Rule(
    name="capacity-buffer-selects-team-pool",
    order=51,
    description="Every CapacityBuffer lives in a team namespace and names a PodTemplate there whose pods land (by "
    "nodeSelector, required node affinity and tolerations) on exactly one pool, one the team lists.",
    why="Karpenter places a buffer's virtual pods like pending pods: a template that selects no pool, another "
    "team's, or none it tolerates keeps warm nodes where the team's pods never go, or none at all, and bills for it.",
    remediation="Give the template the pool selector and GPU toleration the team's pods carry (gpushare renders "
    "them from teams[].headroom).",
    enforcement="mandatory",
    severity="high",
    check=check_buffer_pool,
)
