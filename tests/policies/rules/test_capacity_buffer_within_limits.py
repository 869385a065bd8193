"""Changes that break `capacity-buffer-within-limits`: each is caught, and every message says the fix."""

from __future__ import annotations

import copy

import pytest

from tests.policies.helpers import entry, find, messages, resources_of
from tests.policies.rules.breaking import caught, pool, set_at

BUFFER = "gpushare-headroom-g5-shared"
POLICY = "capacity-buffer-within-limits"


def buffer(r):
    return find(r, "CapacityBuffer", BUFFER)


def second_buffer(r, replicas):
    """A second buffer of the same template in the same team: both on g5-shared."""
    clone = copy.deepcopy(entry(r, "CapacityBuffer", BUFFER))
    clone["urn"] += "-2"
    clone["inputs"]["metadata"]["name"] = f"{BUFFER}-2"
    clone["inputs"]["spec"]["replicas"] = replicas
    r.append(clone)


# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "beyond the pool limit": (
        POLICY,
        lambda r: set_at(pool(r), ["spec", "limits", "nvidia.com/gpu"], "5"),
        [f"CapacityBuffer {BUFFER}: spec.replicas is 2", "take 10 nvidia.com/gpu of pool g5-shared's limit", "its 5"],
    ),
    "beyond the quota": (
        POLICY,
        lambda r: set_at(buffer(r), ["spec", "replicas"], 60),
        [
            "spec.replicas is 60",
            "its 60 warm pods ask 460560 nvidia.com/gpumem, more than ResourceQuota inference-gpu admits (460000)",
            "keep at most 59 warm pods",
        ],
    ),
    "buffers beyond the limit together": (
        POLICY,
        lambda r: (set_at(buffer(r), ["spec", "replicas"], 50), second_buffer(r, 50)),
        [
            "NodePool g5-shared: the buffers on it",
            "need nodes worth 340 nvidia.com/gpu together",
            "more than its limit",
        ],
    ),
    "buffers beyond the quota together": (
        POLICY,
        lambda r: (set_at(buffer(r), ["spec", "replicas"], 30), second_buffer(r, 30)),
        ["its 30 warm pods with the other buffers of inference ask 460560 nvidia.com/gpumem"],
    ),
    "limits let more through than the quota": (
        POLICY,
        lambda r: (buffer(r)["spec"].pop("replicas"), set_at(buffer(r), ["spec", "limits"], {"nvidia.com/gpu": "70"})),
        ["spec.limits is {'nvidia.com/gpu': '70'}", "its 70 warm pods ask 537320 nvidia.com/gpumem"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_limits_cap_replicas_as_karpenter_counts_them(plans):
    """min(replicas, floor(limit / request)): 10 replicas under a 2-vGPU limit keep 2 pods, within everything."""
    r = resources_of(plans["prod"])
    set_at(buffer(r), ["spec", "replicas"], 10_000)
    set_at(buffer(r), ["spec", "limits"], {"nvidia.com/gpu": "2"})
    assert messages(r, POLICY) == []
