"""Changes that break `team-namespace-gpu-quota`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare.names import GPU_SHARED
from tests.policies.helpers import broken, drop, find, messages
from tests.policies.rules.breaking import (
    caught,
    delete_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "team without quota": (
        "team-namespace-gpu-quota",
        lambda r: drop(r, "ResourceQuota", "inference-gpu"),
        ["Namespace inference: team namespace has no ResourceQuota on requests.nvidia.com/gpu"],
    ),
    "quota without gpumem": (
        "team-namespace-gpu-quota",
        lambda r: delete_at(find(r, "ResourceQuota", "inference-gpu"), ["spec", "hard", "requests.nvidia.com/gpumem"]),
        ["no ResourceQuota on requests.nvidia.com/gpumem:"],
    ),
    "HAMi team without HAMi's own memory key": (
        "team-namespace-gpu-quota",
        lambda r: delete_at(find(r, "ResourceQuota", "inference-gpu"), ["spec", "hard", "limits.nvidia.com/gpumem"]),
        [
            "no ResourceQuota on limits.nvidia.com/gpumem:",
            "HAMi's limits. keys also charge the GPU memory of requests that state none",
        ],
    ),
    "team without a time-sliced pool, uncapped replicas": (
        "team-namespace-gpu-quota",
        lambda r: find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"].pop(f"requests.{GPU_SHARED}"),
        [f"Namespace inference: team namespace has no ResourceQuota on requests.{GPU_SHARED}"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_exclusive_only_team_needs_only_a_gpu_quota(plans):
    def gpu_only(r):
        hard = find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"]
        del hard["requests.nvidia.com/gpumem"], hard["requests.nvidia.com/gpucores"]

    resources = broken(plans["prod"], gpu_only)
    assert messages(resources, "team-namespace-gpu-quota"), "a team on HAMi pools needs gpumem and gpucores quota"
    find(resources, "Namespace", "inference")["metadata"]["annotations"]["gpushare.io/pools"] = "training"
    assert messages(resources, "team-namespace-gpu-quota") == []


def test_time_sliced_team_needs_a_replica_quota(plans):
    resources = broken(
        plans["dev"],
        lambda r: find(r, "ResourceQuota", "ml-research-gpu")["spec"]["hard"].pop(f"requests.{GPU_SHARED}"),
    )
    assert messages(resources, "team-namespace-gpu-quota") == [
        f"Namespace ml-research: team namespace has no ResourceQuota on requests.{GPU_SHARED}: one team can take "
        "every shared GPU and the others' pods wait. Fix: add a ResourceQuota with spec.hard "
        f"requests.{GPU_SHARED} (gpushare renders it from teams[].quota)."
    ]


def test_hami_before_2_10_needs_no_limits_keys(plans):
    """HAMi 2.8/2.9 leak their own quota's charge: a stack holding one back may go without those keys."""

    def held_back(r):
        find(r, "Release", "hami")["version"] = "2.8.3"
        for key in ("limits.nvidia.com/gpumem", "limits.nvidia.com/gpucores"):
            del find(r, "ResourceQuota", "inference-gpu")["spec"]["hard"][key]

    assert messages(broken(plans["dev"], held_back), "team-namespace-gpu-quota") == []
