"""ResourceQuota keys that Kubernetes enforces for extended resources: only `requests.<name>`.

Kubernetes quota supports extended resources (HAMi's nvidia.com/*) only with the `requests.` prefix
(kubernetes.io docs, Resource Quotas, "Resource quota for extended resources"); a bare or `limits.` key for
them caps nothing in Kubernetes, so a team believed to be capped is not. HAMi 2.8.3's scheduler reads
`limits.nvidia.com/gpumem` and `gpucores` itself (pkg/device/quota.go), but leaks the charge of every pod it
filters again (pkg/scheduler/scheduler.go Filter: podManager.DelPod without quotaManager.RmUsage; seen in the
offline cluster), so such a key ends up refusing pods within the budget.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..rule import Finding, Rule, finding
from ..stack import RESOURCE_QUOTA, StackView, sorted_by_name

HAMI_RESOURCES = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_MEMORY_PERCENTAGE)
# The limits. keys HAMi's own scheduler enforces, and how it then fails.
HAMI_ENFORCED = frozenset({f"limits.{names.GPU_MEMORY}", f"limits.{names.GPU_CORES}"})
HAMI_LEAK = (
    "HAMi 2.8.3's scheduler enforces it but leaks its charge each time it filters a pod again (any burst), then "
    "refuses pods within the budget"
)


def check(view: StackView, _config: None) -> Iterator[Finding]:
    for quota in sorted_by_name(view.of_type(RESOURCE_QUOTA)):
        for key in sorted(str(k) for k in quota.get("spec", "hard") or {}):
            resource = key.removeprefix("limits.")
            if resource in HAMI_RESOURCES:
                yield finding(
                    quota,
                    f'spec.hard["{key}"]',
                    quota.get("spec", "hard", key),
                    f"Kubernetes enforces quota on the extended resource {resource} only as requests.{resource}; "
                    + (HAMI_LEAK if key in HAMI_ENFORCED else "this key caps nothing"),
                    f"write it as requests.{resource}",
                )


RULE = Rule(
    name="quota-keys-enforced",
    order=16,
    description="ResourceQuota keys for HAMi's extended resources use the requests. prefix, the only one "
    "Kubernetes enforces for them.",
    why="A bare or limits. key for nvidia.com/* caps nothing: the team is believed limited and is not.",
    remediation=f"Write quota keys as requests.{names.GPU}, requests.{names.GPU_MEMORY}, ...",
    enforcement="mandatory",
    severity="high",
    check=check,
)
