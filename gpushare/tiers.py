"""The priority tiers the stack gives teams, and what each tier promises (docs/sharing.md,
"Team scheduling and priorities").

The renderer creates one PriorityClass per tier from this table (render/tenancy.py), and the policy pack holds the
plan's PriorityClasses to the same promises (rule `priority-tiers-keep-their-promise`) with `tier_problems`.

Kubernetes facts: the API server refuses a PriorityClass whose value is above 1000000000 unless its name starts
with `system-` (kubernetes pkg/apis/scheduling/types.go HighestUserDefinablePriority, checked by
pkg/apis/scheduling/validation ValidatePriorityClass); an unset preemptionPolicy defaults to PreemptLowerPriority
(pkg/apis/scheduling/v1/defaults.go).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

HIGHEST_USER_PRIORITY: Final = 1_000_000_000
PREEMPT: Final = "PreemptLowerPriority"
NEVER: Final = "Never"
# What the API server stores when a class leaves preemptionPolicy out.
DEFAULT_PREEMPTION: Final = PREEMPT


@dataclass(frozen=True)
class Tier:
    name: str
    value: int
    preemption_policy: str
    promise: str  # what docs/sharing.md promises of pods in this tier


# Highest first. Values spaced tenfold, far below system-cluster-critical (2000000000) and above 0, the priority of
# every pod without a class (a team's CPU pods): the isolation policy refuses a team's pod above its tier's value.
TIERS: Final = (
    Tier(
        "critical",
        1_000_000,
        PREEMPT,
        "critical pods preempt standard and batch pods on exclusive and time-sliced pools",
    ),
    Tier("standard", 100_000, PREEMPT, "standard pods preempt batch pods on exclusive and time-sliced pools"),
    Tier("batch", 10_000, NEVER, "batch pods never preempt anything: they wait for the node Karpenter launches"),
)
TIER_BY_NAME: Final = {tier.name: tier for tier in TIERS}


def tier_problems(classes: Mapping[str, tuple[Any, Any]]) -> list[tuple[str, str, Any, str, str]]:
    """(tier, key, value, problem, allowed) for every promise the tiers' classes break; `classes` maps a tier's name
    to the (value, preemptionPolicy) of its PriorityClass (None where unset), for the tiers present."""
    found: list[tuple[str, str, Any, str, str]] = []
    for tier in TIERS:
        if tier.name not in classes:
            continue
        value, preemption = classes[tier.name]
        policy = DEFAULT_PREEMPTION if preemption is None else preemption
        if policy != tier.preemption_policy:
            found.append(
                (
                    tier.name,
                    "preemptionPolicy",
                    preemption,
                    f"docs/sharing.md promises that {tier.promise}",
                    tier.preemption_policy,
                )
            )
        if not isinstance(value, int) or isinstance(value, bool):
            continue
        if value > HIGHEST_USER_PRIORITY:
            found.append(
                (
                    tier.name,
                    "value",
                    value,
                    f"above {HIGHEST_USER_PRIORITY}, the highest value the API server accepts for a class not named "
                    "system-*: it refuses the PriorityClass, and the team's pods naming it with it",
                    f"at most {HIGHEST_USER_PRIORITY}",
                )
            )
        if value <= 0:
            found.append(
                (
                    tier.name,
                    "value",
                    value,
                    "at or below 0, the priority of pods without a class: the team's isolation policy, which caps "
                    "its pods at the tier's value, would refuse every CPU pod of the team",
                    "above 0",
                )
            )
        higher = _next_higher(tier, classes)
        if higher is not None and isinstance(higher[1], int) and value >= higher[1]:
            above, above_value = higher
            found.append(
                (
                    tier.name,
                    "value",
                    value,
                    f"not below the {above} tier's {above_value}: "
                    + (
                        "the two tiers have one priority, so neither preempts the other"
                        if value == above_value
                        else f"{tier.name} pods would preempt {above} pods, the order docs/sharing.md promises reversed"
                    ),
                    f"below {above_value}",
                )
            )
    return found


def _next_higher(tier: Tier, classes: Mapping[str, tuple[Any, Any]]) -> tuple[str, Any] | None:
    """The nearest tier above `tier` whose class is present, with its value."""
    above = [t for t in TIERS[: TIERS.index(tier)] if t.name in classes]
    return (above[-1].name, classes[above[-1].name][0]) if above else None
