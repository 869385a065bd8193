"""Changes that break `team-scheduler-policy-applied`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find
from tests.policies.rules.breaking import (
    caught,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "recorded scheduler policy not applied": (
        "team-scheduler-policy-applied",
        lambda r: set_at(
            find(r, "Namespace", "inference"),
            ["metadata", "annotations", "gpushare.io/node-scheduler-policy"],
            "binpack",
        ),
        ["Namespace inference: scheduler policy binpack is not applied to its pods", "Fix:"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
