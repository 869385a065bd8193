"""Changes that break `hami-resource-names-consistent`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find
from tests.policies.rules.breaking import (
    caught,
    overlay,
    release,
    rename_key,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "overlay with a resource HAMi does not register": (
        "hami-resource-names-consistent",
        lambda r: rename_key(overlay(r)["spec"]["capacity"], "nvidia.com/gpumem", "nvidia.com/gpu-memory"),
        ['NodeOverlay g5-shared-g5-xlarge: spec.capacity["nvidia.com/gpu-memory"]', "resourceMem=nvidia.com/gpumem"],
    ),
    "HAMi renamed, quota not": (
        "hami-resource-names-consistent",
        lambda r: set_at(release(r, "hami"), ["values", "resourceCores"], "nvidia.com/vgpu-cores"),
        ['ResourceQuota inference-gpu: spec.hard["requests.nvidia.com/gpucores"]', "caps nothing"],
    ),
    "LimitRange default on an unknown resource": (
        "hami-resource-names-consistent",
        lambda r: set_at(
            find(r, "LimitRange", "inference-defaults")["spec"]["limits"][0],
            ["default"],
            {"nvidia.com/gpumemory": "1024"},
        ),
        [
            'LimitRange inference-defaults: spec.limits[0].default["nvidia.com/gpumemory"] is "1024"',
            "applies to nothing",
        ],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
