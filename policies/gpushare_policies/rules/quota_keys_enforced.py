"""ResourceQuota keys for HAMi's resources that someone enforces: Kubernetes' `requests.<name>`, and HAMi's own
`limits.<name>` for GPU memory and cores when they cap something.

Kubernetes quota supports extended resources (HAMi's nvidia.com/*) only with the `requests.` prefix
(kubernetes.io docs, Resource Quotas, "Resource quota for extended resources"). HAMi's scheduler reads
`limits.nvidia.com/gpumem` and `limits.nvidia.com/gpucores` itself and refuses placements past them, reading 0 as
no limit (HAMi v2.8.3 pkg/device/quota.go; gpushare.capacity.HAMI_QUOTA_RESOURCES). Any other bare or `limits.`
key for them caps nothing, so a team believed to be capped is not.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.capacity import HAMI_QUOTA_RESOURCES, hami_budget_uncapped, hami_quota_key, kubernetes_quota_key

from ..kube import quantity
from ..rule import Finding, Rule, finding
from ..stack import RESOURCE_QUOTA, StackView, sorted_by_name

HAMI_RESOURCES = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_MEMORY_PERCENTAGE)
HAMI_KEYS = {hami_quota_key(resource): resource for resource in HAMI_QUOTA_RESOURCES}


def check(view: StackView, _config: None) -> Iterator[Finding]:
    for quota in sorted_by_name(view.of_type(RESOURCE_QUOTA)):
        for key in sorted(str(k) for k in quota.get("spec", "hard") or {}):
            value = quota.get("spec", "hard", key)
            if key in HAMI_KEYS:
                amount = quantity(value)
                if amount is not None and hami_budget_uncapped(int(amount)):
                    yield finding(
                        quota,
                        f'spec.hard["{key}"]',
                        value,
                        "HAMi's scheduler reads a budget of 0 as no limit: this key caps nothing, and pods asking "
                        "whole GPUs or a gpumem-percentage are charged by no one",
                        f"set it to the team's budget, as {kubernetes_quota_key(HAMI_KEYS[key])}",
                    )
                continue
            resource = key.removeprefix("limits.")
            if resource in HAMI_RESOURCES:
                yield finding(
                    quota,
                    f'spec.hard["{key}"]',
                    value,
                    f"Kubernetes enforces quota on the extended resource {resource} only as "
                    f"{kubernetes_quota_key(resource)}, and HAMi only its memory and core budgets as "
                    f"{' and '.join(HAMI_KEYS)}; this key caps nothing",
                    f"write it as {kubernetes_quota_key(resource)}",
                )


RULE = Rule(
    name="quota-keys-enforced",
    order=16,
    description="ResourceQuota keys for HAMi's extended resources are enforced: Kubernetes' requests. keys, or "
    "HAMi's own limits. keys for GPU memory and cores with a non-zero budget.",
    why="A bare key, a limits. key HAMi does not read, or a HAMi budget of 0 caps nothing: the team is believed "
    "limited and is not.",
    remediation=f"Write quota keys as requests.{names.GPU}, requests.{names.GPU_MEMORY}, ...; HAMi's "
    f"{hami_quota_key(names.GPU_MEMORY)} and {hami_quota_key(names.GPU_CORES)} with the team's non-zero budget.",
    enforcement="mandatory",
    severity="high",
    check=check,
)
