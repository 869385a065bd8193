"""Changes that break `team-per-gpu-limit-enforced`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from gpushare.names import GPU_SHARED
from tests.policies.helpers import drop, find, messages, resources_of
from tests.policies.rules.breaking import (
    PER_GPU,
    caught,
    name_in,
    set_at,
)

# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "per-GPU limit policy unbound": (
        "team-per-gpu-limit-enforced",
        lambda r: drop(r, "ValidatingAdmissionPolicyBinding", PER_GPU),
        ["Namespace inference: no ValidatingAdmissionPolicy bound with Deny", "more than 15360 nvidia.com/gpumem"],
    ),
    "per-GPU limit bound to its team and another": (
        "team-per-gpu-limit-enforced",
        lambda r: set_at(
            find(r, "ValidatingAdmissionPolicyBinding", PER_GPU),
            ["spec", "matchResources", "namespaceSelector"],
            name_in("inference", "analytics"),
        ),
        ["Namespace inference: no ValidatingAdmissionPolicy bound with Deny"],
    ),
    "per-GPU limit only warns": (
        "team-per-gpu-limit-enforced",
        lambda r: set_at(find(r, "ValidatingAdmissionPolicyBinding", PER_GPU), ["spec", "validationActions"], ["Warn"]),
        [
            f"ValidatingAdmissionPolicyBinding {PER_GPU}: spec.validationActions is ['Warn']",
            "nvidia.com/gpucores",
            'set it to ["Deny"]',
        ],
    ),
    "more than one time-sliced replica allowed": (
        "team-per-gpu-limit-enforced",
        lambda r: find(r, "ValidatingAdmissionPolicy", "gpushare-ml-research-per-gpu-limit")["spec"][
            "validations"
        ].pop(),
        [
            "Namespace ml-research: no ValidatingAdmissionPolicy",
            f"more than 1 {GPU_SHARED} (one time-sliced replica",
            "only at allocation",
        ],
    ),
    "per-GPU limit above the largest GPU": (
        "team-per-gpu-limit-enforced",
        lambda r: [
            v.update(expression=v["expression"].replace("quantity('15360')", "quantity('23028')"))
            for v in find(r, "ValidatingAdmissionPolicy", PER_GPU)["spec"]["validations"]
        ],
        [f"ValidatingAdmissionPolicy {PER_GPU}: its nvidia.com/gpumem bound is not 15360", "g4dn-shared"],
    ),
    "no bound on vGPUs per container": (
        "team-per-gpu-limit-enforced",
        lambda r: find(r, "ValidatingAdmissionPolicy", PER_GPU)["spec"]["validations"].pop(0),
        ["Namespace inference: no ValidatingAdmissionPolicy", "more than 1 nvidia.com/gpu (each vGPU of a container"],
    ),
    "vGPU bound above the team's largest node": (
        "team-per-gpu-limit-enforced",
        lambda r: [
            v.update(expression=v["expression"].replace("quantity('1')", "quantity('2')"))
            for v in find(r, "ValidatingAdmissionPolicy", PER_GPU)["spec"]["validations"]
        ],
        [f"ValidatingAdmissionPolicy {PER_GPU}: its nvidia.com/gpu bound is not 1", "GPU of its own"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])


def test_a_binding_selecting_the_team_by_match_expressions_enforces_the_limit(plans):
    """`matchExpressions In [team]` is the same namespace set as `matchLabels`: the limit counts as bound."""
    resources = resources_of(plans["dev"])
    set_at(
        find(resources, "ValidatingAdmissionPolicyBinding", PER_GPU),
        ["spec", "matchResources", "namespaceSelector"],
        name_in("inference"),
    )
    assert messages(resources, "team-per-gpu-limit-enforced") == []
