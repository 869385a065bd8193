"""Changes that break `priority-classes-not-global-default`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find
from tests.policies.rules.breaking import caught, set_at

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "a tier as the global default": (
        "priority-classes-not-global-default",
        lambda r: set_at(find(r, "PriorityClass", "gpushare-critical"), ["globalDefault"], True),
        ["PriorityClass gpushare-critical: globalDefault is true", "priority 1000000", "set it to false"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
