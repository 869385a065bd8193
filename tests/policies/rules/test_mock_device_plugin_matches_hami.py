"""Changes that break `mock-device-plugin-matches-hami`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import drop
from tests.policies.rules.breaking import (
    MOCK_REPO,
    caught,
    mock,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "no mock": (
        "mock-device-plugin-matches-hami",
        lambda r: drop(r, "DaemonSet", "hami-mock-device-plugin"),
        ["5 overlays advertise", "ResourceNotRegistered"],
    ),
    "wrong configmap": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(mock(r), ["spec", "template", "spec", "volumes", 2, "configMap", "name"], "hami-device"),
        ['configMap.name is "hami-device"', "ConfigMap hami-scheduler-device"],
    ),
    "renamed hami release": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(release(r, "hami"), ["name"], "vgpu"),
        ["ConfigMap vgpu-hami-scheduler-device"],
    ),
    "mock in another namespace": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(mock(r), ["metadata", "namespace"], "gpu-system"),
        ['metadata.namespace is "gpu-system"', "deploy the DaemonSet in kube-system"],
    ),
    "mock too old for hami": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(release(r, "hami"), ["version"], "2.9.0"),
        ["mock 1.0.1 cannot parse the device config HAMi chart 2.9.0 writes", "pin HAMi chart 2.7.0 to 2.8.3"],
    ),
    "unknown mock tag": (
        "mock-device-plugin-matches-hami",
        lambda r: set_at(mock(r), ["spec", "template", "spec", "containers", 0, "image"], f"{MOCK_REPO}:9"),
        ["gpushare knows no HAMi compatibility for this tag"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
