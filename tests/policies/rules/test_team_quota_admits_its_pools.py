"""Changes that break `team-quota-admits-its-pools`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare.names import GPU, GPU_CORES, GPU_MEMORY, GPU_SHARED
from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import caught, set_at

RULE = "team-quota-admits-its-pools"
REQUESTS = (f"requests.{GPU_MEMORY}", f"requests.{GPU_CORES}")
LIMITS = (f"limits.{GPU_MEMORY}", f"limits.{GPU_CORES}")


def hard(resources):
    return find(resources, "ResourceQuota", "inference-gpu")["spec"]["hard"]


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
    "the silent zero: no GPU memory or cores": (
        RULE,
        lambda r: hard(r).update({key: "0" for key in (*REQUESTS, *LIMITS)}),
        [
            f'ResourceQuota inference-gpu: spec.hard["limits.{GPU_MEMORY}"] is "0"',
            "refuses every vGPU pod of team inference on pools g4dn-shared",
            f"raise limits.{GPU_MEMORY} to at least 1, requests.{GPU_MEMORY} to at least 1",
        ],
    ),
    "Kubernetes' GPU memory and cores zero": (
        RULE,
        lambda r: hard(r).update(dict.fromkeys(REQUESTS, "0")),
        [f'spec.hard["requests.{GPU_MEMORY}"] is "0"', f"raise requests.{GPU_MEMORY} to at least 1 (teams[].quota"],
    ),
    "HAMi's GPU memory zero": (
        RULE,
        lambda r: set_at(hard(r), [f"limits.{GPU_MEMORY}"], "0"),
        [f'spec.hard["limits.{GPU_MEMORY}"] is "0"', "HAMi charges GPU memory to each"],
    ),
    "HAMi's GPU memory below a GPU and no Kubernetes memory": (
        RULE,
        lambda r: hard(r).update({f"limits.{GPU_MEMORY}": "100", f"requests.{GPU_MEMORY}": "0"}),
        [f'spec.hard["requests.{GPU_MEMORY}"] is "0"', f"with requests.{GPU_MEMORY} 0 the quota refuses"],
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


def test_a_quota_admitting_one_way_to_take_a_vgpu_passes(plans):
    """No cores and no HAMi core budget: only pods stating GPU memory run, a design, not a fault."""
    resources = resources_of(plans["dev"])
    hard(resources).update({f"requests.{GPU_CORES}": "0", f"limits.{GPU_CORES}": "0"})
    assert messages(resources, RULE) == []


def test_a_zero_vgpu_quota_is_reported_once(plans):
    resources = resources_of(plans["dev"])
    hard(resources).update({f"requests.{GPU}": "0", f"requests.{GPU_MEMORY}": "0", f"limits.{GPU_MEMORY}": "0"})
    assert len(messages(resources, RULE)) == 1


def test_hamis_own_keys_count_only_where_hami_holds_to_them(plans):
    """HAMi before 2.10 leaks its limits. charges (quota-keys-enforced refuses those keys there): Kubernetes' count
    decides alone whether a vGPU pod is admitted."""
    resources = resources_of(plans["dev"])
    set_at(find(resources, "Release", "hami"), ["version"], "2.8.3")
    set_at(hard(resources), [f"limits.{GPU_MEMORY}"], "0")
    assert messages(resources, RULE) == []
