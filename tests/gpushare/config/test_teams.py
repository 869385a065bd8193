"""gpushare/config/teams.py: bad gpushare:teams values, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from gpushare import names
from tests.gpushare.mutations import assert_one_line_names_the_key, both, set_key

BAD_TEAMS = [
    (
        "negative quota",
        set_key("gpushare:teams.0.quota.gpus", -1),
        "gpushare:teams[0].quota.gpus: -1 is too small; allowed: at least 0",
    ),
    (
        "reserved namespace",
        set_key("gpushare:teams.0.name", "kube-system"),
        "gpushare:teams[0].name: 'kube-system' is a namespace Kubernetes or the stack's own controllers use",
    ),
    (
        "bad role arn",
        set_key("gpushare:teams.0.namespaceAccessRoleArn", "ml-devs"),
        "gpushare:teams[0].namespaceAccessRoleArn: 'ml-devs' is not an IAM role ARN like arn:aws:iam::",
    ),
    (
        "team lists a pool twice",
        set_key("gpushare:teams.1.pools", ["g4dn-shared", "g4dn-shared"]),
        "gpushare:teams[1].pools[1]: 'g4dn-shared' is listed twice (first at [0])",
    ),
    *(
        (
            f"team named like the {namespace} namespace",
            set_key("gpushare:teams.1.name", namespace),
            f"gpushare:teams[1].name: {namespace!r} is a namespace Kubernetes or the stack's own controllers use",
        )
        for namespace in names.STACK_NAMESPACES
    ),
    (
        "budget schedule the pattern admits but Karpenter cannot parse",
        set_key("gpushare:pools.1.disruption.budgets.0.schedule", "0 15 * * mon-fry"),
        "gpushare:pools[1].disruption.budgets[0].schedule: '0 15 * * mon-fry': Karpenter's cron parser refuses it: "
        "'fry' is not a number or sun, mon, tue, wed, thu, fri, sat",
    ),
    (
        "budget schedule with 7 for Sunday",
        set_key("gpushare:pools.1.disruption.budgets.0.schedule", "0 15 * * 7"),
        "gpushare:pools[1].disruption.budgets[0].schedule: '0 15 * * 7': Karpenter's cron parser refuses it: day of "
        "week '7' ends above 6 (Sunday is 0 or sun)",
    ),
    (
        "budget schedule that never opens",
        set_key("gpushare:pools.1.disruption.budgets.0.schedule", "0 0 31 4 *"),
        "gpushare:pools[1].disruption.budgets[0].schedule: '0 0 31 4 *': it matches no time",
    ),
    (
        "public-only endpoint that shuts out the NAT addresses",
        both(
            set_key("gpushare:cluster.endpoint.privateAccess", False),
            set_key("gpushare:cluster.endpoint.publicAccessCidrs", ["203.0.113.0/24"]),
        ),
        "gpushare:cluster.endpoint.publicAccessCidrs: ['203.0.113.0/24'] with privateAccess false shuts out the nodes",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_TEAMS], ids=[c[0] for c in BAD_TEAMS])
def test_bad_teams_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)
