"""gpushare/checks/versions.py: features the versions held lack, each refused on one line naming the key."""

from __future__ import annotations

import pytest

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
