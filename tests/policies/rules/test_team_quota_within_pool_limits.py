"""Changes that break `team-quota-within-pool-limits`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find
from tests.policies.rules.breaking import (
    caught,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "quota above pools": (
        "team-quota-within-pool-limits",
        lambda r: set_at(find(r, "ResourceQuota", "inference-gpu"), ["spec", "hard", "requests.nvidia.com/gpu"], "41"),
        ['ResourceQuota inference-gpu: spec.hard["requests.nvidia.com/gpu"] is "41"', "at most 40"],
    ),
    "HAMi's memory key above pools": (
        "team-quota-within-pool-limits",
        lambda r: set_at(
            find(r, "ResourceQuota", "inference-gpu"), ["spec", "hard", "limits.nvidia.com/gpumem"], "61441"
        ),
        ['ResourceQuota inference-gpu: spec.hard["limits.nvidia.com/gpumem"] is "61441"', "lower it to 61440"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
