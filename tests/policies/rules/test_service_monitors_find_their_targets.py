"""Changes that break `service-monitors-find-their-targets`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find
from tests.policies.rules.breaking import (
    caught,
    set_at,
)

# (policy, change, every fragment one message must contain), on the prod plan
PROD_CASES = {
    "service monitor in the wrong namespace": (
        "service-monitors-find-their-targets",
        lambda r: set_at(
            find(r, "ServiceMonitor", "karpenter"), ["spec", "namespaceSelector", "matchNames"], ["karpenter"]
        ),
        [
            "ServiceMonitor karpenter: spec.namespaceSelector.matchNames",
            "its target runs in kube-system",
            "select [kube-system]",
        ],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_monitoring_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])
