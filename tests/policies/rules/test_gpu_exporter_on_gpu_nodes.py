"""Changes that break `gpu-exporter-on-gpu-nodes`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import (
    caught,
    delete_at,
    release,
    set_at,
)

AFFINITY = ["values", "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"]


def _sharing(operator, *values):
    return [{"matchExpressions": [{"key": "gpushare.io/sharing", "operator": operator, "values": list(values)}]}]


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
    "exporter on HAMi pools only": (
        "gpu-exporter-on-gpu-nodes",
        lambda r: set_at(release(r, "dcgm-exporter"), AFFINITY, _sharing("In", "hami")),
        ["the GPU exporter does not run on the nodes of pool training"],
    ),
    "exporter selecting a label no GPU node has": (
        "gpu-exporter-on-gpu-nodes",
        lambda r: set_at(release(r, "dcgm-exporter"), ["values", "nodeSelector"], {"nvidia.com/gpu.present": "true"}),
        ["does not run on the nodes of pool g5-shared, pool g6-shared"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


def test_the_same_nodes_selected_another_way_pass(plans):
    """Sets, not spellings: `In [every sharing mode]` and a keyless Exists toleration reach the same nodes."""
    resources = resources_of(plans["prod"])
    exporter = release(resources, "dcgm-exporter")
    set_at(exporter, AFFINITY, _sharing("In", "hami", "exclusive", "timeslice"))
    set_at(exporter, ["values", "tolerations"], [{"operator": "Exists"}])
    assert messages(resources, "gpu-exporter-on-gpu-nodes") == []
