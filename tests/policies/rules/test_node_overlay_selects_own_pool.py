"""Changes that break `node-overlay-selects-own-pool`: an overlay pointed anywhere but its own pool's types is
named with the pools and types it really selects, for every operator Karpenter evaluates."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, messages
from tests.policies.rules.breaking import G5_XL, caught, overlay

RULE = "node-overlay-selects-own-pool"


def _requirements(*requirements, name=G5_XL, unlabelled=False):
    def change(r):
        target = overlay(r, name)
        target["spec"]["requirements"] = list(requirements)
        if unlabelled:
            target["metadata"].pop("labels")

    return change


def req(key, operator, *values):
    return {"key": key, "operator": operator, **({"values": list(values)} if values else {})}


NODEPOOL = "karpenter.sh/nodepool"
TYPE = "node.kubernetes.io/instance-type"
XL = req(TYPE, "In", "g5.xlarge")

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "catch-all overlay": (
        RULE,
        _requirements(),
        [
            'NodeOverlay g5-shared-g5-xlarge: spec.requirements is "[] (selects every node)"',
            "g4dn-shared (all 2 types); g5-shared (all 3 types); g6-timeslice (all 2 types), besides its own pool "
            "g5-shared",
        ],
    ),
    "re-pointed at another pool by the nodepool label": (
        RULE,
        _requirements(req(NODEPOOL, "In", "g4dn-shared")),
        ["Karpenter applies it to g4dn-shared (all 2 types), instead of its own pool g5-shared"],
    ),
    "re-pointed at another pool by a custom label": (
        RULE,
        _requirements(req("gpushare.io/sharing", "In", "timeslice")),
        ['spec.requirements is "gpushare.io/sharing In [timeslice]"', "g6-timeslice (all 2 types)"],
    ),
    "NotIn its own pool": (
        RULE,
        _requirements(req(NODEPOOL, "NotIn", "g5-shared")),
        ["g4dn-shared (all 2 types); g6-timeslice (all 2 types), instead of its own pool g5-shared"],
    ),
    "Exists on a label every pool carries, with a size": (
        RULE,
        _requirements(req("gpushare.io/pool", "Exists"), req("karpenter.k8s.aws/instance-size", "In", "xlarge")),
        ["g4dn-shared (g4dn.xlarge); g5-shared (g5.xlarge); g6-timeslice (g6.xlarge), besides its own pool"],
    ),
    "Exists on a label every pool carries, no type": (
        RULE,
        _requirements(req("gpushare.io/pool", "Exists")),
        ["g4dn-shared (all 2 types); g5-shared (all 3 types); g6-timeslice (all 2 types)"],
    ),
    "DoesNotExist on the HAMi label": (
        RULE,
        _requirements(req("gpu", "DoesNotExist")),
        ["Karpenter applies it to g6-timeslice (all 2 types), instead of its own pool g5-shared"],
    ),
    "Gt on the GPU count selects every GPU type": (
        RULE,
        _requirements(req("karpenter.k8s.aws/instance-gpu-count", "Gt", "0")),
        ["karpenter.k8s.aws/instance-gpu-count Gt [0]", "g4dn-shared (all 2 types)"],
    ),
    "Lt on the vCPUs selects the small types of every pool": (
        RULE,
        _requirements(req("karpenter.k8s.aws/instance-cpu", "Lt", "5")),
        ["g4dn-shared (g4dn.xlarge); g5-shared (g5.xlarge); g6-timeslice (g6.xlarge)"],
    ),
    "instance type of no pool": (
        RULE,
        _requirements(req(NODEPOOL, "In", "g5-shared"), req(TYPE, "In", "g6.xlarge")),
        ["it selects none of pool g5-shared's instance types (g5.xlarge, g5.2xlarge, g5.4xlarge)"],
    ),
    "DoesNotExist on a label Karpenter sets on every node": (
        RULE,
        _requirements(req(NODEPOOL, "In", "g5-shared"), XL, req("topology.kubernetes.io/zone", "DoesNotExist")),
        ["it selects none of pool g5-shared's instance types"],
    ),
    "labelled for a pool that does not exist": (
        RULE,
        lambda r: overlay(r)["metadata"]["labels"].update({"gpushare.io/pool": "g5-old"}),
        ['metadata.labels["gpushare.io/pool"] is "g5-old": no NodePool of that name exists', "g5-shared (g5.xlarge)"],
    ),
    "unlabelled overlay over two pools": (
        RULE,
        _requirements(req(NODEPOOL, "In", "g5-shared", "g4dn-shared"), unlabelled=True),
        ["g4dn-shared (all 2 types); g5-shared (all 3 types), more than one pool"],
    ),
    "unlabelled overlay that selects nothing": (
        RULE,
        _requirements(req("team", "In", "inference"), unlabelled=True),
        ["it selects no instance type of any pool"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(_requirements(req("gpushare.io/sharing", "In", "hami"), XL, unlabelled=True), id="one-pool"),
        pytest.param(_requirements(req("gpushare.io/pool", "Exists"), XL), id="exists-and-its-type"),
        pytest.param(lambda r: overlay(r)["spec"]["requirements"].append(req("foo", "NotIn", "x")), id="notin-unset"),
        pytest.param(lambda r: overlay(r)["spec"]["requirements"].append(req("foo", "DoesNotExist")), id="absent"),
        pytest.param(
            lambda r: overlay(r)["spec"]["requirements"].append(req("topology.kubernetes.io/zone", "In", "x")),
            id="zone",
        ),
        pytest.param(
            lambda r: overlay(r)["spec"]["requirements"].append(req("karpenter.sh/capacity-type", "In", "on-demand")),
            id="capacity-type",
        ),
        pytest.param(_requirements(req(NODEPOOL, "In", "g5-shared")), id="every-type-of-its-pool"),
    ],
)
def test_an_overlay_that_selects_only_its_own_pool_passes(plans, change):
    assert messages(broken(plans["dev"], change), RULE) == []
