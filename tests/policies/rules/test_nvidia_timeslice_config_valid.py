"""Changes that break `nvidia-timeslice-config-valid`: each is caught, naming the NVIDIA config and its key."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import caught, release, set_at

RULE = "nvidia-timeslice-config-valid"
RELEASE = "Release nvidia-device-plugin"


def _config(body: str):
    """Replace the dev stack's timeslice-4 config with this text."""
    return lambda r: set_at(release(r, "nvidia-device-plugin"), ["values", "config", "map", "timeslice-4"], body)


def _slicing(*lines: str) -> str:
    return "version: v1\nsharing:\n  timeSlicing:\n" + "".join(f"    {line}\n" for line in lines)


RESOURCE = "- name: nvidia.com/gpu"

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "one replica": (
        RULE,
        _config(_slicing("renameByDefault: true", "resources:", RESOURCE, "  replicas: 1")),
        [
            f'{RELEASE}: values.config.map["timeslice-4"] sharing.timeSlicing.resources[0].replicas is 1',
            "number of replicas must be >= 2",
        ],
    ),
    "replicas missing": (
        RULE,
        _config(_slicing("renameByDefault: true", "resources:", RESOURCE)),
        ['values.config.map["timeslice-4"] sharing.timeSlicing.resources[0].replicas not set'],
    ),
    "replicas not a number": (
        RULE,
        _config(_slicing("renameByDefault: true", "resources:", RESOURCE, '  replicas: "4"')),
        ['sharing.timeSlicing.resources[0].replicas is "4"'],
    ),
    "no resources": (
        RULE,
        _config(_slicing("renameByDefault: true", "resources: []")),
        ['values.config.map["timeslice-4"] sharing.timeSlicing.resources is []', "no resources specified"],
    ),
    "resource without a name": (
        RULE,
        _config(_slicing("renameByDefault: true", "resources:", "- replicas: 4")),
        ["sharing.timeSlicing.resources[0].name not set", "no resource name specified"],
    ),
    "unknown version": (
        RULE,
        _config("version: v2\n"),
        ['values.config.map["timeslice-4"] version is "v2"', "unknown version"],
    ),
    "not YAML": (
        RULE,
        _config("version: v1\nsharing: [unclosed\n"),
        ['values.config.map["timeslice-4"] is "version: v1', "cannot parse"],
    ),
    "renameByDefault not a boolean": (
        RULE,
        _config(_slicing('renameByDefault: "yes"', "resources:", RESOURCE, "  replicas: 4")),
        ['sharing.timeSlicing.renameByDefault is "yes"', "not a boolean"],
    ),
    "a rename the plugin ignores": (
        RULE,
        _config(_slicing("renameByDefault: true", "resources:", RESOURCE, "  replicas: 4", "  rename: gpu-ts")),
        ['sharing.timeSlicing.resources[0].rename is "gpu-ts"', "registers nvidia.com/gpu.shared"],
    ),
    "renameByDefault false": (
        RULE,
        _config(_slicing("renameByDefault: false", "resources:", RESOURCE, "  replicas: 4")),
        [
            f'{RELEASE}: values.config.map["timeslice-4"] sharing.timeSlicing.renameByDefault is false',
            "pool g6-timeslice's nodes then register their replicas as nvidia.com/gpu",
            "set renameByDefault: true",
        ],
    ),
    "renameByDefault left out": (
        RULE,
        _config(_slicing("resources:", RESOURCE, "  replicas: 4")),
        ["sharing.timeSlicing.renameByDefault not set", "not nvidia.com/gpu.shared"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
