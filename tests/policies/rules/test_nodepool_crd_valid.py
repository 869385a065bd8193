"""Changes that break `nodepool-crd-valid`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    pool,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "NodePool the CRD refuses": (
        "nodepool-crd-valid",
        lambda r: set_at(pool(r), ["spec", "disruption", "consolidateAfter"], "1d"),
        ['NodePool g5-shared: spec.disruption.consolidateAfter is "1d"', "karpenter.sh_nodepools.yaml"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
