"""Every team namespace has a quota on each GPU resource its pools offer."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.capacity import limits_key, requests_key
from gpushare.quota import QUOTA

from ..hami import Hami, is_hami_pool
from ..kube import Pool, pools, quotas_in
from ..nvidia import is_timeslice_pool
from ..pools import pools_of_team
from ..rule import Finding, Rule, finding_about
from ..stack import NAMESPACE, StackView, sorted_by_name


def _any_timeslice_pool(view: StackView) -> bool:
    """Once per view: the answer is the same for every namespace."""
    return view.memo("any-timeslice-pool", lambda: any(is_timeslice_pool(pool) for pool in pools(view)))


def _required(view: StackView, team_pools: list[Pool]) -> list[str]:
    """Quota keys a team's pods can be charged under: vGPUs always; Kubernetes' memory and cores on HAMi pools, and
    HAMi's own (which also charge memory no container states: percentage, whole-GPU and cores-only requests) where
    the HAMi release charges them without leaking (2.10.0+); and time-sliced replicas whenever the stack has a
    time-sliced pool (a pod picks a pool by nodeSelector, not by team)."""
    required = [requests_key(names.GPU)]
    if any(is_hami_pool(view, pool) for pool in team_pools):
        charged = [resource.name for resource in QUOTA if resource.hami_charges]
        required += [requests_key(name) for name in charged]
        hami = Hami.of(view)
        if hami is not None and hami.charges_quota:
            required += [limits_key(name) for name in charged]
    if _any_timeslice_pool(view):
        required.append(requests_key(names.GPU_SHARED))
    return required


def check_quota_present(view: StackView, _config: None) -> Iterator[Finding]:
    for namespace in sorted_by_name(view.of_type(NAMESPACE)):
        labels = namespace.get("metadata", "labels") or {}
        if names.TEAM_LABEL not in labels:
            continue
        team_pools = pools_of_team(view, namespace)
        hard: dict = {}
        for quota in quotas_in(view, namespace.object_name):
            hard.update(quota.get("spec", "hard") or {})
        missing = [key for key in _required(view, team_pools) if key not in hard]  # see quota_keys_enforced.py
        if missing:
            unstated = any(key.startswith("limits.") for key in missing)
            yield finding_about(
                namespace,
                f"team namespace has no ResourceQuota on {', '.join(missing)}: one team can take every shared GPU "
                + ("(HAMi's limits. keys also charge the GPU memory of requests that state none) " if unstated else "")
                + "and the others' pods wait",
                f"add a ResourceQuota with spec.hard {', '.join(missing)} (gpushare renders it from teams[].quota)",
            )


RULE = Rule(
    name="team-namespace-gpu-quota",
    order=14,
    description=f"Every team namespace has a ResourceQuota on requests.{names.GPU}, and on gpumem and gpucores when "
    "the team uses HAMi pools: as requests. keys, and as HAMi's limits. keys where HAMi (2.10.0+) charges them.",
    why="Without a quota one team can take every shared GPU.",
    remediation="Set teams[].quota (gpus, gpuMemoryMib, gpuCores) in the stack config.",
    enforcement="mandatory",
    severity="medium",
    check=check_quota_present,
)
