"""Changes that break `team-namespace-isolation`: each is caught, and every message says the fix."""

from __future__ import annotations

import pytest

from tests.policies.helpers import drop, find
from tests.policies.rules.breaking import caught, delete_at, set_at

ENFORCE = "pod-security.kubernetes.io/enforce"
ISOLATION = "gpushare-inference-isolation"


def namespace(r, name="inference"):
    return find(r, "Namespace", name)


def isolation(r, index):
    return find(r, "ValidatingAdmissionPolicy", ISOLATION)["spec"]["validations"][index]


def limits(r):
    return find(r, "LimitRange", "inference-defaults")["spec"]["limits"][0]


def widen_pools(r):
    validation = isolation(r, 1)
    validation["expression"] = validation["expression"].replace("['g4dn-shared']", "['g4dn-shared', 'g5-shared']")


# (policy, change, every fragment one message must contain), on the dev plan
CASES = {
    "privileged namespace": (
        "team-namespace-isolation",
        lambda r: set_at(namespace(r), ["metadata", "labels", ENFORCE], "privileged"),
        [f'Namespace inference: metadata.labels["{ENFORCE}"] is "privileged"', 'set it to "baseline"'],
    ),
    "no enforce label": (
        "team-namespace-isolation",
        lambda r: delete_at(namespace(r), ["metadata", "labels", ENFORCE]),
        [f'metadata.labels["{ENFORCE}"] not set', "unset means privileged"],
    ),
    "GPU default limit": (
        "team-namespace-isolation",
        lambda r: set_at(limits(r), ["default"], {"nvidia.com/gpu": "1"}),
        [
            'LimitRange inference-defaults: spec.limits[0].default[nvidia.com/gpu] is "1"',
            "CPU-only ones included",
            "remove nvidia.com/gpu from default",
        ],
    ),
    "GPU default request": (
        "team-namespace-isolation",
        lambda r: set_at(limits(r), ["defaultRequest", "nvidia.com/gpumem"], "1000"),
        ["spec.limits[0].defaultRequest[nvidia.com/gpumem]"],
    ),
    "GPU max becomes the default": (
        "team-namespace-isolation",
        lambda r: set_at(limits(r), ["max"], {"nvidia.com/gpucores": "100"}),
        ["spec.limits[0].max[nvidia.com/gpucores]"],
    ),
    "GPU min": (
        "team-namespace-isolation",
        lambda r: set_at(limits(r), ["min"], {"nvidia.com/gpu.shared": "1"}),
        ["spec.limits[0].min[nvidia.com/gpu.shared]"],
    ),
    "no isolation policy": (
        "team-namespace-isolation",
        lambda r: drop(r, "ValidatingAdmissionPolicyBinding", ISOLATION),
        ["Namespace inference: no ValidatingAdmissionPolicy bound with Deny", "caps spec.priority", ISOLATION],
    ),
    "isolation binding only audits": (
        "team-namespace-isolation",
        lambda r: set_at(
            find(r, "ValidatingAdmissionPolicyBinding", ISOLATION), ["spec", "validationActions"], ["Audit"]
        ),
        [
            f"ValidatingAdmissionPolicyBinding {ISOLATION}: spec.validationActions is ['Audit']",
            "refuses nothing",
            'set it to ["Deny"]',
        ],
    ),
    "priority cap above the tier": (
        "team-namespace-isolation",
        lambda r: set_at(isolation(r, 0), ["expression"], "object.spec.priority <= 2000000000"),
        [f"ValidatingAdmissionPolicy {ISOLATION}: it lets pods of team inference run at priority up to 2000000000"],
    ),
    "pool cap names another team's pool": (
        "team-namespace-isolation",
        widen_pools,
        [f"ValidatingAdmissionPolicy {ISOLATION}: it lets pods of team inference select pools g5-shared"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_one_broken_field_is_caught(plans, case):
    caught(plans["dev"], case, CASES[case])
