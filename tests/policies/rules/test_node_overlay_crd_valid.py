"""Changes that break `node-overlay-crd-valid`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.rules.breaking import (
    caught,
    overlay,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "NodeOverlay the CRD refuses": (
        "node-overlay-crd-valid",
        lambda r: set_at(overlay(r), ["spec", "capacity", "pods"], "110"),
        ['NodeOverlay g5-shared-g5-xlarge: spec.capacity["pods"] is "110"', "invalid resource restricted"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
