"""ResourceQuota keys that Kubernetes enforces for extended resources: only `requests.<name>`.

Kubernetes quota supports extended resources (HAMi's nvidia.com/*) only with the `requests.` prefix
(kubernetes.io docs, Resource Quotas, "Resource quota for extended resources"); a bare or `limits.` key for
them caps nothing, so a team believed to be capped is not.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names

from ..rule import Finding, Rule, finding
from ..stack import RESOURCE_QUOTA, StackView, sorted_by_name

HAMI_RESOURCES = (names.GPU, names.GPU_MEMORY, names.GPU_CORES, names.GPU_MEMORY_PERCENTAGE)


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
                    "this key caps nothing",
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
