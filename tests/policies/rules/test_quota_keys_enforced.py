"""Changes that break `quota-keys-enforced`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find
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
    "HAMi's own memory key": (
        "quota-keys-enforced",
        lambda r: rename_key(
            find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"],
            "requests.nvidia.com/gpumem",
            "limits.nvidia.com/gpumem",
        ),
        ['spec.hard["limits.nvidia.com/gpumem"] is "30720"', "leaks its charge", "refuses pods within the budget"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
