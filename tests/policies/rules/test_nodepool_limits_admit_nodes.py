"""Changes that break `nodepool-limits-admit-nodes`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import (
    caught,
    pool,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "cpu limit 10": (
        "nodepool-limits-admit-nodes",
        lambda r: set_at(pool(r), ["spec", "limits", "cpu"], "10"),
        ['NodePool g5-shared: spec.limits["cpu"] is "10"', "one g5.4xlarge node counts 16 vCPU"],
    ),
    "gpu limit in physical GPUs": (
        "nodepool-limits-admit-nodes",
        lambda r: set_at(pool(r, "g4dn-shared"), ["spec", "limits", "nvidia.com/gpu"], "4"),
        ['spec.limits["nvidia.com/gpu"] is "4"', "g4dn.xlarge node counts 10 vGPUs"],
    ),
    "memory limit": (
        "nodepool-limits-admit-nodes",
        lambda r: set_at(pool(r, "g4dn-shared"), ["spec", "limits", "memory"], "16Gi"),
        ['spec.limits["memory"] is "16Gi"', "g4dn.2xlarge"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_limits_min_nodes_is_tunable(plans):
    resources = resources_of(plans["dev"])
    assert messages(resources, "nodepool-limits-admit-nodes") == []
    found = messages(resources, "nodepool-limits-admit-nodes", {"nodepool-limits-admit-nodes": {"minNodes": 5}})
    # g4dn-shared: maxGpus 4 is 40 vGPUs, four 1-GPU nodes of either type; g6-timeslice: 8 replicas, two nodes.
    assert [m.split(":")[0] for m in found] == ["NodePool g4dn-shared"] * 2 + ["NodePool g6-timeslice"] * 2
    assert "one g4dn.xlarge node counts 10 vGPUs" in found[0] and "(5 needed)" in found[0]
    assert "one g6.xlarge node counts 4 replicas (4 per GPU)" in found[2]
