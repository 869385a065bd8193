"""Changes that break `priority-tiers-keep-their-promise`: each is caught, and every message says the fix; the
renderer's tiers keep every promise."""

from __future__ import annotations

import pytest

from gpushare import tiers
from gpushare.render.tenancy import PRIORITIES, priority_classes
from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import caught, delete_at, set_at

POLICY = "priority-tiers-keep-their-promise"


def _tier(r, name):
    return find(r, "PriorityClass", f"gpushare-{name}")


# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "a value the API server refuses": (
        POLICY,
        lambda r: set_at(_tier(r, "critical"), ["value"], 1_500_000_000),
        ["PriorityClass gpushare-critical: value is 1500000000", "refuses the PriorityClass", "at most 1000000000"],
    ),
    "a batch tier that preempts": (
        POLICY,
        lambda r: set_at(_tier(r, "batch"), ["preemptionPolicy"], "PreemptLowerPriority"),
        ['PriorityClass gpushare-batch: preemptionPolicy is "PreemptLowerPriority"', "never preempt", "Never"],
    ),
    "a batch tier without its policy (the API server defaults it to preempt)": (
        POLICY,
        lambda r: delete_at(_tier(r, "batch"), ["preemptionPolicy"]),
        ["PriorityClass gpushare-batch: preemptionPolicy not set", "set preemptionPolicy Never"],
    ),
    "a critical tier that never preempts": (
        POLICY,
        lambda r: set_at(_tier(r, "critical"), ["preemptionPolicy"], "Never"),
        ['PriorityClass gpushare-critical: preemptionPolicy is "Never"', "critical pods preempt"],
    ),
    "tiers in the wrong order": (
        POLICY,
        lambda r: set_at(_tier(r, "standard"), ["value"], 2_000_000),
        ["PriorityClass gpushare-standard: value is 2000000", "not below the critical tier's 1000000", "reversed"],
    ),
    "two tiers of one value": (
        POLICY,
        lambda r: set_at(_tier(r, "batch"), ["value"], 100_000),
        ["PriorityClass gpushare-batch: value is 100000", "neither preempts the other", "below 100000"],
    ),
    "a tier at the priority of pods without a class": (
        POLICY,
        lambda r: set_at(_tier(r, "batch"), ["value"], 0),
        ["PriorityClass gpushare-batch: value is 0", "every CPU pod of the team", "above 0"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_a_missing_tier_is_judged_against_the_next_one_present(plans):
    """Without standard, batch is compared with critical."""
    resources = [
        r for r in resources_of(plans["dev"]) if r["inputs"].get("metadata", {}).get("name") != "gpushare-standard"
    ]
    set_at(_tier(resources, "batch"), ["value"], 1_000_000)
    assert any("not below the critical tier's 1000000" in m for m in messages(resources, POLICY))


def test_the_renderer_keeps_every_promise():
    rendered = {pc["metadata"]["name"].removeprefix("gpushare-"): pc for pc in priority_classes()}
    assert list(rendered) == [tier.name for tier in tiers.TIERS] == list(PRIORITIES)
    assert tiers.tier_problems({n: (pc["value"], pc["preemptionPolicy"]) for n, pc in rendered.items()}) == []
