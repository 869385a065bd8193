"""Changes that break `hami-pools-use-al2023`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    node_class,
    pool,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "bottlerocket": (
        "hami-pools-use-al2023",
        lambda r: set_at(node_class(r), ["spec", "amiSelectorTerms"], [{"alias": "bottlerocket@latest"}]),
        ['EC2NodeClass gpu: spec.amiSelectorTerms[0].alias is "bottlerocket@latest"', "its own NVIDIA device plugin"],
    ),
    "ami by id, bottlerocket family": (
        "hami-pools-use-al2023",
        lambda r: node_class(r)["spec"].update(amiSelectorTerms=[{"id": "ami-1"}], amiFamily="Bottlerocket"),
        ['spec.amiFamily is "Bottlerocket"'],
    ),
    "node class missing": (
        "hami-pools-use-al2023",
        lambda r: set_at(pool(r), ["spec", "template", "spec", "nodeClassRef", "name"], "other"),
        ['NodePool g5-shared: spec.template.spec.nodeClassRef.name is "other": no EC2NodeClass'],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
