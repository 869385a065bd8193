"""`eks-standard-support-ending`: quiet far from the end of standard support, a warning from 90 days ahead and past
it, whose consequence follows the upgrade policy; judged for the view's day, never the clock's."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpushare import eks
from policies.gpushare_policies.registry import evaluate
from policies.gpushare_policies.stack import from_plan
from tests.conftest import PLAN_DATE
from tests.policies.helpers import broken, messages
from tests.policies.rules.breaking import caught, cluster, set_at

POLICY = "eks-standard-support-ending"
END_1_34 = eks.load_eks_support().versions["1.34"].end_of_standard_support
END_1_36 = eks.load_eks_support().versions["1.36"].end_of_standard_support

# (policy, change, every fragment one message must contain), on the dev plan judged for PLAN_DATE
CASES = {
    "a minor whose standard support ends within 90 days, upgraded by EKS": (
        POLICY,
        lambda r: set_at(cluster(r), ["version"], "1.34"),
        ['version is "1.34"', f"ends on {END_1_34}", "EKS upgrades the control plane", "1.35, 1.36"],
    ),
    "a minor whose standard support ends within 90 days, kept on extended support": (
        POLICY,
        lambda r: (set_at(cluster(r), ["version"], "1.34"), set_at(cluster(r), ["upgradePolicy"], {})),
        [f"ends on {END_1_34}", "EKS bills extended support, $0.60 instead of $0.10 per cluster-hour"],
    ),
}


def _found_on(plan, day, change=lambda r: None):
    resources = broken(plan, change)
    return [v.message for v in evaluate(from_plan(resources, day)) if v.policy == POLICY]


def test_the_shipped_stacks_are_quiet(plans):
    assert END_1_36 - PLAN_DATE > eks.WARN_AHEAD, "PLAN_DATE must keep the shipped 1.36 out of the warning window"
    assert messages(plans["dev"]["resources"], POLICY) == []
    assert messages(plans["prod"]["resources"], POLICY) == []


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_it_warns_from_ninety_days_ahead_and_not_a_day_earlier(plans):
    assert _found_on(plans["dev"], END_1_36 - eks.WARN_AHEAD - timedelta(days=1)) == []
    assert [f"ends on {END_1_36} (in 90 days)" in m for m in _found_on(plans["dev"], END_1_36 - eks.WARN_AHEAD)] == [
        True
    ]


def test_past_the_end_it_says_what_already_happens(plans):
    extended = {"supportType": "EXTENDED"}
    found = _found_on(plans["dev"], END_1_36, lambda r: set_at(cluster(r), ["upgradePolicy"], extended))
    assert len(found) == 1 and f"ended on {END_1_36}" in found[0] and "EKS bills extended support" in found[0]
