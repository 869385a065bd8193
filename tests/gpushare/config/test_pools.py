"""gpushare/config/pools.py: bad gpushare:pools values, each refused on one line naming the key."""

from __future__ import annotations

from typing import get_args

import pytest

from gpushare import karpenter_api
from gpushare.config import ConsolidationPolicy
from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack
from tests.gpushare.mutations import assert_one_line_names_the_key, both, set_key

BAD_POOLS = [
    (
        "malformed number",
        set_key("gpushare:pools.0.maxGpus", "eight"),
        "gpushare:pools[0].maxGpus: takes a whole number, e.g. 4 (got 'eight')",
    ),
    (
        "bad capacity type",
        set_key("gpushare:pools.0.capacityTypes", ["reserved"]),
        "gpushare:pools[0].capacityTypes[0]: 'reserved' is not one of the choices; allowed: on-demand, spot",
    ),
    (
        "bad sharing mode",
        set_key("gpushare:pools.0.sharing", "mig"),
        "gpushare:pools[0].sharing: 'mig' is not one of the choices; allowed: hami, exclusive, timeslice",
    ),
    (
        "timeslice without replicas",
        set_key("gpushare:pools.0.sharing", "timeslice"),
        "gpushare:pools[0].replicas: is required with sharing timeslice (pods per GPU, 2 to 64)",
    ),
    (
        "replicas on a HAMi pool",
        set_key("gpushare:pools.0.replicas", 4),
        "gpushare:pools[0].replicas: 4: only for sharing timeslice, not hami",
    ),
    (
        "one replica per GPU",
        set_key("gpushare:pools.2.replicas", 1),
        "gpushare:pools[2].replicas: 1 is too small; allowed: at least 2",
    ),
    (
        "bad pool name",
        set_key("gpushare:pools.0.name", "G5_Shared"),
        "gpushare:pools[0].name: 'G5_Shared' is not a name of 1 to 32 lower-case letters, digits and '-'",
    ),
    ("unknown field", set_key("gpushare:pools.0.maxGPUs", 3), "gpushare:pools[0].maxGPUs: unknown key"),
    (
        "bad duration",
        set_key("gpushare:pools.0.disruption", {"consolidateAfter": "ten minutes"}),
        "gpushare:pools[0].disruption.consolidateAfter: 'ten minutes' is not a duration in hours, minutes and ",
    ),
    (
        "repeated instance type",
        set_key("gpushare:pools.0.instanceTypes", ["g5.xlarge", "g5.xlarge"]),
        "gpushare:pools[0].instanceTypes[1]: 'g5.xlarge' is listed twice (first at [0])",
    ),
    (
        "a consolidation policy beside consolidateAfter Never",
        set_key("gpushare:pools.1.disruption.consolidateAfter", "Never"),
        "gpushare:pools[1].disruption.consolidationPolicy: 'WhenEmptyOrUnderutilized' has no effect: consolidateAfter "
        "Never turns consolidation off",
    ),
    (
        "termination grace period not a duration",
        set_key("gpushare:pools.0.disruption", {"terminationGracePeriod": "1 hour"}),
        "gpushare:pools[0].disruption.terminationGracePeriod:",
    ),
    (
        "admin principal that is also a team's role",
        both(
            set_key("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/ml"]),
            set_key("gpushare:teams.1.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/ml"),
        ),
        "gpushare:teams[1].namespaceAccessRoleArn: 'arn:aws:iam::123456789012:role/ml': already "
        "gpushare:cluster.adminPrincipalArns[0]; EKS gives a principal one access entry",
    ),
    (
        "two teams with one role (IAM names ignore case)",
        both(
            set_key("gpushare:teams.0.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/ML"),
            set_key("gpushare:teams.1.namespaceAccessRoleArn", "arn:aws:iam::123456789012:role/ml"),
        ),
        "gpushare:teams[1].namespaceAccessRoleArn: 'arn:aws:iam::123456789012:role/ml': already "
        "gpushare:teams[0].namespaceAccessRoleArn",
    ),
    (
        "admin that is the Karpenter node role the stack creates",
        set_key("gpushare:cluster.adminPrincipalArns", ["arn:aws:iam::123456789012:role/gpushare-dev-karpenter-node"]),
        "gpushare:cluster.adminPrincipalArns[0]: 'arn:aws:iam::123456789012:role/gpushare-dev-karpenter-node': the "
        "stack creates role gpushare-dev-karpenter-node and gives it a node access entry",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_POOLS], ids=[c[0] for c in BAD_POOLS])
def test_bad_pools_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)


@pytest.mark.parametrize(
    "budget",
    [
        {"nodes": "100%", "schedule": "@daily", "duration": "1h30m"},
        {"nodes": 0, "schedule": "*/30 9-17 1,15 JAN-jun mon-fri", "duration": "30m0s"},
        {"nodes": "0", "schedule": "0  15 * * sun,sat", "duration": "9h"},
        {"nodes": "5", "schedule": "0 0 31 2 mon", "duration": "1h"},
    ],
)
def test_budgets_karpenter_accepts_are_accepted(budget):
    raw = raw_stack("dev")
    raw["gpushare:pools"][1]["disruption"]["budgets"] = [budget]
    assert (
        load_stack_config(raw, today=PLAN_DATE).pool("g4dn-shared").disruption.budgets[0].schedule == budget["schedule"]
    )


def test_config_takes_the_consolidation_policies_karpenter_takes():
    assert get_args(ConsolidationPolicy) == karpenter_api.CONSOLIDATION_POLICIES
