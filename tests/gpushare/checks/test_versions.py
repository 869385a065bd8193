"""gpushare/checks/versions.py: features the versions held lack, each refused on one line naming the key."""

from __future__ import annotations

import pytest

from gpushare.loader import load_stack_config
from tests.conftest import PLAN_DATE, raw_stack
from tests.gpushare.mutations import assert_one_line_names_the_key, both, set_key

BAD_VERSIONS = [
    (
        "Balanced on a Karpenter held back before it",
        both(
            set_key("gpushare:karpenter.chartVersion", "1.13.0"),
            set_key("gpushare:pools.0.disruption", {"consolidationPolicy": "Balanced"}),
        ),
        "gpushare:pools[0].disruption.consolidationPolicy: consolidationPolicy Balanced needs Karpenter 1.14.0 or "
        "newer, but gpushare:karpenter.chartVersion is 1.13.0",
    ),
    (
        "time-slicing on an NVIDIA plugin held back before it",
        set_key("gpushare:nvidiaDevicePlugin", {"chartVersion": "0.11.0"}),
        "gpushare:pools[2].sharing: time-slicing (config sharing.timeSlicing with renameByDefault and "
        "failRequestsGreaterThanOne, chart config.map) needs NVIDIA device plugin chart 0.12.0 or newer, but "
        "gpushare:nvidiaDevicePlugin.chartVersion is 0.11.0",
    ),
    (
        "a Karpenter older than the cluster's Kubernetes minor needs",
        set_key("gpushare:karpenter.chartVersion", "1.12.1"),
        "gpushare:karpenter.chartVersion: 1.12.1 does not run with Kubernetes 1.36 "
        "(gpushare:cluster.kubernetesVersion): Karpenter's compatibility matrix needs 1.13.0 or newer there",
    ),
]


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in BAD_VERSIONS], ids=[c[0] for c in BAD_VERSIONS])
def test_bad_versions_names_the_key(mutate, expected):
    assert_one_line_names_the_key(mutate, expected)


@pytest.mark.parametrize(
    ("key", "value", "pool_change"),
    [
        ("gpushare:karpenter.chartVersion", "1.14.0", {"consolidationPolicy": "Balanced"}),
        ("gpushare:karpenter.chartVersion", "1.13.0", {"consolidationPolicy": "WhenEmptyOrUnderutilized"}),
        ("gpushare:nvidiaDevicePlugin", {"chartVersion": "0.12.0"}, None),
    ],
    ids=["Balanced from 1.14", "the older policies on 1.13", "time-slicing from plugin 0.12"],
)
def test_features_within_the_version_held_are_accepted(key, value, pool_change):
    raw = raw_stack("dev")
    set_key(key, value)(raw)
    if pool_change is not None:
        raw["gpushare:pools"][0]["disruption"] = pool_change
    load_stack_config(raw, today=PLAN_DATE)
