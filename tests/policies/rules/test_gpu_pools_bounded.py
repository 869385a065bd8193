"""Changes that break `gpu-pools-bounded`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import TS, caught, delete_at, pool, set_at

RULE = "gpu-pools-bounded"

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "limits deleted": (
        RULE,
        lambda r: delete_at(pool(r), ["spec", "limits"]),
        ['NodePool g5-shared: spec.limits["nvidia.com/gpu"] not set', "its spend has no limit", "pools[].maxGpus"],
    ),
    "only a cpu limit left": (
        RULE,
        lambda r: set_at(pool(r, "g4dn-shared"), ["spec", "limits"], {"cpu": "1000"}),
        ['NodePool g4dn-shared: spec.limits["nvidia.com/gpu"] not set', "its limits on cpu count no GPU"],
    ),
    "a GPU pool without its sharing label": (
        RULE,
        lambda r: (
            pool(r)["spec"]["template"]["metadata"]["labels"].pop("gpushare.io/sharing"),
            delete_at(pool(r), ["spec", "limits"]),
        ),
        ['NodePool g5-shared: spec.limits["nvidia.com/gpu"] not set'],
    ),
}

PROD_CASES = {
    "exclusive pool without a GPU limit": (
        RULE,
        lambda r: set_at(pool(r, "training"), ["spec", "limits"], {"memory": "4Ti"}),
        ['NodePool training: spec.limits["nvidia.com/gpu"] not set', "its limits on memory count no GPU"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_field_is_caught_in_prod(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_a_time_sliced_pool_is_left_to_its_replica_limit(plans):
    """Its nodes register replicas, not nvidia.com/gpu: timeslice-overlays-match requires that limit, once."""
    resources = resources_of(plans["dev"])
    delete_at(pool(resources, TS), ["spec", "limits"])
    assert messages(resources, RULE) == []
    assert messages(resources, "timeslice-overlays-match")
