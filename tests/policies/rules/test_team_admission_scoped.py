"""Changes that break `team-admission-scoped`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import find, messages, resources_of
from tests.policies.rules.breaking import (
    INFERENCE_NODE_POLICY,
    PER_GPU,
    caught,
    delete_at,
    name_in,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "binding with a dangling policyName": (
        "team-admission-scoped",
        lambda r: set_at(find(r, "ValidatingAdmissionPolicyBinding", PER_GPU), ["spec", "policyName"], "per-gpu"),
        [
            f'ValidatingAdmissionPolicyBinding {PER_GPU}: spec.policyName is "per-gpu"',
            "no ValidatingAdmissionPolicy of that name",
            "name the team's ValidatingAdmissionPolicy",
        ],
    ),
    "admission policy for every namespace": (
        "team-admission-scoped",
        lambda r: delete_at(
            find(r, "MutatingAdmissionPolicy", INFERENCE_NODE_POLICY), ["spec", "matchConstraints", "namespaceSelector"]
        ),
        [f"MutatingAdmissionPolicy {INFERENCE_NODE_POLICY}: matchConstraints must select only namespace inference"],
    ),
    "admission binding for another namespace": (
        "team-admission-scoped",
        lambda r: set_at(
            find(r, "MutatingAdmissionPolicyBinding", INFERENCE_NODE_POLICY),
            ["spec", "matchResources", "namespaceSelector", "matchLabels", "kubernetes.io/metadata.name"],
            "ml-research",
        ),
        [
            f"MutatingAdmissionPolicyBinding {INFERENCE_NODE_POLICY}: matchResources must select only namespace "
            "inference"
        ],
    ),
    "admission binding for its team and another": (
        "team-admission-scoped",
        lambda r: set_at(
            find(r, "MutatingAdmissionPolicyBinding", INFERENCE_NODE_POLICY),
            ["spec", "matchResources", "namespaceSelector"],
            name_in("inference", "ml-research"),
        ),
        [
            f"MutatingAdmissionPolicyBinding {INFERENCE_NODE_POLICY}: matchResources must select only namespace "
            "inference"
        ],
    ),
    "admission policy naming its team but requiring a label the namespace lacks": (
        "team-admission-scoped",
        lambda r: set_at(
            find(r, "MutatingAdmissionPolicy", INFERENCE_NODE_POLICY),
            ["spec", "matchConstraints", "namespaceSelector"],
            {**name_in("inference"), "matchLabels": {"tier": "gold"}},
        ),
        [f"MutatingAdmissionPolicy {INFERENCE_NODE_POLICY}: matchConstraints must select only namespace inference"],
    ),
    "admission policy without binding": (
        "team-admission-scoped",
        lambda r: set_at(
            find(r, "MutatingAdmissionPolicyBinding", INFERENCE_NODE_POLICY), ["spec", "policyName"], "other"
        ),
        [f"MutatingAdmissionPolicy {INFERENCE_NODE_POLICY}: no MutatingAdmissionPolicyBinding names it"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_selecting_the_team_by_match_expressions_is_the_same_set_and_passes(plans):
    """`matchExpressions In [team]` selects exactly what `matchLabels` does: no finding (issue 20, class 11)."""
    resources = resources_of(plans["dev"])
    for kind, path in (
        ("MutatingAdmissionPolicy", ["spec", "matchConstraints", "namespaceSelector"]),
        ("MutatingAdmissionPolicyBinding", ["spec", "matchResources", "namespaceSelector"]),
    ):
        set_at(find(resources, kind, INFERENCE_NODE_POLICY), path, name_in("inference"))
    assert messages(resources, "team-admission-scoped") == []
