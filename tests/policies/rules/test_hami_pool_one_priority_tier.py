"""Changes that break `hami-pool-one-priority-tier`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare import names
from tests.policies.helpers import broken, find, messages
from tests.policies.rules.breaking import caught

RULE = "hami-pool-one-priority-tier"


def _set_team(resources, team, tier, pools=None):
    annotations = find(resources, "Namespace", team)["metadata"]["annotations"]
    annotations[names.TEAM_PRIORITY_ANNOTATION] = tier
    if pools is not None:
        annotations[names.TEAM_POOLS_ANNOTATION] = pools


# (policy, change, every fragment one message must contain), on the prod plan (every team standard)
PROD_CASES = {
    "critical team sharing a HAMi pool with standard teams": (
        RULE,
        lambda r: _set_team(r, "inference", "critical"),
        [
            "NodePool g5-shared: HAMi pool g5-shared is shared by teams of different priority tiers: "
            "inference (critical), ml-research (standard)",
            "HAMi #1878",
            "a HAMi pool of their own",
        ],
    ),
    "batch team joining a standard team's HAMi pool": (
        RULE,
        lambda r: _set_team(r, "analytics", "batch", "g5-shared"),
        ["NodePool g5-shared", "analytics (batch)", "inference (standard)", "headroom in this pool's maxGpus"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_one_tier_per_hami_pool_passes(plans):
    assert messages(plans["prod"]["resources"], RULE) == []


def test_dev_names_its_mixed_pool(plans):
    """dev shares g4dn-shared between its critical and batch teams on purpose (the `priorities` e2e scenario)."""
    found = messages(plans["dev"]["resources"], RULE)
    assert len(found) == 1 and "HAMi pool g4dn-shared" in found[0], found
    assert "inference (critical), ml-research (batch)" in found[0]


def test_tiers_mixing_on_an_exclusive_pool_are_left_alone(plans):
    """Preemption works where kube-scheduler sees the GPUs: whole GPUs of the prod training pool."""

    def share_training(r):
        _set_team(r, "inference", "critical", "training")
        _set_team(r, "ml-research", "batch", "training")

    assert messages(broken(plans["prod"], share_training), RULE) == []
