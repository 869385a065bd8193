"""Changes that break `karpenter-version-recommended`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import messages, resources_of
from tests.policies.rules.breaking import (
    caught,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "karpenter 1.12": (
        "karpenter-version-recommended",
        lambda r: set_at(release(r, "karpenter"), ["version"], "1.12.0"),
        ['Release karpenter: version is "1.12.0": below 1.13.0'],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_karpenter_version_threshold_is_tunable(plans):
    config = {"karpenter-version-recommended": {"minimumVersion": "1.16.0"}}
    found = messages(resources_of(plans["dev"]), "karpenter-version-recommended", config)
    assert found == [found[0]] and "below 1.16.0" in found[0]
