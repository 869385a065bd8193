"""Changes that break `quota-keys-enforced`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find, messages
from tests.policies.rules.breaking import (
    caught,
    rename_key,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "quota key without requests.": (
        "quota-keys-enforced",
        lambda r: rename_key(
            find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"], "requests.nvidia.com/gpumem", "nvidia.com/gpumem"
        ),
        [
            'ResourceQuota inference-gpu: spec.hard["nvidia.com/gpumem"] is "30720"',
            "write it as requests.nvidia.com/gpumem",
        ],
    ),
    "quota key as limits.": (
        "quota-keys-enforced",
        lambda r: rename_key(
            find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"],
            "requests.nvidia.com/gpu",
            "limits.nvidia.com/gpu",
        ),
        ['spec.hard["limits.nvidia.com/gpu"] is "20"', "caps nothing"],
    ),
    "percentage as limits., which HAMi does not read either": (
        "quota-keys-enforced",
        lambda r: find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"].update(
            {"limits.nvidia.com/gpumem-percentage": "200"}
        ),
        [
            'spec.hard["limits.nvidia.com/gpumem-percentage"] is "200"',
            "write it as requests.nvidia.com/gpumem-percentage",
        ],
    ),
    "HAMi memory budget of 0": (
        "quota-keys-enforced",
        lambda r: find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"].update({"limits.nvidia.com/gpumem": "0"}),
        [
            'spec.hard["limits.nvidia.com/gpumem"] is "0"',
            "reads a budget of 0 as no limit",
            "as requests.nvidia.com/gpumem",
        ],
    ),
    "HAMi core budget of 0": (
        "quota-keys-enforced",
        lambda r: find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"].update({"limits.nvidia.com/gpucores": "0"}),
        ['ResourceQuota inference-gpu: spec.hard["limits.nvidia.com/gpucores"] is "0"'],
    ),
}


def test_hami_budget_keys_pass(plans):
    """HAMi enforces limits.nvidia.com/gpumem|gpucores itself: the shipped quotas carry them and pass."""
    hard = find(plans["dev"]["resources"], "ResourceQuota", "inference-gpu")["spec"]["hard"]
    assert {"limits.nvidia.com/gpumem", "limits.nvidia.com/gpucores"} <= set(hard)
    assert messages(plans["dev"]["resources"], "quota-keys-enforced") == []


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
