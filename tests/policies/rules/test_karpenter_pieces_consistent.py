"""Changes that break `karpenter-pieces-consistent`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare import pins
from tests.policies.helpers import broken, messages
from tests.policies.rules.breaking import (
    caught,
    node_class,
    pool,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "karpenter crds at another version": (
        "karpenter-pieces-consistent",
        lambda r: set_at(release(r, "karpenter-crd"), ["version"], "1.14.1"),
        [
            'Release karpenter-crd: version is "1.14.1"',
            f"differ from the controller's {pins.chart_version('karpenter')}",
        ],
    ),
    "karpenter version with a v": (
        "karpenter-pieces-consistent",
        lambda r: set_at(release(r, "karpenter"), ["version"], "v" + pins.chart_version("karpenter")),
        [f'Release karpenter: version is "v{pins.chart_version("karpenter")}"', "without a leading v"],
    ),
    "node class that does not exist": (
        "karpenter-pieces-consistent",
        lambda r: set_at(pool(r), ["spec", "template", "spec", "nodeClassRef", "name"], "default"),
        ['NodePool g5-shared: spec.template.spec.nodeClassRef.name is "default"', "name one of: gpu"],
    ),
    "another cluster's discovery tag": (
        "karpenter-pieces-consistent",
        lambda r: set_at(node_class(r), ["spec", "subnetSelectorTerms", 0, "tags", "karpenter.sh/discovery"], "other"),
        ['EC2NodeClass gpu: spec.subnetSelectorTerms[0].tags["karpenter.sh/discovery"] is "other"', "use"],
    ),
    "cluster ownership tag on the node class": (
        "karpenter-pieces-consistent",
        lambda r: set_at(node_class(r), ["spec", "tags", "kubernetes.io/cluster/gpushare-dev"], "owned"),
        ['spec.tags["kubernetes.io/cluster/gpushare-dev"] is "owned"', "drop the tag"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_a_v_prefix_is_blamed_on_its_release_only(plans):
    """The CRD release at the same number is not at fault: one finding, on the release with the v."""
    resources = broken(
        plans["dev"], lambda r: set_at(release(r, "karpenter"), ["version"], "v" + pins.chart_version("karpenter"))
    )
    assert [m.split(":")[0] for m in messages(resources, "karpenter-pieces-consistent")] == ["Release karpenter"]
