"""Changes that break `karpenter-node-overlay-enabled`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, drop, messages
from tests.policies.rules.breaking import (
    caught,
    delete_at,
    release,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "gate off": (
        "karpenter-node-overlay-enabled",
        lambda r: set_at(release(r, "karpenter"), ["values", "settings", "featureGates", "nodeOverlay"], False),
        ["Release karpenter: values.settings.featureGates.nodeOverlay is false", "silently ignores all 7"],
    ),
    "gate absent": (
        "karpenter-node-overlay-enabled",
        lambda r: delete_at(release(r, "karpenter"), ["values", "settings", "featureGates"]),
        ["featureGates.nodeOverlay not set"],
    ),
    "karpenter 1.6": (
        "karpenter-node-overlay-enabled",
        lambda r: set_at(release(r, "karpenter"), ["version"], "1.6.2"),
        ['Release karpenter: version is "1.6.2"', "from Karpenter 1.7.0"],
    ),
    "no karpenter release": (
        "karpenter-node-overlay-enabled",
        lambda r: drop(r, "Release", "karpenter"),
        ["7 NodeOverlays but no `karpenter` Helm release"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


@pytest.mark.parametrize("gate", [True, "true", "True", "1"])
def test_feature_gate_texts_karpenter_parses_as_true_are_on(plans, gate):
    path = ["values", "settings", "featureGates", "nodeOverlay"]
    resources = broken(plans["dev"], lambda r: set_at(release(r, "karpenter"), path, gate))
    assert messages(resources, "karpenter-node-overlay-enabled") == []
