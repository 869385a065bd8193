"""Changes that break `capacity-buffer-gate-enabled`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import broken, drop, messages
from tests.policies.rules.breaking import caught, delete_at, release, set_at

GATE = ["values", "settings", "featureGates", "capacityBuffer"]

# (policy, change, every fragment one message must contain), on the prod plan (its inference team keeps headroom)
PROD_CASES = {
    "gate off": (
        "capacity-buffer-gate-enabled",
        lambda r: set_at(release(r, "karpenter"), GATE, False),
        ["Release karpenter: values.settings.featureGates.capacityBuffer is false", "never reads the 1 CapacityBuffer"],
    ),
    "gate absent": (
        "capacity-buffer-gate-enabled",
        lambda r: delete_at(release(r, "karpenter"), GATE),
        ["featureGates.capacityBuffer not set"],
    ),
    "karpenter 1.13": (
        "capacity-buffer-gate-enabled",
        lambda r: set_at(release(r, "karpenter"), ["version"], "1.13.1"),
        ['Release karpenter: version is "1.13.1"', "from Karpenter 1.14.0"],
    ),
    "no karpenter release": (
        "capacity-buffer-gate-enabled",
        lambda r: drop(r, "Release", "karpenter"),
        ["1 CapacityBuffer but no `karpenter` Helm release"],
    ),
}


@pytest.mark.parametrize("case", list(PROD_CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["prod"], case, PROD_CASES[case])


@pytest.mark.parametrize("gate", [True, "true", "True", "1"])
def test_feature_gate_texts_karpenter_parses_as_true_are_on(plans, gate):
    resources = broken(plans["prod"], lambda r: set_at(release(r, "karpenter"), GATE, gate))
    assert messages(resources, "capacity-buffer-gate-enabled") == []


def test_without_buffers_the_gate_may_stay_off(plans):
    """dev keeps no headroom: its Karpenter runs without the alpha gate, and nothing asks for it."""
    resources = broken(plans["dev"], lambda r: None)
    assert "capacityBuffer" not in release(resources, "karpenter")["values"]["settings"]["featureGates"]
    assert messages(resources, "capacity-buffer-gate-enabled") == []
