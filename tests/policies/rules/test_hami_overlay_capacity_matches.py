"""Changes that break `hami-overlay-capacity-matches`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, find, messages
from tests.policies.rules.breaking import (
    caught,
    overlay,
    pool,
    set_at,
    set_device_config,
)

RULE = "hami-overlay-capacity-matches"

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "gpumem 24000": (
        "hami-overlay-capacity-matches",
        lambda r: set_at(overlay(r), ["spec", "capacity", "nvidia.com/gpumem"], "24000"),
        ['NodeOverlay g5-shared-g5-xlarge: spec.capacity["nvidia.com/gpumem"] is "24000"', "registers 23028", "more"],
    ),
    "gpumem below": (
        "hami-overlay-capacity-matches",
        lambda r: set_at(overlay(r), ["spec", "capacity", "nvidia.com/gpumem"], "20000"),
        ["promising less", 'set it to "23028"', "allowBelowRegistered"],
    ),
    "vgpus doubled": (
        "hami-overlay-capacity-matches",
        lambda r: set_at(overlay(r), ["spec", "capacity", "nvidia.com/gpu"], "20"),
        ['spec.capacity["nvidia.com/gpu"] is "20"', "registers 10"],
    ),
    "gpucores not a quantity": (
        "hami-overlay-capacity-matches",
        lambda r: set_at(overlay(r), ["spec", "capacity", "nvidia.com/gpucores"], "lots"),
        ['spec.capacity["nvidia.com/gpucores"] is "lots": not a Kubernetes quantity'],
    ),
    "above mock ceiling": (
        "hami-overlay-capacity-matches",
        lambda r: set_at(
            find(r, "NodeOverlay", "g5-shared-g5-4xlarge"), ["spec", "capacity", "nvidia.com/gpumem"], "200000"
        ),
        ["cannot advertise more than 123011", "raise HAMi's memoryFactor", "or give the type an exclusive pool"],
    ),
    "type not in catalog": (
        "hami-overlay-capacity-matches",
        lambda r: pool(r)["spec"]["template"]["spec"]["requirements"][0]["values"].append("x9.large"),
        ["NodePool g5-shared: x9.large is not in the gpushare catalog"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_below_registered_allowed_by_config(plans):
    resources = broken(plans["dev"], lambda r: set_at(overlay(r), ["spec", "capacity", "nvidia.com/gpumem"], "20000"))
    assert messages(resources, "hami-overlay-capacity-matches", {"hami-overlay-capacity-matches": {}})
    config = {"hami-overlay-capacity-matches": {"allowBelowRegistered": True}}
    assert messages(resources, "hami-overlay-capacity-matches", config) == []
    more = broken(plans["dev"], lambda r: set_at(overlay(r), ["spec", "capacity", "nvidia.com/gpumem"], "24000"))
    assert messages(more, "hami-overlay-capacity-matches", config), "more is refused whatever the config"


def test_profile_change_in_the_device_config_is_weighed(plans):
    resources = broken(plans["dev"], lambda r: set_device_config(r, "deviceSplitCount", 5))
    found = messages(resources, RULE)
    assert len(found) == 5 and all('["nvidia.com/gpu"]' in m and "deviceSplitCount 5" in m for m in found)
    assert messages(resources, "device-plugins-per-pool") == []


def test_memory_factor_in_the_device_config_is_weighed(plans):
    """HAMi's memoryFactor 2 halves what each node registers: the rendered overlays (factor 1) promise twice that."""
    found = messages(broken(plans["dev"], lambda r: set_device_config(r, "memoryFactor", 2)), RULE)
    assert len(found) == 5
    assert any('spec.capacity["nvidia.com/gpumem"] is "23028"' in m and "registers 11514" in m for m in found)
    assert all("memoryFactor 2" in m for m in found)


def test_a_p5_pool_past_the_ceiling_names_the_factor(plans):
    """A HAMi pool on p5.48xlarge under memoryFactor 1: the pool is refused naming the factor that fits."""
    resources = broken(
        plans["dev"], lambda r: pool(r)["spec"]["template"]["spec"]["requirements"][0]["values"].append("p5.48xlarge")
    )
    assert any(
        m.startswith("NodePool g5-shared: p5.48xlarge: nvidia.com/gpumem would be 652472 units")
        and "memoryFactor 6 or more brings it under" in m
        for m in messages(resources, RULE)
    )
