"""The stack's PriorityClasses keep what docs/sharing.md promises of each tier (gpushare/tiers.py): critical above
standard above batch, each value one the API server accepts and above the 0 of pods without a class, and only
batch never preempting."""

from __future__ import annotations

from collections.abc import Iterator

from gpushare import names
from gpushare.tiers import TIER_BY_NAME, tier_problems

from ..rule import Finding, Rule, finding
from ..stack import Resource, StackView, sorted_by_name

PRIORITY_CLASS = "kubernetes:scheduling.k8s.io/v1:PriorityClass"


def check_tiers(view: StackView, _config: None) -> Iterator[Finding]:
    by_tier: dict[str, Resource] = {}
    for priority_class in sorted_by_name(view.of_type(PRIORITY_CLASS)):
        tier = priority_class.object_name.removeprefix(names.PRIORITY_CLASS_PREFIX)
        if priority_class.object_name.startswith(names.PRIORITY_CLASS_PREFIX) and tier in TIER_BY_NAME:
            by_tier.setdefault(tier, priority_class)
    classes = {tier: (pc.get("value"), pc.get("preemptionPolicy")) for tier, pc in by_tier.items()}
    for tier, key, value, problem, allowed in tier_problems(classes):
        yield finding(by_tier[tier], key, value, problem, f"set {key} {allowed}, as gpushare/tiers.py does")


RULE = Rule(
    name="priority-tiers-keep-their-promise",
    order=70,
    description="The stack's tier PriorityClasses (gpushare-critical, -standard, -batch) keep the order critical > "
    "standard > batch with distinct values above 0 and at most 1000000000, and only batch has preemptionPolicy Never.",
    why="A value above 1000000000 is refused by the API server (and every pod naming the class with it); tiers of "
    "one value, or in another order, preempt the wrong pods or none; a batch tier that preempts evicts the pods it "
    "promised to wait for.",
    remediation="Keep the tiers gpushare/tiers.py defines (render/tenancy.py renders them from it).",
    enforcement="mandatory",
    severity="high",
    check=check_tiers,
)
