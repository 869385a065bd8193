"""Changes that break `quota-keys-enforced`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import drop, find
from tests.policies.rules.breaking import (
    caught,
    release,
    rename_key,
    set_at,
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
    "percentage as limits.": (
        "quota-keys-enforced",
        lambda r: rename_key(
            find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"],
            "requests.nvidia.com/gpucores",
            "limits.nvidia.com/gpumem-percentage",
        ),
        ['spec.hard["limits.nvidia.com/gpumem-percentage"] is "200"', "HAMi reads only limits.nvidia.com/gpumem"],
    ),
    "HAMi's own memory key on HAMi 2.8.3, which leaks it": (
        "quota-keys-enforced",
        lambda r: set_at(release(r, "hami"), ["version"], "2.8.3"),
        [
            'spec.hard["limits.nvidia.com/gpumem"] is "30720"',
            "HAMi chart 2.8.3's scheduler enforces it but leaks its charge",
            "refuses pods within the budget",
            "pin HAMi chart 2.10.0 or newer",
        ],
    ),
    "HAMi's own core key without HAMi": (
        "quota-keys-enforced",
        lambda r: drop(r, "Release", "hami"),
        ['spec.hard["limits.nvidia.com/gpucores"] is "200": no HAMi release reads it'],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
