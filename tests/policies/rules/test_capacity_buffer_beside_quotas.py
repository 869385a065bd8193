"""Changes that break `capacity-buffer-beside-quotas`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find
from tests.policies.rules.breaking import caught, pool, set_at

POLICY = "capacity-buffer-beside-quotas"

# (policy, change, every fragment one message must contain), on the prod plan: inference keeps one g5.xlarge
# (10 vGPUs of the limit) warm on g5-shared, where ml-research's quota may take 120 of 320.
PROD_CASES = {
    "another team's quota fills the pool": (
        POLICY,
        lambda r: set_at(
            find(r, "ResourceQuota", "ml-research-gpu"), ["spec", "hard", "requests.nvidia.com/gpu"], "315"
        ),
        [
            "NodePool g5-shared: its buffers keep nodes worth 10 nvidia.com/gpu warm",
            "besides inference can take 315 here (ml-research 315)",
            "raise maxGpus to hold 325",
        ],
    ),
    "a lower limit": (
        POLICY,
        lambda r: set_at(pool(r), ["spec", "limits", "nvidia.com/gpu"], "125"),
        ["can take 120 here (ml-research 120)", "with 125 in its limit", "cannot refill inference's buffer"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])
