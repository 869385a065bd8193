"""Changes that break `hami-pool-labels-match-device-plugins`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    delete_at,
    mock,
    pool,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "label gpu missing": (
        "hami-pool-labels-match-device-plugins",
        lambda r: delete_at(pool(r), ["spec", "template", "metadata", "labels", "gpu"]),
        ['NodePool g5-shared: spec.template.metadata.labels["gpu"] not set', "nvidiaNodeSelector", 'add gpu: "on"'],
    ),
    "label gpu off": (
        "hami-pool-labels-match-device-plugins",
        lambda r: set_at(pool(r), ["spec", "template", "metadata", "labels", "gpu"], "off"),
        ['labels["gpu"] is "off"', "DaemonSet hami-mock-device-plugin requires nodeSelector gpu"],
    ),
    "hami toleration missing": (
        "hami-pool-labels-match-device-plugins",
        lambda r: set_at(release(r, "hami"), ["values", "devicePlugin", "tolerations"], []),
        ['taint [0] is "nvidia.com/gpu=true:NoSchedule"', "HAMi device plugin", "values.devicePlugin.tolerations"],
    ),
    "mock toleration missing": (
        "hami-pool-labels-match-device-plugins",
        lambda r: set_at(mock(r), ["spec", "template", "spec", "tolerations"], []),
        ["DaemonSet hami-mock-device-plugin does not tolerate it", "add a toleration for nvidia.com/gpu"],
    ),
    "custom selector not on pool": (
        "hami-pool-labels-match-device-plugins",
        lambda r: set_at(release(r, "hami"), ["values", "devicePlugin", "nvidiaNodeSelector"], {"accel": "hami"}),
        ['labels["accel"] not set', 'add accel: "hami"'],
    ),
    "mock affinity unmet": (
        "hami-pool-labels-match-device-plugins",
        lambda r: set_at(
            mock(r),
            ["spec", "template", "spec", "affinity"],
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Exists"}]}]
                    }
                }
            },
        ),
        ["requires its required node affinity"],
    ),
    "HAMi device plugin off": (
        "hami-pool-labels-match-device-plugins",
        lambda r: set_at(release(r, "hami"), ["values", "devicePlugin", "enabled"], False),
        ["Release hami: values turn off HAMi's device plugin", "pools g4dn-shared, g5-shared never register"],
    ),
    "HAMi device plugin on every node": (
        "hami-pool-labels-match-device-plugins",
        lambda r: set_at(release(r, "hami"), ["values", "devicePlugin", "nvidiaNodeSelector"], None),
        ["Release hami: values.devicePlugin.nvidiaNodeSelector not set", "runs on every node"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
