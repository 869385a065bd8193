"""Changes that break `gpu-exporter-on-gpu-nodes`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    delete_at,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "exporter without GPU toleration": (
        "gpu-exporter-on-gpu-nodes",
        lambda r: set_at(release(r, "dcgm-exporter"), ["values", "tolerations"], []),
        [
            "Release dcgm-exporter: values.tolerations is []",
            "does not tolerate the GPU taint nvidia.com/gpu:NoSchedule",
            "Fix: add {key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}",
        ],
    ),
    "exporter on every node": (
        "gpu-exporter-on-gpu-nodes",
        lambda r: delete_at(release(r, "dcgm-exporter"), ["values", "affinity"]),
        ["Release dcgm-exporter: values.affinity not set", "does not require the GPU pool label gpushare.io/sharing"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])
