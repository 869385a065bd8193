"""Changes that break `capacity-buffer-selects-team-pool`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import drop, find
from tests.policies.rules.breaking import caught, set_at

BUFFER = "gpushare-headroom-g5-shared"
POLICY = "capacity-buffer-selects-team-pool"


def template(r):
    return find(r, "PodTemplate", BUFFER)["template"]["spec"]


def buffer(r):
    return find(r, "CapacityBuffer", BUFFER)


TWO_POOLS = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": "gpushare.io/pool", "operator": "In", "values": ["g5-shared", "g6-shared"]}
                    ]
                }
            ]
        }
    }
}

# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "template missing": (
        POLICY,
        lambda r: drop(r, "PodTemplate", BUFFER),
        [f'CapacityBuffer {BUFFER}: spec.podTemplateRef.name is "{BUFFER}"', "PodTemplateNotFound"],
    ),
    "template named wrong": (
        POLICY,
        lambda r: set_at(buffer(r), ["spec", "podTemplateRef", "name"], "headroom"),
        ['spec.podTemplateRef.name is "headroom"', "keeps nothing warm"],
    ),
    "not a team namespace": (
        POLICY,
        lambda r: set_at(buffer(r), ["metadata", "namespace"], "default"),
        ["lives in namespace default, which is no gpushare team's"],
    ),
    "another team's pool": (
        POLICY,
        lambda r: set_at(template(r), ["nodeSelector", "gpushare.io/pool"], "training"),
        [f"PodTemplate {BUFFER}: its pods can land on pools training", "does not list (g5-shared, g6-shared)"],
    ),
    "no pool selected": (
        POLICY,
        lambda r: template(r).pop("nodeSelector"),
        ["can land on pools training", "nodeSelector gpushare.io/pool: <pool>"],
    ),
    "two of the team's pools": (
        POLICY,
        lambda r: (template(r).pop("nodeSelector"), template(r).update(affinity=TWO_POOLS)),
        ["can land on pools g5-shared, g6-shared", "whichever it prefers"],
    ),
    "GPU taint not tolerated": (
        POLICY,
        lambda r: set_at(template(r), ["tolerations"], []),
        ["its pods land on no pool (on team pool g5-shared", "does not tolerate their taint nvidia.com/gpu"],
    ),
    "spot on an on-demand pool": (
        POLICY,
        lambda r: set_at(template(r), ["nodeSelector", "karpenter.sh/capacity-type"], "reserved"),
        ["land on no pool", "karpenter.sh/capacity-type"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])
