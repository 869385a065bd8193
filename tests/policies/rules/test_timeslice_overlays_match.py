"""Changes that break `timeslice-overlays-match`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare.names import GPU_SHARED
from tests.policies.helpers import drop, messages, resources_of
from tests.policies.rules.breaking import (
    TS,
    TS_LABELS,
    TS_XL,
    caught,
    overlay,
    pool,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "time-sliced pool names no time-slicing config": (
        "timeslice-overlays-match",
        lambda r: set_at(pool(r, TS), [*TS_LABELS, "nvidia.com/device-plugin.config"], "timeslice-8"),
        ['labels["nvidia.com/device-plugin.config"] is "timeslice-8"', "exclusive, timeslice-4"],
    ),
    "time-sliced overlay promising more replicas": (
        "timeslice-overlays-match",
        lambda r: set_at(overlay(r, TS_XL), ["spec", "capacity", GPU_SHARED], "8"),
        [f'NodeOverlay g6-timeslice-g6-xlarge: spec.capacity["{GPU_SHARED}"] is "8"', "registers 4", 'set it to "4"'],
    ),
    "time-sliced overlay keeps the type's GPUs": (
        "timeslice-overlays-match",
        lambda r: overlay(r, TS_XL)["spec"]["capacity"].pop("nvidia.com/gpu"),
        ['NodeOverlay g6-timeslice-g6-xlarge: spec.capacity["nvidia.com/gpu"] not set', 'nvidia.com/gpu: "0"'],
    ),
    "time-sliced overlay missing": (
        "timeslice-overlays-match",
        lambda r: drop(r, "NodeOverlay", TS_XL),
        [f"NodePool g6-timeslice: instance type g6.xlarge has no NodeOverlay setting {GPU_SHARED}"],
    ),
    "time-sliced pool limited in physical GPUs": (
        "timeslice-overlays-match",
        lambda r: set_at(pool(r, TS), ["spec", "limits"], {"nvidia.com/gpu": "2"}),
        [f'NodePool g6-timeslice: spec.limits["{GPU_SHARED}"] not set', "maxGpus x 4"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "exclusive pool given a time-slicing config": (
        "timeslice-overlays-match",
        lambda r: set_at(
            release(r, "nvidia-device-plugin"),
            ["values", "config"],
            {
                "map": {
                    "ts": "version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n"
                    "    - name: nvidia.com/gpu\n      replicas: 2\n"
                },
                "default": "ts",
            },
        ),
        ["NodePool training", "config ts, which time-slices nvidia.com/gpu into nvidia.com/gpu.shared"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_a_config_without_rename_is_blamed_on_the_config_not_the_overlays(plans):
    """renameByDefault false is the NVIDIA config's fault (nvidia-timeslice-config-valid), not the overlays'."""
    resources = resources_of(plans["dev"])
    set_at(
        release(resources, "nvidia-device-plugin"),
        ["values", "config", "map", "timeslice-4"],
        "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 4\n",
    )
    assert messages(resources, "timeslice-overlays-match") == []
    assert messages(resources, "nvidia-timeslice-config-valid")
