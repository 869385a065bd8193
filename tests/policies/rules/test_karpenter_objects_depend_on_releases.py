"""Changes that break `karpenter-objects-depend-on-releases`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, drop, entry, messages, violations
from tests.policies.rules.breaking import (
    G5,
    caught,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "pool without dependencies": (
        "karpenter-objects-depend-on-releases",
        lambda r: set_at(entry(r, "NodePool", G5), ["dependencies"], []),
        ["NodePool g5-shared: does not depend on Release karpenter-crd", "depends_on"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_destroy_order_counts_indirect_dependencies(plans):
    # The pool still depends on the EC2NodeClass, which depends on both releases: destroy order holds.
    def only_node_class(r):
        deps = entry(r, "NodePool", G5)["dependencies"]
        entry(r, "NodePool", G5)["dependencies"] = [d for d in deps if "EC2NodeClass" in d]

    assert messages(broken(plans["dev"], only_node_class), "karpenter-objects-depend-on-releases") == []


def test_missing_crd_release_is_a_stack_violation(plans):
    resources = broken(plans["dev"], lambda r: drop(r, "Release", "karpenter-crd"))
    found = violations(resources, "karpenter-objects-depend-on-releases")
    assert [v.urn for v in found] == [None] and "no `karpenter-crd` Helm release" in found[0].message
