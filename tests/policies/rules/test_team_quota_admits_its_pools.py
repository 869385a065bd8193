"""Changes that break `team-quota-admits-its-pools`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare.names import GPU, GPU_SHARED
from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import caught, set_at

RULE = "team-quota-admits-its-pools"

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "time-sliced pool with a zero replica quota": (
        RULE,
        lambda r: set_at(find(r, "ResourceQuota", "ml-research-gpu"), ["spec", "hard", f"requests.{GPU_SHARED}"], "0"),
        [
            f'ResourceQuota ml-research-gpu: spec.hard["requests.{GPU_SHARED}"] is "0"',
            "team ml-research lists pools g6-timeslice",
            "teams[].quota",
        ],
    ),
    "HAMi pool with a zero vGPU quota": (
        RULE,
        lambda r: set_at(find(r, "ResourceQuota", "inference-gpu"), ["spec", "hard", f"requests.{GPU}"], "0"),
        [f'ResourceQuota inference-gpu: spec.hard["requests.{GPU}"] is "0"', "lists pools g4dn-shared"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_a_zero_quota_on_a_resource_none_of_the_teams_pools_asks_passes(plans):
    """inference lists only a HAMi pool: no time-sliced replicas is its design, not a fault."""
    resources = resources_of(plans["dev"])
    set_at(find(resources, "ResourceQuota", "inference-gpu"), ["spec", "hard", f"requests.{GPU_SHARED}"], "0")
    assert messages(resources, RULE) == []
