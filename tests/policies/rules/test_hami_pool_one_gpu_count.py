"""Changes that break `hami-pool-one-gpu-count`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    pool,
)

# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "HAMi pool mixing GPU counts": (
        "hami-pool-one-gpu-count",
        lambda r: pool(r)["spec"]["template"]["spec"]["requirements"][0]["values"].append("g5.12xlarge"),
        ["NodePool g5-shared", "g5.xlarge (1 GPU)", "g5.12xlarge (4 GPUs)", "split the pool by GPU count"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])
