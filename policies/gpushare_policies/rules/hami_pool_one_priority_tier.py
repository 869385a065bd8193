"""Teams of different priority tiers do not share a HAMi pool, where their tiers cannot preempt.

kube-scheduler preempts only for resources it sees: HAMi's KubeSchedulerConfiguration marks nvidia.com/gpu,
gpumem and gpucores `ignoredByScheduler` and its extender has no preempt verb (HAMi charts 2.8.3 and 2.10.0; HAMi
#1878), so for a critical pod on a full HAMi pool the scheduler finds no victims: it waits for a node Karpenter launches
within the pool's limit, and no batch pod is evicted. The offline cluster's `priorities` scenario shows it.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..hami import hami_pools
from ..pools import pools_of_team
from ..rule import Finding, Rule, finding_about
from ..stack import NAMESPACE, StackView, sorted_by_name


def check_one_tier(view: StackView, _config: None) -> Iterator[Finding]:
    tiers: dict[str, dict[str, str]] = {}  # pool -> team -> tier
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        tier = namespace.get("metadata", "annotations", names.TEAM_PRIORITY_ANNOTATION)
        if names.TEAM_LABEL not in (namespace.get("metadata", "labels") or {}) or not isinstance(tier, str):
            continue
        for pool in pools_of_team(view, namespace):
            tiers.setdefault(pool.name, {})[namespace.object_name] = tier
    for pool in hami_pools(view):
        teams = tiers.get(pool.name, {})
        if len(set(teams.values())) > 1:
            listed = ", ".join(f"{team} ({tier})" for team, tier in sorted(teams.items()))
            yield finding_about(
                pool.resource,
                f"HAMi pool {pool.name} is shared by teams of different priority tiers: {listed}. kube-scheduler "
                "cannot preempt on HAMi pools (HAMi's resources are ignoredByScheduler and its extender has no "
                "preempt verb, HAMi #1878): a higher tier's pod waits for a new node within the pool's limit and "
                "never evicts a lower tier's pod",
                "give the higher-tier teams a HAMi pool of their own, or keep headroom in this pool's maxGpus "
                "(its NodePool limit) so Karpenter can always launch a node for them",
            )


RULE = Rule(
    name="hami-pool-one-priority-tier",
    order=41,
    description="No HAMi NodePool is shared by teams of different priority tiers.",
    why="Priority tiers preempt only on exclusive and time-sliced pools: on a HAMi pool kube-scheduler sees none "
    "of HAMi's resources, so a critical pod never evicts a batch pod and waits for a new node instead.",
    remediation="Give critical teams their own HAMi pool, or headroom in the shared pool's maxGpus (see the "
    "docs/sharing.md, Team scheduling and priorities).",
    enforcement="advisory",
    severity="low",
    check=check_one_tier,
)
