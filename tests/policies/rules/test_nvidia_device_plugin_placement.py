"""Changes that break `nvidia-device-plugin-placement`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, drop, entry, messages
from tests.policies.rules.breaking import (
    G5,
    TS,
    TS_LABELS,
    caught,
    delete_at,
    pool,
    release,
    renamed,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "NVIDIA plugin admitted on a HAMi pool": (
        "nvidia-device-plugin-placement",
        lambda r: pool(r)["spec"]["template"]["metadata"]["labels"].update(
            {"gpushare.io/device-plugin": "nvidia", "nvidia.com/gpu.present": "true"}
        ),
        ["NodePool g5-shared: spec.template.metadata.labels is", "two device plugins register nvidia.com/gpu"],
    ),
    "time-sliced pool the NVIDIA plugin never selects": (
        "nvidia-device-plugin-placement",
        lambda r: delete_at(pool(r, TS), [*TS_LABELS, "gpushare.io/device-plugin"]),
        ["NodePool g6-timeslice: spec.template.metadata.labels is", "never runs on these nodes"],
    ),
    "time-sliced pool outside the chart affinity": (
        "nvidia-device-plugin-placement",
        lambda r: delete_at(pool(r, TS), [*TS_LABELS, "nvidia.com/gpu.present"]),
        ["NodePool g6-timeslice", "required node affinity) never runs on these nodes"],
    ),
    "time-sliced pool also labelled for HAMi": (
        "nvidia-device-plugin-placement",
        lambda r: set_at(pool(r, TS), [*TS_LABELS, "gpu"], "on"),
        ["NodePool g6-timeslice", "HAMi's device plugin also runs on nodes with gpu=on", "drop gpu"],
    ),
    "NVIDIA plugin without the GPU toleration": (
        "nvidia-device-plugin-placement",
        lambda r: set_at(release(r, "nvidia-device-plugin"), ["values", "tolerations"], []),
        ['NodePool g6-timeslice: spec.template.spec.taints[0] is "nvidia.com/gpu:NoSchedule"', "values.tolerations"],
    ),
    "no NVIDIA plugin release": (
        "nvidia-device-plugin-placement",
        lambda r: drop(r, "Release", "nvidia-device-plugin"),
        ["NodePool g6-timeslice: takes whole or time-sliced GPUs but the stack has no `nvidia-device-plugin`"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_a_cpu_nodepool_needs_no_device_plugin(plans):
    def cpu_pool(r):
        clone = renamed(pool(r), "cpu")
        clone["spec"]["template"]["metadata"]["labels"] = {"gpushare.io/pool": "cpu"}
        clone["spec"]["template"]["spec"]["requirements"][0]["values"] = ["m7i.large"]
        r.append({**entry(r, "NodePool", G5), "urn": "urn:cpu", "inputs": clone})

    assert messages(broken(plans["prod"], cpu_pool), "nvidia-device-plugin-placement") == []
