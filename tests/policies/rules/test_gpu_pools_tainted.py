"""Changes that break `gpu-pools-tainted`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import TS, caught, pool, set_at

RULE = "gpu-pools-tainted"
TAINTS = ["spec", "template", "spec", "taints"]

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "time-sliced pool without taints": (
        RULE,
        lambda r: set_at(pool(r, TS), TAINTS, []),
        ["NodePool g6-timeslice: spec.template.spec.taints is []", "add the taint nvidia.com/gpu=true:NoSchedule"],
    ),
    "HAMi pool tainted with another value": (
        RULE,
        lambda r: set_at(pool(r), TAINTS, [{"key": "nvidia.com/gpu", "value": "yes", "effect": "NoSchedule"}]),
        ["NodePool g5-shared: spec.template.spec.taints", "CPU pods"],
    ),
    "GPU pool without its sharing label": (
        RULE,
        lambda r: (
            pool(r)["spec"]["template"]["metadata"]["labels"].pop("gpushare.io/sharing"),
            set_at(pool(r), TAINTS, []),
        ),
        ["NodePool g5-shared: spec.template.spec.taints is []"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
