"""Changes that break `node-overlay-no-conflicts`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, entry, messages
from tests.policies.rules.breaking import (
    G5_XL,
    caught,
    overlay,
    renamed,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "equal-weight duplicate": (
        "node-overlay-no-conflicts",
        lambda r: r.append(
            {**entry(r, "NodeOverlay", G5_XL), "urn": "urn:x", "inputs": renamed(overlay(r), "second-xlarge")}
        ),
        ['NodeOverlay g5-shared-g5-xlarge: spec.capacity["nvidia.com/gpu"] at spec.weight 10', "second-xlarge"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_heavier_duplicate_is_no_conflict(plans):
    def heavier(r):
        clone = renamed(overlay(r), "second-xlarge")
        clone["spec"]["weight"] = 20
        r.append({**entry(r, "NodeOverlay", G5_XL), "urn": "urn:x", "inputs": clone})

    assert messages(broken(plans["dev"], heavier), "node-overlay-no-conflicts") == []
