"""ResourceQuota keys for HAMi's resources that someone enforces: Kubernetes' `requests.<name>`, and HAMi's own
`limits.nvidia.com/gpumem` and `gpucores` where HAMi's scheduler charges them correctly.

Kubernetes quota supports extended resources (HAMi's nvidia.com/*) only with the `requests.` prefix (kubernetes.io
docs, Resource Quotas, "Resource quota for extended resources"); a bare or `limits.` key for them caps nothing in
Kubernetes. HAMi's scheduler reads `limits.` keys of its memory and core resources itself (pkg/device/quota.go
managedQuotaName) and charges each pod what it hands out. HAMi 2.8.x and 2.9.x leak that charge each time they
filter a pod again (pkg/scheduler/scheduler.go Filter: podManager.DelPod without quotaManager.RmUsage; seen in the
offline cluster), so there such a key ends up refusing pods within the budget; 2.10.0 returns it (PR #1905).
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.capacity import limits_key
from gpushare.quota import QUOTA

from ..hami import Hami
from ..rule import Finding, Rule, finding
from ..stack import RESOURCE_QUOTA, StackView, sorted_by_name

HAMI_RESOURCES = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_MEMORY_PERCENTAGE)
# The limits. keys HAMi's own scheduler enforces.
HAMI_ENFORCED = frozenset(limits_key(resource.name) for resource in QUOTA if resource.hami_charges)


def _hami_problem(hami: Hami | None) -> str | None:
    """Why HAMi's own limits. keys do not hold in this stack, or None."""
    if hami is None:
        return "no HAMi release reads it, so it caps nothing"
    if not hami.charges_quota:
        return (
            f"HAMi chart {hami.version}'s scheduler enforces it but leaks its charge each time it filters a pod again "
            "(any burst), then refuses pods within the budget (fixed in 2.10.0)"
        )
    return None


def check(view: StackView, _config: None) -> Iterator[Finding]:
    hami_problem = _hami_problem(Hami.of(view))
    for quota in sorted_by_name(view.of_type(RESOURCE_QUOTA)):
        for key in sorted(str(k) for k in quota.get("spec", "hard") or {}):
            resource = key.removeprefix("limits.")
            if resource not in HAMI_RESOURCES:
                continue
            if key in HAMI_ENFORCED:
                if hami_problem is not None:
                    yield finding(
                        quota,
                        f'spec.hard["{key}"]',
                        quota.get("spec", "hard", key),
                        hami_problem,
                        f"pin HAMi chart 2.10.0 or newer, or keep only requests.{resource}",
                    )
                continue
            yield finding(
                quota,
                f'spec.hard["{key}"]',
                quota.get("spec", "hard", key),
                f"Kubernetes enforces quota on the extended resource {resource} only as requests.{resource}, and "
                f"HAMi reads only limits.{names.GPU_MEMORY} and limits.{names.GPU_CORES}: this key caps nothing",
                f"write it as requests.{resource}",
            )


RULE = Rule(
    name="quota-keys-enforced",
    order=16,
    description="ResourceQuota keys for HAMi's extended resources use the requests. prefix, the only one Kubernetes "
    f"enforces for them, or are HAMi's own limits.{names.GPU_MEMORY} and limits.{names.GPU_CORES} on a HAMi "
    "release (2.10.0+) that charges them without leaking.",
    why="A bare or limits. key for nvidia.com/* that nobody reads caps nothing: the team is believed limited and is "
    "not; HAMi before 2.10 leaks its own quota's charge and refuses pods within the budget.",
    remediation=f"Write quota keys as requests.{names.GPU}, requests.{names.GPU_MEMORY}, ...; HAMi's limits. memory "
    "and core keys need HAMi 2.10.0 or newer.",
    enforcement="mandatory",
    severity="high",
    check=check,
)
