"""Every team namespace has a quota on each GPU resource its pools offer."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.capacity import HAMI_QUOTA_RESOURCES, hami_quota_key, kubernetes_quota_key

from ..hami import is_hami_pool
from ..kube import Pool, pools, quotas_in
from ..nvidia import is_timeslice_pool
from ..pools import pools_of_team
from ..rule import Finding, Rule, finding_about
from ..stack import NAMESPACE, StackView, sorted_by_name


def _any_timeslice_pool(view: StackView) -> bool:
    """Once per view: the answer is the same for every namespace."""
    return view.memo("any-timeslice-pool", lambda: any(is_timeslice_pool(pool) for pool in pools(view)))


def _required(view: StackView, team_pools: list[Pool]) -> list[str]:
    """Quota keys a team needs: Kubernetes' on GPUs always, on HAMi's memory and cores on HAMi pools, with HAMi's
    own keys for them there (Kubernetes alone misses whole-GPU, percentage and multi-vGPU requests), and on
    time-sliced replicas whenever the stack has a time-sliced pool (a pod picks a pool by nodeSelector, not by
    team)."""
    resources = [names.GPU]
    hami = any(is_hami_pool(view, pool) for pool in team_pools)
    if hami:
        resources += [names.GPU_MEMORY, names.GPU_CORES]
    if _any_timeslice_pool(view):
        resources.append(names.GPU_SHARED)
    required = [kubernetes_quota_key(resource) for resource in resources]  # see quota_keys_enforced.py
    if hami:
        required += [hami_quota_key(resource) for resource in HAMI_QUOTA_RESOURCES]
    return required


def check_quota_present(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        labels = namespace.get("metadata", "labels") or {}
        if names.TEAM_LABEL not in labels:
            continue
        team_pools = pools_of_team(view, namespace)
        required = _required(view, team_pools)
        hard: dict = {}
        for quota in quotas_in(view, namespace.object_name):
            hard.update(quota.get("spec", "hard") or {})
        missing = [key for key in required if key not in hard]
        if missing:
            uncounted = (
                " (HAMi's limits. keys charge the whole-GPU, percentage and multi-vGPU requests Kubernetes never "
                "counts)"
                if any(key.startswith("limits.") for key in missing)
                else ""
            )
            yield finding_about(
                namespace,
                f"team namespace has no ResourceQuota on {', '.join(missing)}: one team can take every shared GPU "
                f"and the others' pods wait{uncounted}",
                f"add a ResourceQuota with spec.hard {', '.join(missing)} (gpushare renders it from teams[].quota)",
            )


RULE = Rule(
    name="team-namespace-gpu-quota",
    order=14,
    description=f"Every team namespace has a ResourceQuota on requests.{names.GPU}, and on gpumem and "
    "gpucores when the team uses HAMi pools, both as Kubernetes' requests. keys and as HAMi's own limits. keys.",
    why="Without a quota one team can take every shared GPU; with Kubernetes' keys alone, pods asking whole GPUs, "
    "a gpumem-percentage or several vGPUs take GPU memory and cores no quota counts.",
    remediation="Set teams[].quota (gpus, gpuMemoryMib, gpuCores) in the stack config.",
    enforcement="mandatory",
    severity="medium",
    check=check_quota_present,
)
